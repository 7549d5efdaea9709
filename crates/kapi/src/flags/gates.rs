//! `--feature-gates`: kube-apiserver 1.33's feature gates with their history
//! (`gates_versioned.tsv`: one row per upstream versioned spec up to 1.33,
//! `name, version, default, stage, locked`), evaluated at the emulated
//! version (`--emulated-version`, default 1.33) as upstream's versioned
//! feature gate does: a gate's state is its last spec not newer than that
//! version; a gate with none yet is `PreAlpha` (off, and cannot be set).
//!
//! Invariants: an unknown name stops the start (`unrecognized feature gate:
//! X`), so does setting a gate locked to its default to the other value, or a
//! `PreAlpha` one; setting a GA or deprecated gate is accepted with upstream's
//! warning. `AllAlpha`/`AllBeta` set every alpha/beta gate (at the emulated
//! version) not set by name. The gates kapi acts on are [`HONOURED`]; the
//! others are accepted and change nothing in kapi (named in the log when set).

use std::collections::BTreeMap;

use super::emulation::BINARY_MINOR;
use super::value::parse_bool;

/// The gates whose value changes what kapi does, and where.
pub const HONOURED: &[&str] = &[
    // The identity Lease in kube-system is kept while on (kapi-controllers).
    "APIServerIdentity",
    // Aggregated discovery v2beta1 is not served while on (kapi-server discovery).
    "AggregatedDiscoveryRemoveBetaType",
    // Consistent LISTs are served from the watch cache while on (kapi-registry).
    "ConsistentListFromCache",
    // `sendInitialEvents` watches are refused while off (kapi-server watch).
    "WatchList",
    // The `poststarthook/storage-readiness` check (kapi assemble), bounded by
    // `--storage-initialization-timeout`.
    "WatchCacheInitializationPostStartHook",
    // `--service-account-signing-endpoint` is accepted only while on (kapi serve).
    "ExternalServiceAccountTokenSigner",
    // `--tracing-config-file` is refused while off, as upstream's
    // `TracingOptions.ApplyTo` (kapi serve, `otel::read`).
    "APIServerTracing",
];

/// One gate at one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    pub default: bool,
    /// `Alpha`, `Beta`, `GA`, `Deprecated`, or `PreAlpha` before its first spec.
    pub stage: &'static str,
    pub locked: bool,
}

/// One upstream versioned spec.
struct Spec {
    name: &'static str,
    /// `(major, minor)`.
    version: (u32, u32),
    default: bool,
    stage: &'static str,
    locked: bool,
}

fn specs() -> &'static [Spec] {
    static SPECS: std::sync::OnceLock<Vec<Spec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(|| {
        include_str!("gates_versioned.tsv")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let c: Vec<&'static str> = l.split('\t').collect();
                let (major, minor) = c[1].split_once('.').expect("major.minor");
                Spec {
                    name: c[0],
                    version: (major.parse().expect("major"), minor.parse().expect("minor")),
                    default: c[2] == "true",
                    stage: c[3],
                    locked: c.get(4) == Some(&"locked"),
                }
            })
            .collect()
    })
}

/// Every gate's state at 1.`minor`.
pub fn gates_at(minor: u32) -> Vec<Gate> {
    let mut out: Vec<Gate> = Vec::new();
    for spec in specs() {
        let applies = spec.version <= (1, minor);
        match out.last_mut() {
            Some(g) if g.name == spec.name => {
                if applies {
                    *g = gate_of(spec);
                }
            }
            _ => out.push(if applies {
                gate_of(spec)
            } else {
                Gate {
                    name: spec.name,
                    default: false,
                    stage: "PreAlpha",
                    locked: false,
                }
            }),
        }
    }
    out
}

fn gate_of(spec: &Spec) -> Gate {
    Gate {
        name: spec.name,
        default: spec.default,
        stage: spec.stage,
        locked: spec.locked,
    }
}

/// The gates at the binary's version (1.33).
#[cfg(test)]
fn gates() -> &'static [Gate] {
    static GATES: std::sync::OnceLock<Vec<Gate>> = std::sync::OnceLock::new();
    GATES.get_or_init(|| gates_at(BINARY_MINOR))
}

/// The gates' values after `--feature-gates`, at the emulated version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGates {
    set: BTreeMap<&'static str, bool>,
    /// Warnings upstream logs for what was set (GA or deprecated gates).
    pub warnings: Vec<String>,
    /// The emulated minor the gates are evaluated at.
    minor: u32,
    /// Every gate's state there.
    gates: Vec<Gate>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates::at(BINARY_MINOR)
    }
}

impl FeatureGates {
    /// Parse every `--feature-gates` value (`[kube:]Name=bool`, comma-separated).
    #[cfg(test)]
    pub fn parse(values: &[String]) -> Result<FeatureGates, String> {
        FeatureGates::parse_at(values, BINARY_MINOR)
    }

    /// The gates' defaults at 1.`minor`, none set.
    fn at(minor: u32) -> FeatureGates {
        FeatureGates {
            set: BTreeMap::new(),
            warnings: Vec::new(),
            minor,
            gates: gates_at(minor),
        }
    }

    /// [`FeatureGates::parse`] at the emulated version 1.`minor`.
    pub fn parse_at(values: &[String], minor: u32) -> Result<FeatureGates, String> {
        let mut out = FeatureGates::at(minor);
        let mut all: Vec<(&str, bool)> = Vec::new();
        for value in values {
            for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (key, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("missing bool value for {pair}"))?;
                let name = match key.trim().split_once(':') {
                    Some(("kube" | "", name)) => name,
                    Some((component, _)) => {
                        return Err(format!("component not registered: {component}"))
                    }
                    None => key.trim(),
                };
                let on = parse_bool(v.trim())
                    .map_err(|e| format!("invalid value of {name}={}, err: {e}", v.trim()))?;
                if let Some(special) = ["AllAlpha", "AllBeta"].iter().find(|s| **s == name) {
                    all.push((special, on));
                    continue;
                }
                out.set_one(name, on)?;
            }
        }
        for (special, on) in all {
            let stage = if special == "AllAlpha" {
                "Alpha"
            } else {
                "Beta"
            };
            for g in out.gates.iter().filter(|g| g.stage == stage && !g.locked) {
                out.set.entry(g.name).or_insert(on);
            }
        }
        Ok(out)
    }

    fn set_one(&mut self, name: &str, on: bool) -> Result<(), String> {
        let gate = *self
            .gates
            .iter()
            .find(|g| g.name == name)
            .ok_or_else(|| format!("unrecognized feature gate: {name}"))?;
        if gate.locked && gate.default != on {
            return Err(format!(
                "cannot set feature gate {name} to {on}, feature is locked to {}",
                gate.default
            ));
        }
        if gate.stage == "PreAlpha" {
            return Err(format!(
                "cannot set feature gate {name} to {on}, feature is PreAlpha at emulated version 1.{}",
                self.minor
            ));
        }
        match gate.stage {
            "GA" => self.warnings.push(format!(
                "Setting GA feature gate {name}={on}. It will be removed in a future release."
            )),
            "Deprecated" => self.warnings.push(format!(
                "Setting deprecated feature gate {name}={on}. It will be removed in a future release."
            )),
            _ => {}
        }
        self.set.insert(gate.name, on);
        Ok(())
    }

    /// Whether `name` is on (its default unless set).
    pub fn enabled(&self, name: &str) -> bool {
        match self.set.get(name) {
            Some(on) => *on,
            None => {
                self.gates
                    .iter()
                    .find(|g| g.name == name)
                    .unwrap_or_else(|| panic!("feature gate {name} is not in the table"))
                    .default
            }
        }
    }

    /// The gates set that kapi does not act on.
    pub fn without_effect(&self) -> Vec<&'static str> {
        self.set
            .keys()
            .filter(|n| !HONOURED.contains(n))
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Result<FeatureGates, String> {
        FeatureGates::parse(&[v.to_string()])
    }

    #[test]
    fn gates_parse_and_check_as_upstream() {
        assert_eq!(
            parse("Foo=true").unwrap_err(),
            "unrecognized feature gate: Foo"
        );
        assert_eq!(
            parse("CustomResourceFieldSelectors=false").unwrap_err(),
            "cannot set feature gate CustomResourceFieldSelectors to false, feature is locked to true"
        );
        let g = parse("kube:WatchList=true, ConsistentListFromCache=false").unwrap();
        assert!(g.enabled("WatchList"));
        assert!(!g.enabled("ConsistentListFromCache"));
        assert!(g.enabled("AggregatedDiscoveryRemoveBetaType"));
        let g = parse("AllBeta=false").unwrap();
        assert!(!g.enabled("ConsistentListFromCache"));
        assert!(parse("WatchList=maybe")
            .unwrap_err()
            .starts_with("invalid value of WatchList=maybe"));
        let g = parse("AggregatedDiscoveryRemoveBetaType=false").unwrap();
        assert_eq!(g.warnings.len(), 1);
        for gate in HONOURED {
            assert!(gates().iter().any(|g| g.name == *gate), "{gate}");
        }
        let mut names: Vec<&str> = gates().iter().map(|g| g.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "names are unique");
        // Upstream's gate strings, not the Go constants' names.
        assert!(parse("CustomCPUCFSQuotaPeriod=true").is_ok());
        assert!(parse("RuntimeClassInImageCriApi=true").is_ok());
        assert!(parse("ElasticIndexedJob=true").is_ok());
    }

    #[test]
    fn gates_at_an_emulated_version() {
        let at = |v: &str, minor: u32| FeatureGates::parse_at(&[v.to_string()], minor);
        // WatchList: beta and on in 1.32, off again in 1.33.
        assert!(!at("", 33).unwrap().enabled("WatchList"));
        assert!(at("", 32).unwrap().enabled("WatchList"));
        // ExternalServiceAccountTokenSigner arrived as alpha in 1.32.
        assert!(at("ExternalServiceAccountTokenSigner=true", 32).is_ok());
        assert_eq!(
            at("ExternalServiceAccountTokenSigner=true", 31).unwrap_err(),
            "cannot set feature gate ExternalServiceAccountTokenSigner to true, feature is PreAlpha at emulated version 1.31"
        );
        assert!(!at("", 31)
            .unwrap()
            .enabled("ExternalServiceAccountTokenSigner"));
        // Every gate has a state at every emulated version; the binary's
        // states are the 1.33 ones.
        for minor in 31..=33 {
            assert_eq!(gates_at(minor).len(), gates().len());
        }
        assert_eq!(gates_at(33), gates());
        // The specs are in order: one run per gate, versions rising.
        let specs = specs();
        for w in specs.windows(2) {
            if w[0].name == w[1].name {
                assert!(w[0].version < w[1].version, "{}", w[0].name);
            }
        }
        // AllBeta reaches the betas of the emulated version.
        let g = at("AllBeta=false", 32).unwrap();
        assert!(!g.enabled("WatchList"));
    }
}
