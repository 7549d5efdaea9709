//! `--emulated-version` and its two companions, as upstream's component
//! registry and `ServerRunOptions` read and check them: the `kube` component
//! may emulate 1.31 up to 1.33 (upstream's floor: the binary's minor minus
//! three, never below 1.31, the first release with emulation); the minimum
//! compatibility version follows as the emulated minor minus one, floored the
//! same way. `--emulation-forward-compatible` and
//! `--runtime-config-emulation-forward-compatible` need an emulated version
//! below the binary's.
//!
//! What an emulated version changes in kapi: `/version`'s `emulationMinor` and
//! `minCompatibilityMinor`, and the feature gates, evaluated at the emulated
//! version ([`super::gates`]: their defaults then, and gates newer than it
//! cannot be set). The API kapi serves is the same from 1.31 to
//! 1.33 (every group-version it serves was introduced by 1.31), so no group
//! is removed from discovery; `--runtime-config` keys for group-versions kapi
//! does not serve are skipped as always.

use std::collections::BTreeMap;

/// The binary's minor version (kube 1.33).
pub const BINARY_MINOR: u32 = 33;
/// The oldest minor `--emulated-version` may name.
pub const FLOOR_MINOR: u32 = 31;

/// The effective version of the `kube` component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emulation {
    /// The emulated minor (1.x).
    pub minor: u32,
    /// `--emulation-forward-compatible`.
    pub forward_compatible: bool,
    /// `--runtime-config-emulation-forward-compatible`.
    pub runtime_config_forward_compatible: bool,
}

impl Default for Emulation {
    fn default() -> Self {
        Emulation {
            minor: BINARY_MINOR,
            forward_compatible: false,
            runtime_config_forward_compatible: false,
        }
    }
}

impl Emulation {
    /// The minimum compatibility minor: the emulated one minus one, floored.
    pub fn min_compatibility_minor(&self) -> u32 {
        self.minor.saturating_sub(1).max(FLOOR_MINOR)
    }

    /// Read the three flags' values and check them as upstream does.
    pub fn parse(
        values: &[String],
        forward_compatible: bool,
        runtime_config_forward_compatible: bool,
    ) -> Result<Emulation, String> {
        let versions = version_map(values)?;
        if let Some(component) = versions.keys().find(|c| c.as_str() != "kube") {
            return Err(format!("component not registered: {component}"));
        }
        let minor = match versions.get("kube") {
            Some(&(major, minor)) => {
                if major != 1 || !(FLOOR_MINOR..=BINARY_MINOR).contains(&minor) {
                    return Err(format!(
                        "emulation version {major}.{minor} is not between [1.{FLOOR_MINOR}, 1.{BINARY_MINOR}.0]"
                    ));
                }
                minor
            }
            None => BINARY_MINOR,
        };
        let mut errors = Vec::new();
        if minor == BINARY_MINOR && forward_compatible {
            errors.push("ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version");
        }
        if minor == BINARY_MINOR && runtime_config_forward_compatible {
            errors.push("ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version");
        }
        if !errors.is_empty() {
            return Err(errors.join("\n"));
        }
        Ok(Emulation {
            minor,
            forward_compatible,
            runtime_config_forward_compatible,
        })
    }
}

/// `[component=]major.minor` entries (component `kube` when not named), as
/// upstream's `toVersionMap`: a patch version or a component named twice is
/// refused.
fn version_map(values: &[String]) -> Result<BTreeMap<String, (u32, u32)>, String> {
    let mut out: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for entry in values {
        let (component, text) = match entry.split_once('=') {
            Some((c, v)) => (c.trim().to_owned(), v.trim()),
            None => ("kube".to_owned(), entry.as_str()),
        };
        let (major, minor, patch) = parse_version(text)?;
        if patch.is_some_and(|p| p != 0) {
            return Err(format!(
                "patch version not allowed, got: {component}={}",
                text.trim_start_matches('v')
            ));
        }
        if let Some((m, n)) = out.get(&component) {
            return Err(format!(
                "duplicate version flag, {component}={m}.{n} and {component}={major}.{minor}"
            ));
        }
        out.insert(component, (major, minor));
    }
    Ok(out)
}

/// A generic version `[v]major.minor[.patch]`, as apimachinery's `Parse`
/// reads one.
fn parse_version(text: &str) -> Result<(u32, u32, Option<u32>), String> {
    let invalid = || format!("could not parse {text:?} as version");
    let parts: Vec<&str> = text.trim_start_matches('v').split('.').collect();
    let number = |s: &str| -> Result<u32, String> {
        if s.is_empty()
            || !s.bytes().all(|b| b.is_ascii_digit())
            || (s.len() > 1 && s.starts_with('0'))
        {
            return Err(invalid());
        }
        s.parse().map_err(|_| invalid())
    };
    match parts.as_slice() {
        [major, minor] => Ok((number(major)?, number(minor)?, None)),
        [major, minor, patch] => Ok((number(major)?, number(minor)?, Some(number(patch)?))),
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Emulation, String> {
        Emulation::parse(
            &v.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            false,
            false,
        )
    }

    #[test]
    fn versions_as_upstream_reads_and_checks_them() {
        assert_eq!(parse(&[]).unwrap().minor, 33);
        assert_eq!(parse(&["1.32"]).unwrap().minor, 32);
        assert_eq!(parse(&["kube=1.31"]).unwrap().minor, 31);
        assert_eq!(parse(&["kube=1.31"]).unwrap().min_compatibility_minor(), 31);
        assert_eq!(parse(&["kube=1.33"]).unwrap().min_compatibility_minor(), 32);
        assert_eq!(
            parse(&["kube=1.30"]).unwrap_err(),
            "emulation version 1.30 is not between [1.31, 1.33.0]"
        );
        assert_eq!(
            parse(&["1.34"]).unwrap_err(),
            "emulation version 1.34 is not between [1.31, 1.33.0]"
        );
        assert_eq!(
            parse(&["wardle=1.2"]).unwrap_err(),
            "component not registered: wardle"
        );
        assert_eq!(
            parse(&["kube=1.32.1"]).unwrap_err(),
            "patch version not allowed, got: kube=1.32.1"
        );
        assert_eq!(
            parse(&["kube=1.32", "1.31"]).unwrap_err(),
            "duplicate version flag, kube=1.32 and kube=1.31"
        );
        assert_eq!(
            parse(&["kube=one"]).unwrap_err(),
            "could not parse \"one\" as version"
        );
        assert_eq!(
            Emulation::parse(&[], true, false).unwrap_err(),
            "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"
        );
        assert!(Emulation::parse(&["1.32".into()], true, true).is_ok());
    }
}
