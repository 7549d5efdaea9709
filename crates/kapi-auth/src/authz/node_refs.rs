//! What a pod or a PersistentVolume refers to, as the edges of upstream's
//! node authorizer graph (`plugin/pkg/auth/authorizer/node/graph.go`) are
//! drawn: a pod's secrets (upstream `VisitPodSecretNames`: image pull secrets,
//! `env`/`envFrom` of every container kind, secret-bearing volume sources),
//! config maps (`VisitPodConfigmapNames`), claims (`persistentVolumeClaim`
//! volumes and the `<pod>-<volume>` claim of an `ephemeral` volume), resource
//! claims (named directly or generated, from `status.resourceClaimStatuses`)
//! and service account; a PersistentVolume's secrets (`VisitPVSecretNames`).
//!
//! Everything here reads JSON objects and has no I/O; `node.rs` asks.

use serde_json::Value;

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Every container of a pod: init, regular and ephemeral.
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    items(pod, "/spec/initContainers")
        .chain(items(pod, "/spec/containers"))
        .chain(items(pod, "/spec/ephemeralContainers"))
}

/// Volume sources whose `secretRef.name` names a secret of the pod's namespace.
const POD_SECRET_REF_SOURCES: [&str; 7] = [
    "cephfs",
    "cinder",
    "flexVolume",
    "rbd",
    "scaleIO",
    "iscsi",
    "storageos",
];

/// Does `pod` use the secret `name` (of its own namespace)?
pub fn pod_uses_secret(pod: &Value, name: &str) -> bool {
    let is = |s: Option<&str>| s == Some(name);
    if items(pod, "/spec/imagePullSecrets").any(|r| is(str_at(r, "/name"))) {
        return true;
    }
    for c in containers(pod) {
        if items(c, "/envFrom").any(|e| is(str_at(e, "/secretRef/name"))) {
            return true;
        }
        if items(c, "/env").any(|e| is(str_at(e, "/valueFrom/secretKeyRef/name"))) {
            return true;
        }
    }
    for v in items(pod, "/spec/volumes") {
        if is(str_at(v, "/secret/secretName"))
            || is(str_at(v, "/azureFile/secretName"))
            || is(str_at(v, "/csi/nodePublishSecretRef/name"))
            || items(v, "/projected/sources").any(|s| is(str_at(s, "/secret/name")))
        {
            return true;
        }
        if POD_SECRET_REF_SOURCES
            .iter()
            .any(|src| is(str_at(v, &format!("/{src}/secretRef/name"))))
        {
            return true;
        }
    }
    false
}

/// Does `pod` use the config map `name` (of its own namespace)?
pub fn pod_uses_config_map(pod: &Value, name: &str) -> bool {
    let is = |s: Option<&str>| s == Some(name);
    for c in containers(pod) {
        if items(c, "/envFrom").any(|e| is(str_at(e, "/configMapRef/name"))) {
            return true;
        }
        if items(c, "/env").any(|e| is(str_at(e, "/valueFrom/configMapKeyRef/name"))) {
            return true;
        }
    }
    items(pod, "/spec/volumes").any(|v| {
        is(str_at(v, "/configMap/name"))
            || items(v, "/projected/sources").any(|s| is(str_at(s, "/configMap/name")))
    })
}

/// The PersistentVolumeClaims of `pod` (its namespace).
pub fn pod_claims(pod: &Value) -> Vec<String> {
    let pod_name = str_at(pod, "/metadata/name").unwrap_or("");
    let mut out = Vec::new();
    for v in items(pod, "/spec/volumes") {
        if let Some(claim) = str_at(v, "/persistentVolumeClaim/claimName") {
            out.push(claim.to_owned());
        } else if v.get("ephemeral").is_some_and(Value::is_object) {
            if let Some(vol) = str_at(v, "/name") {
                out.push(format!("{pod_name}-{vol}"));
            }
        }
    }
    out
}

/// The ResourceClaims of `pod`: named in the spec, or generated from a
/// template and recorded in `status.resourceClaimStatuses` (upstream
/// `resourceclaim.Name`).
pub fn pod_uses_resource_claim(pod: &Value, name: &str) -> bool {
    let is = |s: Option<&str>| s == Some(name);
    items(pod, "/spec/resourceClaims").any(|c| is(str_at(c, "/resourceClaimName")))
        || items(pod, "/status/resourceClaimStatuses").any(|s| is(str_at(s, "/resourceClaimName")))
}

/// Does `pod` run as the service account `name`?
pub fn pod_uses_service_account(pod: &Value, name: &str) -> bool {
    str_at(pod, "/spec/serviceAccountName") == Some(name)
}

/// Volume sources of a PersistentVolume with a `secretRef` (name, namespace).
const PV_SECRET_REFS: [&str; 12] = [
    "/cephfs/secretRef",
    "/cinder/secretRef",
    "/flexVolume/secretRef",
    "/rbd/secretRef",
    "/scaleIO/secretRef",
    "/iscsi/secretRef",
    "/storageos/secretRef",
    "/csi/controllerPublishSecretRef",
    "/csi/nodeStageSecretRef",
    "/csi/nodePublishSecretRef",
    "/csi/controllerExpandSecretRef",
    "/csi/nodeExpandSecretRef",
];

/// Does the PersistentVolume `pv` refer to the secret `namespace`/`name`? A
/// reference without a namespace means the claim's namespace; azureFile's
/// `secretNamespace` defaults to `default` (upstream `VisitPVSecretNames`).
pub fn pv_uses_secret(pv: &Value, namespace: &str, name: &str) -> bool {
    let claim_ns = str_at(pv, "/spec/claimRef/namespace").unwrap_or("");
    let spec = pv.get("spec").unwrap_or(&Value::Null);
    let refers = |ns: &str, n: Option<&str>| n == Some(name) && ns == namespace;
    for ptr in PV_SECRET_REFS {
        if let Some(r) = spec.pointer(ptr) {
            let ns = str_at(r, "/namespace").unwrap_or(claim_ns);
            if refers(ns, str_at(r, "/name")) {
                return true;
            }
        }
    }
    let azure_ns = str_at(spec, "/azureFile/secretNamespace").unwrap_or("default");
    refers(azure_ns, str_at(spec, "/azureFile/secretName"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_references_follow_upstreams_visitors() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "initContainers": [{"envFrom": [{"secretRef": {"name": "init-env"}}]}],
                "containers": [{"env": [
                    {"name": "a", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                    {"name": "b", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}
                ]}],
                "ephemeralContainers": [{"envFrom": [{"configMapRef": {"name": "eph-cm"}}]}],
                "volumes": [
                    {"name": "s", "secret": {"secretName": "vol-secret"}},
                    {"name": "c", "configMap": {"name": "vol-cm"}},
                    {"name": "pr", "projected": {"sources": [
                        {"secret": {"name": "proj-secret"}}, {"configMap": {"name": "proj-cm"}}]}},
                    {"name": "r", "rbd": {"secretRef": {"name": "rbd-secret"}}},
                    {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
            },
            "status": {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "p-t-abc"}]}
        });
        for s in [
            "pull",
            "init-env",
            "env-secret",
            "vol-secret",
            "proj-secret",
            "rbd-secret",
            "csi-secret",
        ] {
            assert!(pod_uses_secret(&pod, s), "{s}");
        }
        assert!(!pod_uses_secret(&pod, "env-cm"));
        for c in ["env-cm", "eph-cm", "vol-cm", "proj-cm"] {
            assert!(pod_uses_config_map(&pod, c), "{c}");
        }
        assert!(!pod_uses_config_map(&pod, "vol-secret"));
        assert_eq!(pod_claims(&pod), vec!["claim", "p-scratch"]);
        assert!(pod_uses_resource_claim(&pod, "gpu-claim"));
        assert!(pod_uses_resource_claim(&pod, "p-t-abc"));
        assert!(!pod_uses_resource_claim(&pod, "gpu"));
        assert!(pod_uses_service_account(&pod, "sa"));
        assert!(!pod_uses_service_account(&pod, "default"));
    }

    #[test]
    fn pv_secrets_default_to_the_claims_namespace() {
        let pv = json!({"spec": {
            "claimRef": {"namespace": "app", "name": "c"},
            "csi": {"driver": "d", "nodeStageSecretRef": {"name": "stage"},
                    "nodePublishSecretRef": {"name": "pub", "namespace": "other"}}
        }});
        assert!(pv_uses_secret(&pv, "app", "stage"));
        assert!(pv_uses_secret(&pv, "other", "pub"));
        assert!(!pv_uses_secret(&pv, "app", "pub"));
        let azure = json!({"spec": {"azureFile": {"secretName": "az", "shareName": "s"}}});
        assert!(pv_uses_secret(&azure, "default", "az"));
        assert!(!pv_uses_secret(&azure, "app", "az"));
    }
}
