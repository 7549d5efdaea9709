//! PodSecurity's configuration (`PodSecurityConfiguration` of
//! `pod-security.admission.config.k8s.io` v1, v1beta1 or v1alpha1, from the
//! admission configuration file): the level and version of each mode
//! (`enforce`, `audit`, `warn`) for namespaces without the labels, and the
//! exemptions — requesting user names, runtime class names, namespaces.
//!
//! Invariant: checked as upstream's validation checks it (levels, versions,
//! no empty or duplicate exemptions); without a configuration every mode is
//! `privileged:latest` and nothing is exempt.

use serde_json::Value;

use super::{valid_version, LEVELS};

const API_VERSIONS: &[&str] = &[
    "pod-security.admission.config.k8s.io/v1",
    "pod-security.admission.config.k8s.io/v1beta1",
    "pod-security.admission.config.k8s.io/v1alpha1",
];

/// The checked configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSecurityConfig {
    /// `(level, version)` of `enforce`, `audit`, `warn`, in that order.
    pub defaults: [(String, String); 3],
    pub exempt_usernames: Vec<String>,
    pub exempt_runtime_classes: Vec<String>,
    pub exempt_namespaces: Vec<String>,
}

impl Default for PodSecurityConfig {
    fn default() -> Self {
        let p = || ("privileged".to_owned(), "latest".to_owned());
        PodSecurityConfig {
            defaults: [p(), p(), p()],
            exempt_usernames: Vec::new(),
            exempt_runtime_classes: Vec::new(),
            exempt_namespaces: Vec::new(),
        }
    }
}

pub const MODES: [&str; 3] = ["enforce", "audit", "warn"];

impl PodSecurityConfig {
    /// The default `(level, version)` of `mode`.
    pub fn default_of(&self, mode: &str) -> &(String, String) {
        let i = MODES.iter().position(|m| *m == mode).unwrap_or(0);
        &self.defaults[i]
    }

    /// Decode and check `v`.
    pub fn parse(v: &Value) -> Result<PodSecurityConfig, String> {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "PodSecurityConfiguration" || !API_VERSIONS.contains(&api_version) {
            return Err(format!(
                "expected PodSecurityConfiguration of pod-security.admission.config.k8s.io/v1, got {kind:?} of {api_version:?}"
            ));
        }
        let mut out = PodSecurityConfig::default();
        let mut errs = Vec::new();
        let defaults = v.get("defaults");
        for (i, mode) in MODES.iter().enumerate() {
            let get = |k: &str| defaults.and_then(|d| d.get(k)).and_then(Value::as_str);
            if let Some(level) = get(mode) {
                if !LEVELS.contains(&level) {
                    errs.push(format!(
                        "defaults.{mode}: Unsupported value: {level:?}: supported values: \"privileged\", \"baseline\", \"restricted\""
                    ));
                }
                out.defaults[i].0 = level.to_owned();
            }
            let key = format!("{mode}-version");
            if let Some(version) = get(&key) {
                if !valid_version(version) {
                    errs.push(format!(
                        "defaults.{key}: Invalid value: {version:?}: must be \"latest\" or \"v1.x\""
                    ));
                }
                out.defaults[i].1 = version.to_owned();
            }
        }
        let exemptions = v.get("exemptions");
        for (field, list) in [
            ("usernames", &mut out.exempt_usernames),
            ("runtimeClasses", &mut out.exempt_runtime_classes),
            ("namespaces", &mut out.exempt_namespaces),
        ] {
            let items = exemptions
                .and_then(|e| e.get(field))
                .and_then(Value::as_array);
            for (j, item) in items.into_iter().flatten().enumerate() {
                let s = item.as_str().unwrap_or("");
                if s.is_empty() {
                    errs.push(format!(
                        "exemptions.{field}[{j}]: Invalid value: \"\": must be non-empty"
                    ));
                } else if list.iter().any(|x| x == s) {
                    errs.push(format!("exemptions.{field}[{j}]: Duplicate value: {s:?}"));
                } else {
                    list.push(s.to_owned());
                }
            }
        }
        if errs.is_empty() {
            Ok(out)
        } else {
            Err(errs.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_are_checked() {
        let c = PodSecurityConfig::parse(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "baseline", "enforce-version": "v1.30", "warn": "restricted"},
            "exemptions": {"namespaces": ["kube-system"], "usernames": ["ci"]}
        }))
        .unwrap();
        assert_eq!(
            c.default_of("enforce"),
            &("baseline".into(), "v1.30".into())
        );
        assert_eq!(
            c.default_of("audit"),
            &("privileged".into(), "latest".into())
        );
        assert_eq!(c.exempt_namespaces, ["kube-system"]);
        let e = PodSecurityConfig::parse(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "strict"},
            "exemptions": {"namespaces": ["a", "a"]}
        }))
        .unwrap_err();
        assert!(
            e.contains("defaults.enforce: Unsupported value: \"strict\""),
            "{e}"
        );
        assert!(e.contains("Duplicate value: \"a\""), "{e}");
    }
}
