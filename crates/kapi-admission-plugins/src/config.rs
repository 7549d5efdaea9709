//! `--admission-control-config-file`: an `AdmissionConfiguration`
//! (`apiserver.config.k8s.io/v1`, or the older `v1alpha1` and
//! `apiserver.k8s.io/v1alpha1`) naming per-plugin configuration, either
//! inline (`configuration:`) or in a file of its own (`path:`, relative to
//! the configuration file), YAML or JSON.
//!
//! Invariant: what is read here is only decoded; as upstream, a `path:`
//! entry is read (and each plugin's own configuration checked by its parser,
//! `podsecurity/config.rs`, `quota_config.rs`) only for the plugins the chain
//! selects, so a bad entry of a selected plugin stops the start, naming it.
//! Configuration for a plugin kapi has no settings for is named in the log
//! and ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

const KINDS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
];

/// How kube-apiserver prefixes the errors of building the admission chain.
pub const INIT: &str = "failed to initialize admission: ";

/// Go's `os.Open` error text (`open <path>: no such file or directory`).
fn go_open_error(path: &Path, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => e.to_string(),
    };
    format!("open {}: {why}", path.display())
}

/// One plugin's entry: its configuration inline, or the file holding it.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Inline(Value),
    File(PathBuf),
}

/// Each plugin's configuration, by plugin name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginConfigs(BTreeMap<String, Entry>);

fn decode(text: &str, what: &str) -> Result<Value, String> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| format!("{what}: {e}"))
}

impl PluginConfigs {
    /// Read the file `path`.
    pub fn load(path: &Path) -> Result<PluginConfigs, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "{INIT}unable to read admission control configuration from {:?} [{}]",
                path.display().to_string(),
                go_open_error(path, &e)
            )
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        PluginConfigs::parse(&text, base)
    }

    /// Decode the file's text; `path:` entries are read relative to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<PluginConfigs, String> {
        let doc = decode(text, "admission configuration")?;
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "AdmissionConfiguration" || !KINDS.contains(&api_version) {
            return Err(format!(
                "unexpected kind {kind:?} of apiVersion {api_version:?} in the admission configuration (want AdmissionConfiguration of apiserver.config.k8s.io/v1)"
            ));
        }
        let mut out = BTreeMap::new();
        for p in doc
            .get("plugins")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = p
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or("admission configuration: a plugin entry without a name")?;
            let entry = match (
                p.get("configuration"),
                p.get("path").and_then(Value::as_str),
            ) {
                (Some(c), _) if !c.is_null() => Entry::Inline(c.clone()),
                (_, Some(path)) if !path.is_empty() => Entry::File(base.join(path)),
                _ => continue,
            };
            out.insert(name.to_owned(), entry);
        }
        Ok(PluginConfigs(out))
    }

    /// The configuration object of plugin `name` (its file read now), if
    /// it has one.
    pub fn get(&self, name: &str) -> Result<Option<Value>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(Entry::Inline(v)) => Ok(Some(v.clone())),
            Some(Entry::File(file)) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    format!(
                        "{INIT}couldn't open admission plugin configuration {}: {}",
                        file.display(),
                        go_open_error(file, &e)
                    )
                })?;
                decode(&text, &format!("admission plugin {name} configuration")).map(Some)
            }
        }
    }

    /// The names of the plugins configured.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_path_entries_are_read() {
        let dir = std::env::temp_dir().join(format!("kapi-admcfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("psa.yaml"),
            "kind: PodSecurityConfiguration\nx: 1\n",
        )
        .unwrap();
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n\
                    - name: PodSecurity\n  path: psa.yaml\n\
                    - name: ResourceQuota\n  configuration:\n    kind: ResourceQuotaConfiguration\n";
        let c = PluginConfigs::parse(text, &dir).unwrap();
        assert_eq!(c.get("PodSecurity").unwrap().unwrap()["x"], 1);
        assert_eq!(
            c.get("ResourceQuota").unwrap().unwrap()["kind"],
            "ResourceQuotaConfiguration"
        );
        assert_eq!(c.get("LimitRanger"), Ok(None));
        // A missing file is an error when (and only when) it is read.
        let gone =
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n\
                    - name: EventRateLimit\n  path: missing.yaml\n";
        let c = PluginConfigs::parse(gone, &dir).unwrap();
        let e = c.get("EventRateLimit").unwrap_err();
        let want = format!(
            "failed to initialize admission: couldn't open admission plugin configuration {0}: open {0}: no such file or directory",
            dir.join("missing.yaml").display()
        );
        assert_eq!(e, want);
        let bad = PluginConfigs::parse("kind: Foo\n", &dir).unwrap_err();
        assert!(bad.starts_with("unexpected kind"), "{bad}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
