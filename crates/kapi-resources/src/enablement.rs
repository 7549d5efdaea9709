//! Which built-in group-versions and resources are served (`--runtime-config`),
//! as upstream's `MergeAPIResourceConfigs`: first `api/all`, `api/ga`,
//! `api/beta`, `api/alpha` (exactly `true` or `false`), then
//! `<group>/<version>` keys, then `<group>/<version>/<resource>` keys, each
//! later kind winning over the earlier. `v1` and `api/v1` name the core
//! group's `v1`, as kube-apiserver rewrites them. A value may be empty
//! (meaning `true`) or anything Go's `ParseBool` takes.
//!
//! Invariants: by default every version kapi declares is served (kapi also
//! serves `authentication.k8s.io/v1beta1`, which upstream 1.33 leaves off, for
//! kubectl 1.27's `auth whoami`). Keys for groups kapi does not serve are
//! skipped (upstream skips groups it has not registered; [`RuntimeConfig::unknown`]
//! lists them for the log); a version kapi lacks of a group it serves is
//! skipped the same way rather than refused, since upstream may know it.

use std::collections::HashMap;

use kapi_registry::ResourceDef;

/// The parsed `--runtime-config`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// `api/*` switches in upstream's order: (matcher, on).
    classes: Vec<(Class, bool)>,
    /// `(group, version)` → on.
    versions: HashMap<(String, String), bool>,
    /// `(group, version, resource)` → on.
    resources: HashMap<(String, String, String), bool>,
    /// Keys naming group-versions kapi does not serve.
    pub unknown: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    All,
    Ga,
    Beta,
    Alpha,
}

impl Class {
    fn matches(self, version: &str) -> bool {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let Some(rest) = version.strip_prefix('v') else {
            return false;
        };
        let split = |word: &str| {
            rest.split_once(word)
                .is_some_and(|(major, minor)| digits(major) && digits(minor))
        };
        match self {
            Class::All => true,
            Class::Ga => digits(rest),
            Class::Beta => split("beta"),
            Class::Alpha => split("alpha"),
        }
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl RuntimeConfig {
    /// Read the flag's `key=value` pairs (in command-line order; a later pair
    /// for the same key wins) against the resources kapi declares.
    pub fn parse(pairs: &[(String, String)], defs: &[ResourceDef]) -> Result<Self, String> {
        let mut map: HashMap<String, String> = HashMap::new();
        for (k, v) in pairs {
            map.insert(core_alias(k.trim()), v.trim().to_owned());
        }
        let mut out = RuntimeConfig::default();
        for (key, class) in [
            ("api/all", Class::All),
            ("api/ga", Class::Ga),
            ("api/beta", Class::Beta),
            ("api/alpha", Class::Alpha),
        ] {
            match map.remove(key).as_deref() {
                None => {}
                Some("true") => out.classes.push((class, true)),
                Some("false") => out.classes.push((class, false)),
                Some(v) => return Err(format!("invalid value {key}={v}")),
            }
        }
        let mut keys: Vec<_> = map.into_iter().collect();
        keys.sort();
        for (key, value) in keys {
            out.add(&key, &value, defs)?;
        }
        Ok(out)
    }

    fn add(&mut self, key: &str, value: &str, defs: &[ResourceDef]) -> Result<(), String> {
        let tokens: Vec<&str> = key.split('/').collect();
        if !(2..=3).contains(&tokens.len()) {
            return Ok(());
        }
        let (group, version) = (tokens[0], tokens[1]);
        if version.is_empty() || tokens.iter().any(|t| t.contains(char::is_whitespace)) {
            return Err(format!("invalid key {key}"));
        }
        if !defs.iter().any(|d| d.group == group) {
            self.unknown.push(key.to_owned());
            return Ok(());
        }
        let on = match value {
            "" => true,
            v => parse_bool(v).ok_or_else(|| {
                format!("invalid value of {key}: {v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax")
            })?,
        };
        if !defs
            .iter()
            .any(|d| d.group == group && d.version == version)
        {
            self.unknown.push(key.to_owned());
            return Ok(());
        }
        let gv = (group.to_owned(), version.to_owned());
        match tokens.get(2) {
            None => {
                self.versions.insert(gv, on);
            }
            Some(resource) => {
                if resource.to_lowercase() != *resource {
                    return Err(format!(
                        "invalid key {key}: group/version/resource and resource is always lowercase plural, not {resource:?}"
                    ));
                }
                self.resources
                    .insert((gv.0, gv.1, (*resource).to_owned()), on);
            }
        }
        Ok(())
    }

    /// Whether `def` is served.
    pub fn enabled(&self, def: &ResourceDef) -> bool {
        let gvr = (def.group.clone(), def.version.clone(), def.resource.clone());
        if let Some(on) = self.resources.get(&gvr) {
            return *on;
        }
        if let Some(on) = self.versions.get(&(gvr.0, gvr.1)) {
            return *on;
        }
        self.classes
            .iter()
            .rev()
            .find(|(class, _)| class.matches(&def.version))
            .is_none_or(|(_, on)| *on)
    }
}

/// kube-apiserver's rewrite of the core group's names (`v1`, `api/v1`, with
/// or without a resource) to `/v1…`.
fn core_alias(key: &str) -> String {
    for alias in ["api/v1", "v1"] {
        if key == alias {
            return "/v1".into();
        }
        if let Some(resource) = key.strip_prefix(alias).and_then(|r| r.strip_prefix('/')) {
            return format!("/v1/{resource}");
        }
    }
    key.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn served(rc: &RuntimeConfig, group: &str, version: &str, resource: &str) -> bool {
        let defs = crate::registry::builtin_resources();
        let def = defs
            .iter()
            .find(|d| {
                (d.group.as_str(), d.version.as_str(), d.resource.as_str())
                    == (group, version, resource)
            })
            .unwrap();
        rc.enabled(def)
    }

    #[test]
    fn keys_apply_in_upstreams_order() {
        let defs = crate::registry::builtin_resources();
        let rc = RuntimeConfig::parse(
            &pairs(&[
                ("api/all", "false"),
                ("v1", "true"),
                ("apps/v1", ""),
                ("apps/v1/daemonsets", "false"),
            ]),
            &defs,
        )
        .unwrap();
        assert!(served(&rc, "", "v1", "pods"));
        assert!(served(&rc, "apps", "v1", "deployments"));
        assert!(!served(&rc, "apps", "v1", "daemonsets"));
        assert!(!served(&rc, "batch", "v1", "jobs"));
        let rc = RuntimeConfig::parse(&pairs(&[("api/beta", "false")]), &defs).unwrap();
        assert!(!served(
            &rc,
            "authentication.k8s.io",
            "v1beta1",
            "selfsubjectreviews"
        ));
        assert!(served(
            &rc,
            "authentication.k8s.io",
            "v1",
            "selfsubjectreviews"
        ));
        let rc = RuntimeConfig::parse(&pairs(&[("nope.example.com/v1", "true")]), &defs).unwrap();
        assert_eq!(rc.unknown, ["nope.example.com/v1"]);
    }

    #[test]
    fn bad_values_are_refused_as_upstream() {
        let defs = crate::registry::builtin_resources();
        let err = RuntimeConfig::parse(&pairs(&[("api/all", "yes")]), &defs).unwrap_err();
        assert_eq!(err, "invalid value api/all=yes");
        let err = RuntimeConfig::parse(&pairs(&[("apps/v1", "maybe")]), &defs).unwrap_err();
        assert!(err.starts_with("invalid value of apps/v1: maybe"), "{err}");
        let err =
            RuntimeConfig::parse(&pairs(&[("apps/v1/Deployments", "false")]), &defs).unwrap_err();
        assert!(err.contains("always lowercase plural"), "{err}");
    }
}
