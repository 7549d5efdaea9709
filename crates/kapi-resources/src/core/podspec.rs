//! Defaulting of `PodSpec`, its containers, probes and volumes (upstream
//! `pkg/apis/core/v1/defaults.go`), shared by pods and every workload's pod template.
//!
//! Invariants: only fields that upstream defaults for *any* `PodSpec` live here;
//! what upstream applies to a `Pod` alone (requests from limits, `enableServiceLinks`,
//! admission-time defaults) lives in `pod.rs`. Every default is idempotent.
//!
//! Where to look next: `podspec_validation.rs` validates what this produces;
//! `apps/mod.rs` calls [`default_pod_template`] for workloads.

use serde_json::{json, Value};

use super::util::{child_obj, for_each_item, i64_at, set_default, set_default_str, str_at};

/// The container lists of a pod spec, in upstream's validation order.
pub const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// A template's `metadata` when it has none: an `ObjectMeta` is a non-pointer
/// struct in a template, so Go always writes it (`creationTimestamp: null`).
pub fn default_template_metadata(template: &mut Value) {
    set_default(template, "metadata", json!({"creationTimestamp": null}));
}

/// `SetDefaults_HostPathVolumeSource` for the `hostPath` source of `holder`
/// (a pod's volume or a persistent volume's spec).
pub(crate) fn default_host_path(holder: &mut Value) {
    if let Some(host_path) = holder.get_mut("hostPath").filter(|h| h.is_object()) {
        set_default(host_path, "type", json!(""));
    }
}

/// `spec.template` of a workload: defaults its pod spec.
pub fn default_pod_template(template: &mut Value) {
    if let Some(spec) = child_obj(template, "spec") {
        default_pod_spec(spec);
    }
}

/// Upstream `SetDefaults_PodSpec` and everything it reaches.
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default_str(spec, "dnsPolicy", "ClusterFirst");
    set_default_str(spec, "restartPolicy", "Always");
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default_str(spec, "schedulerName", "default-scheduler");
    mirror_service_account(spec);
    for list in CONTAINER_LISTS {
        for_each_item(spec, list, default_container);
    }
    for_each_item(spec, "volumes", default_volume);
}

/// Upstream `defaultHostNetworkPorts`, which `SetDefaults_Pod` (not `PodSpec`) applies
/// to the containers and init containers of a pod with host networking: a port's
/// `hostPort` defaults to its `containerPort`. Pod templates keep theirs unset.
pub fn default_host_network_ports(spec: &mut Value) {
    if !spec["hostNetwork"].as_bool().unwrap_or(false) {
        return;
    }
    for list in ["containers", "initContainers"] {
        for_each_item(spec, list, |c| {
            for_each_item(c, "ports", |p| {
                if let Some(port) = p.get("containerPort").cloned() {
                    if i64_at(p, "/hostPort").unwrap_or(0) == 0 {
                        p["hostPort"] = port;
                    }
                }
            })
        });
    }
}

/// v1's deprecated `serviceAccount` mirrors `serviceAccountName` (upstream conversion:
/// the old field is read when the new one is empty, and always written back).
fn mirror_service_account(spec: &mut Value) {
    let deprecated = spec
        .get("serviceAccount")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !deprecated.is_empty() {
        set_default_str(spec, "serviceAccountName", &deprecated);
    }
    let name = str_at(spec, "/serviceAccountName").to_string();
    if !name.is_empty() {
        spec["serviceAccount"] = json!(name);
    }
}

/// Upstream `SetDefaults_Container` plus the defaults of its ports, probes and env.
pub fn default_container(c: &mut Value) {
    if c.get("imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        c["imagePullPolicy"] = json!(default_pull_policy(image));
    }
    set_default_str(c, "terminationMessagePath", "/dev/termination-log");
    set_default_str(c, "terminationMessagePolicy", "File");
    set_default(c, "resources", json!({}));
    for_each_item(c, "ports", |p| set_default_str(p, "protocol", "TCP"));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
            default_probe(p);
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").filter(|l| l.is_object()) {
        for hook in ["postStart", "preStop"] {
            if let Some(get) = lifecycle.pointer_mut(&format!("/{hook}/httpGet")) {
                default_http_get(get);
            }
        }
    }
    for_each_item(c, "env", |e| {
        if let Some(field_ref) = e.pointer_mut("/valueFrom/fieldRef") {
            set_default_str(field_ref, "apiVersion", "v1");
        }
    });
}

/// `Always` for `:latest` or untagged images, else `IfNotPresent` (digests count as
/// tagged; an image that does not parse gets `IfNotPresent`, as upstream).
pub fn default_pull_policy(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let tag = name[last_slash..].split_once(':').map(|(_, t)| t);
    match (tag, digest) {
        (Some("latest"), _) | (None, None) => "Always",
        _ => "IfNotPresent",
    }
}

fn default_probe(p: &mut Value) {
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    if let Some(get) = p.get_mut("httpGet").filter(|g| g.is_object()) {
        default_http_get(get);
    }
    // `+default=""` on GRPCAction.service.
    if let Some(grpc) = p.get_mut("grpc").filter(|g| g.is_object()) {
        set_default(grpc, "service", json!(""));
    }
}

fn default_http_get(get: &mut Value) {
    set_default_str(get, "path", "/");
    set_default_str(get, "scheme", "HTTP");
}

/// The volume source members of a volume (everything but its name).
pub fn volume_sources(vol: &Value) -> Vec<&str> {
    vol.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| k.as_str() != "name" && !v.is_null())
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Upstream `SetDefaults_Volume` and the defaults of its sources.
fn default_volume(vol: &mut Value) {
    if volume_sources(vol).is_empty() {
        vol["emptyDir"] = json!({});
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = vol.get_mut(source).filter(|s| s.is_object()) {
            set_default(s, "defaultMode", json!(0o644));
        }
    }
    if let Some(items) = vol.pointer_mut("/downwardAPI/items") {
        default_field_refs(items);
    }
    for_each_item(
        vol.get_mut("projected").unwrap_or(&mut Value::Null),
        "sources",
        |s| {
            if let Some(items) = s.pointer_mut("/downwardAPI/items") {
                default_field_refs(items);
            }
            // SetDefaults_ServiceAccountTokenProjection: one hour.
            if let Some(token) = s.get_mut("serviceAccountToken").filter(|t| t.is_object()) {
                set_default(token, "expirationSeconds", json!(3600));
            }
        },
    );
    // SetDefaults_PersistentVolumeClaimSpec reaches the generic ephemeral volume's claim.
    if let Some(claim) = vol
        .pointer_mut("/ephemeral/volumeClaimTemplate/spec")
        .filter(|s| s.is_object())
    {
        set_default_str(claim, "volumeMode", "Filesystem");
    }
    default_host_path(vol);
}

fn default_field_refs(items: &mut Value) {
    for item in items.as_array_mut().into_iter().flatten() {
        if let Some(field_ref) = item.get_mut("fieldRef").filter(|f| f.is_object()) {
            set_default_str(field_ref, "apiVersion", "v1");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_spec_gets_upstream_defaults() {
        let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]});
        default_pod_spec(&mut spec);
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["securityContext"], json!({}));
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["schedulerName"], "default-scheduler");
        let c = &spec["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["resources"], json!({}));
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert!(c["ports"][0].get("hostPort").is_none());
        assert!(spec.get("serviceAccount").is_none());
    }

    #[test]
    fn service_account_fields_mirror() {
        let mut spec = json!({"serviceAccount": "old"});
        default_pod_spec(&mut spec);
        assert_eq!(
            (&spec["serviceAccountName"], &spec["serviceAccount"]),
            (&json!("old"), &json!("old"))
        );
        let mut spec = json!({"serviceAccountName": "new"});
        default_pod_spec(&mut spec);
        assert_eq!(spec["serviceAccount"], "new");
    }

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(default_pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(
            default_pull_policy("localhost:5000/nginx:1"),
            "IfNotPresent"
        );
        assert_eq!(default_pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn probes_volumes_and_host_network_ports() {
        let mut spec = json!({
            "hostNetwork": true,
            "containers": [{"name": "c", "image": "x:1",
                "ports": [{"containerPort": 8080}],
                "livenessProbe": {"httpGet": {"port": 80}},
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
            "volumes": [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}}]
        });
        default_pod_spec(&mut spec);
        assert!(spec["containers"][0]["ports"][0].get("hostPort").is_none());
        default_host_network_ports(&mut spec);
        let c = &spec["containers"][0];
        assert_eq!(c["ports"][0]["hostPort"], 8080);
        assert_eq!(c["livenessProbe"]["periodSeconds"], 10);
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/");
        assert_eq!(c["livenessProbe"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
    }

    #[test]
    fn grpc_token_projection_and_ephemeral_claim_defaults() {
        let mut spec = json!({
            "containers": [{"name": "c", "image": "x:1", "readinessProbe": {"grpc": {"port": 9}}}],
            "volumes": [
                {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}
            ]
        });
        default_pod_spec(&mut spec);
        assert_eq!(
            spec["containers"][0]["readinessProbe"]["grpc"]["service"],
            ""
        );
        let token = &spec["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"];
        assert_eq!(token["expirationSeconds"], 3600);
        let claim = &spec["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"];
        assert_eq!(claim["volumeMode"], "Filesystem");
    }
}
