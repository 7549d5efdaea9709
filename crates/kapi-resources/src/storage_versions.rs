//! What a read from storage does to a built-in object beyond decoding it
//! ([`on_read`]), as kube-apiserver 1.33's decoder: an object stored at a
//! version older than its kind's storage version today — one 1.33 still
//! decodes because its scheme keeps the old version's types — is brought to
//! the version 1.33 stores, as upstream's conversion through the internal
//! version does; then the kind's defaults apply (its strategy's, those of
//! today's storage version), so fields added since it was written read as
//! 1.33 reads them (a 1.28 Job gains `podReplacementPolicy`).
//!
//! Most older versions have today's shape and only change `apiVersion`
//! (flowcontrol's `v1beta3`, which kube-apiserver 1.28 writes, among them);
//! a few move fields: EndpointSlice `v1beta1` (`topology` → `nodeName`, `zone`,
//! `deprecatedTopology`; 1.28 writes it), PriorityLevelConfiguration before
//! `v1beta3` (`assuredConcurrencyShares`) and `v1beta3`'s zero-shares
//! annotation, PodDisruptionBudget `v1beta1` (an empty selector matches
//! nothing there).
//!
//! Invariant: an upgrade never fails — unknown fields ride along, as the
//! JSON model carries them; the result names today's storage version.
//!
//! Where to look next: `kapi_registry::codec` applies these on every read;
//! `storage_versions_tests.rs` pins today's storage version of every resource.

use std::sync::Arc;

use kapi_registry::codec::OnRead;
use kapi_registry::Strategy;
use serde_json::{json, Map, Value};

use crate::registry::builtin_resources;

/// The read hooks of every built-in kind, for the server's storage codec.
pub fn on_read() -> Arc<dyn OnRead> {
    let mut defaults: foldhash::HashMap<String, Versions> = Default::default();
    for def in builtin_resources() {
        let stored = match &def.conversion {
            Some(c) => c.storage_api_version().to_owned(),
            None => def.api_version(),
        };
        // The strategy of the resource served at the storage version holds
        // that version's defaults.
        if stored == def.api_version() {
            let versions = defaults.entry(def.kind.clone()).or_default();
            versions.retain(|(av, _)| *av != stored);
            versions.push((stored, def.strategy.clone()));
        }
    }
    Arc::new(BuiltinReads { defaults })
}

/// `(group, older versions, kinds)`, each stored today at `v1`.
const OLDER: &[(&str, &[&str], &[&str])] = &[
    (
        "flowcontrol.apiserver.k8s.io",
        &["v1beta1", "v1beta2", "v1beta3"],
        &["FlowSchema", "PriorityLevelConfiguration"],
    ),
    ("discovery.k8s.io", &["v1beta1"], &["EndpointSlice"]),
    (
        "rbac.authorization.k8s.io",
        &["v1beta1"],
        &["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"],
    ),
    ("scheduling.k8s.io", &["v1beta1"], &["PriorityClass"]),
    ("coordination.k8s.io", &["v1beta1"], &["Lease"]),
    (
        "storage.k8s.io",
        &["v1beta1"],
        &[
            "StorageClass",
            "VolumeAttachment",
            "CSIDriver",
            "CSINode",
            "CSIStorageCapacity",
        ],
    ),
    ("networking.k8s.io", &["v1beta1"], &["IngressClass"]),
    ("node.k8s.io", &["v1beta1"], &["RuntimeClass"]),
    ("policy", &["v1beta1"], &["PodDisruptionBudget"]),
    ("batch", &["v1beta1"], &["CronJob"]),
    (
        "admissionregistration.k8s.io",
        &["v1beta1"],
        &[
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
    ),
    (
        "certificates.k8s.io",
        &["v1beta1"],
        &["CertificateSigningRequest"],
    ),
];

struct BuiltinReads {
    /// Storage kind → `(apiVersion, the strategy that defaults it)`, looked
    /// up by borrowed names (a read allocates nothing to find its strategy).
    defaults: foldhash::HashMap<String, Versions>,
}

/// A kind's storage versions, each with its strategy.
type Versions = Vec<(String, Arc<dyn Strategy>)>;

impl BuiltinReads {
    fn strategy(&self, api_version: &str, kind: &str) -> Option<&Arc<dyn Strategy>> {
        self.defaults
            .get(kind)?
            .iter()
            .find(|(av, _)| av == api_version)
            .map(|(_, s)| s)
    }
}

impl OnRead for BuiltinReads {
    fn is_older(&self, api_version: &str, kind: &str) -> bool {
        let Some((group, version)) = api_version.split_once('/') else {
            return false;
        };
        OLDER
            .iter()
            .any(|(g, vs, ks)| *g == group && vs.contains(&version) && ks.contains(&kind))
    }

    fn upgrade(&self, mut obj: Value) -> Value {
        let av = obj["apiVersion"].as_str().unwrap_or("").to_owned();
        let (group, version) = av.split_once('/').unwrap_or(("", ""));
        let kind = obj["kind"].as_str().unwrap_or("").to_owned();
        match (group, kind.as_str()) {
            ("discovery.k8s.io", "EndpointSlice") => endpoint_slice(&mut obj),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
                priority_level(&mut obj, version)
            }
            ("policy", "PodDisruptionBudget") => pdb_selector(&mut obj),
            _ => {}
        }
        obj["apiVersion"] = Value::String(format!("{group}/v1"));
        obj
    }

    fn default(&self, obj: &mut Value) {
        let field = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or("");
        if let Some(strategy) = self.strategy(field("apiVersion"), field("kind")) {
            strategy.default(obj);
        }
    }

    fn reads_as_stored(&self, api_version: &str, kind: &str) -> bool {
        !self.is_older(api_version, kind)
            && self
                .strategy(api_version, kind)
                .is_none_or(|s| !s.has_defaults())
    }
}

const ZONE: &str = "topology.kubernetes.io/zone";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// `v1beta1` endpoints keep zone and node in `topology`; `v1` has fields for
/// them and keeps the rest as `deprecatedTopology`.
fn endpoint_slice(obj: &mut Value) {
    let Some(endpoints) = obj.get_mut("endpoints").and_then(Value::as_array_mut) else {
        return;
    };
    for ep in endpoints.iter_mut().filter_map(Value::as_object_mut) {
        let Some(Value::Object(mut topology)) = ep.shift_remove("topology") else {
            continue;
        };
        if let Some(zone) = topology.shift_remove(ZONE) {
            ep.insert("zone".into(), zone);
        }
        if let Some(host) = topology.get(HOSTNAME).cloned() {
            match ep.get("nodeName") {
                None => {
                    ep.insert("nodeName".into(), host);
                    topology.shift_remove(HOSTNAME);
                }
                Some(node) if *node == host => {
                    topology.shift_remove(HOSTNAME);
                }
                Some(_) => {}
            }
        }
        if !topology.is_empty() {
            ep.insert("deprecatedTopology".into(), Value::Object(topology));
        }
        // In the order of v1's type, as upstream writes it.
        const ORDER: [&str; 8] = [
            "addresses",
            "conditions",
            "hostname",
            "targetRef",
            "deprecatedTopology",
            "nodeName",
            "zone",
            "hints",
        ];
        let at = |k: &str| ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len());
        let mut fields: Vec<(String, Value)> = std::mem::take(ep).into_iter().collect();
        fields.sort_by_key(|(k, _)| at(k));
        ep.extend(fields);
    }
}

/// Before `v1beta3` the shares were `assuredConcurrencyShares`; in `v1beta3` a
/// zero means "the default, 30" unless the round-trip annotation says it is a
/// real zero (the annotation itself is `v1beta3`'s alone and is dropped).
fn priority_level(obj: &mut Value, version: &str) {
    const PRESERVE_ZERO: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
    let preserve_zero = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
        .and_then(|a| a.shift_remove(PRESERVE_ZERO))
        .is_some();
    if obj.pointer("/metadata/annotations") == Some(&json!({})) {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.shift_remove("annotations");
        }
    }
    let Some(limited) = obj
        .pointer_mut("/spec/limited")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if version != "v1beta3" {
        if let Some(shares) = limited.shift_remove("assuredConcurrencyShares") {
            limited.insert("nominalConcurrencyShares".into(), shares);
        }
    }
    let shares = limited
        .get("nominalConcurrencyShares")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if shares == 0 && !(version == "v1beta3" && preserve_zero) {
        limited.insert("nominalConcurrencyShares".into(), json!(30));
    }
}

const PDB_V1BETA1_LABEL: &str = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match";

/// A `v1beta1` budget's empty selector matches no pod; `v1`'s matches every
/// pod, so it becomes a selector nothing carries; `v1beta1`'s spelled-out
/// match-all becomes `v1`'s empty one.
fn pdb_selector(obj: &mut Value) {
    let Some(selector) = obj.pointer_mut("/spec/selector") else {
        return;
    };
    let requirement = |op: &str| json!({"key": PDB_V1BETA1_LABEL, "operator": op});
    let empty = selector.as_object().is_some_and(|s| {
        s.values().all(|v| {
            v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
        })
    });
    if empty {
        *selector = json!({"matchExpressions": [requirement("Exists")]});
    } else if *selector == json!({"matchExpressions": [requirement("DoesNotExist")]}) {
        *selector = json!({});
    } else if let Some(exprs) = selector
        .get_mut("matchExpressions")
        .and_then(Value::as_array_mut)
    {
        exprs.retain(|e| e["key"] != PDB_V1BETA1_LABEL);
    }
}

#[cfg(test)]
#[path = "storage_versions_tests.rs"]
mod tests;
