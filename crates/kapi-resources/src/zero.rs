//! The empty object of a built-in kind as upstream's field manager sees it: the
//! Go zero value of the kind's struct, serialized. A create is recorded in
//! managedFields as the change from this object to the new one, so whatever the
//! zero value already holds is not "added": a Deployment's `spec.template`
//! exists in it (a non-pointer struct), so a create's entry shows
//! `f:template` without the `.` mark a newly added map gets, while
//! `spec.template.metadata.labels` (an empty map, omitted) does get it.
//!
//! What the zero value holds: `metadata` with `creationTimestamp: null` (a
//! `metav1.Time` struct), `spec` and `status` as objects (non-pointer structs on
//! every built-in kind), and per type the fields listed in [`FIELDS`]: nested
//! non-pointer structs and fields without `omitempty` (serialized as `null`, `""`
//! or `0`). Fields the table does not list are pointers or `omitempty` scalars,
//! lists and maps, absent from the zero value. The facts come from the Go types
//! of `k8s.io/api` (the OpenAPI documents do not say which fields are pointers).
//!
//! Where to look next: `kapi_registry::managed` (where the zero object is used),
//! `patchmeta/` (the rest of the schema facts).

use kapi_machinery::schema::{SchemaNav, TypeRef};
use serde_json::{Map, Value};

/// The zero value of a field: another type's zero value, or a JSON literal.
enum Zero {
    Of(&'static str),
    Json(&'static str),
}

use Zero::{Json, Of};

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const POD_TEMPLATE: &str = "io.k8s.api.core.v1.PodTemplateSpec";
const TIME_NULL: Zero = Json("null");

/// `(type, field, zero value)`: the fields present in the zero value of a type.
const FIELDS: &[(&str, &str, Zero)] = &[
    (META, "creationTimestamp", TIME_NULL),
    (POD_TEMPLATE, "metadata", Of(META)),
    (POD_TEMPLATE, "spec", Of("io.k8s.api.core.v1.PodSpec")),
    ("io.k8s.api.core.v1.PodSpec", "containers", Json("null")),
    (
        "io.k8s.api.core.v1.PodTemplate",
        "template",
        Of(POD_TEMPLATE),
    ),
    (
        "io.k8s.api.core.v1.ServiceStatus",
        "loadBalancer",
        Json("{}"),
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        "resources",
        Json("{}"),
    ),
    (
        "io.k8s.api.core.v1.NodeStatus",
        "daemonEndpoints",
        Json(r#"{"kubeletEndpoint":{"Port":0}}"#),
    ),
    (
        "io.k8s.api.core.v1.NodeStatus",
        "nodeInfo",
        Json(
            r#"{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}"#,
        ),
    ),
    (
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        "replicas",
        Json("0"),
    ),
    ("io.k8s.api.core.v1.LimitRangeSpec", "limits", Json("null")),
    ("io.k8s.api.core.v1.Event", "involvedObject", Json("{}")),
    ("io.k8s.api.core.v1.Event", "source", Json("{}")),
    ("io.k8s.api.core.v1.Event", "firstTimestamp", TIME_NULL),
    ("io.k8s.api.core.v1.Event", "lastTimestamp", TIME_NULL),
    ("io.k8s.api.core.v1.Event", "eventTime", TIME_NULL),
    (
        "io.k8s.api.core.v1.Event",
        "reportingComponent",
        Json("\"\""),
    ),
    (
        "io.k8s.api.core.v1.Event",
        "reportingInstance",
        Json("\"\""),
    ),
    ("io.k8s.api.core.v1.Binding", "target", Json("{}")),
    ("io.k8s.api.events.v1.Event", "eventTime", TIME_NULL),
    ("io.k8s.api.events.v1.Event", "regarding", Json("{}")),
    ("io.k8s.api.events.v1.Event", "deprecatedSource", Json("{}")),
    (
        "io.k8s.api.events.v1.Event",
        "deprecatedFirstTimestamp",
        TIME_NULL,
    ),
    (
        "io.k8s.api.events.v1.Event",
        "deprecatedLastTimestamp",
        TIME_NULL,
    ),
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "template",
        Of(POD_TEMPLATE),
    ),
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", Json("{}")),
    (
        "io.k8s.api.apps.v1.ReplicaSetSpec",
        "template",
        Of(POD_TEMPLATE),
    ),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas", Json("0")),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        "template",
        Of(POD_TEMPLATE),
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        "updateStrategy",
        Json("{}"),
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetStatus",
        "replicas",
        Json("0"),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetSpec",
        "template",
        Of(POD_TEMPLATE),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetSpec",
        "updateStrategy",
        Json("{}"),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "currentNumberScheduled",
        Json("0"),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "numberMisscheduled",
        Json("0"),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "desiredNumberScheduled",
        Json("0"),
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "numberReady",
        Json("0"),
    ),
    (
        "io.k8s.api.apps.v1.ControllerRevision",
        "data",
        Json("null"),
    ),
    (
        "io.k8s.api.apps.v1.ControllerRevision",
        "revision",
        Json("0"),
    ),
    ("io.k8s.api.batch.v1.JobSpec", "template", Of(POD_TEMPLATE)),
    ("io.k8s.api.batch.v1.CronJobSpec", "schedule", Json("\"\"")),
    (
        "io.k8s.api.batch.v1.CronJobSpec",
        "jobTemplate",
        Of("io.k8s.api.batch.v1.JobTemplateSpec"),
    ),
    ("io.k8s.api.batch.v1.JobTemplateSpec", "metadata", Of(META)),
    (
        "io.k8s.api.batch.v1.JobTemplateSpec",
        "spec",
        Of("io.k8s.api.batch.v1.JobSpec"),
    ),
    ("io.k8s.api.rbac.v1.Role", "rules", Json("null")),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules", Json("null")),
    (
        "io.k8s.api.rbac.v1.RoleBinding",
        "roleRef",
        Of("io.k8s.api.rbac.v1.RoleRef"),
    ),
    (
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        "roleRef",
        Of("io.k8s.api.rbac.v1.RoleRef"),
    ),
    ("io.k8s.api.rbac.v1.RoleRef", "apiGroup", Json("\"\"")),
    ("io.k8s.api.rbac.v1.RoleRef", "kind", Json("\"\"")),
    ("io.k8s.api.rbac.v1.RoleRef", "name", Json("\"\"")),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        "scaleTargetRef",
        Json(r#"{"kind":"","name":""}"#),
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        "maxReplicas",
        Json("0"),
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "desiredReplicas",
        Json("0"),
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
        "scaleTargetRef",
        Json(r#"{"kind":"","name":""}"#),
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
        "maxReplicas",
        Json("0"),
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerStatus",
        "currentReplicas",
        Json("0"),
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerStatus",
        "desiredReplicas",
        Json("0"),
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        "podSelector",
        Json("{}"),
    ),
    (
        "io.k8s.api.networking.v1.IngressStatus",
        "loadBalancer",
        Json("{}"),
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "disruptionsAllowed",
        Json("0"),
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "currentHealthy",
        Json("0"),
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "desiredHealthy",
        Json("0"),
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "expectedPods",
        Json("0"),
    ),
    (
        "io.k8s.api.storage.v1.StorageClass",
        "provisioner",
        Json("\"\""),
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentSpec",
        "attacher",
        Json("\"\""),
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentSpec",
        "source",
        Json("{}"),
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentSpec",
        "nodeName",
        Json("\"\""),
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentStatus",
        "attached",
        Json("false"),
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        "request",
        Json("null"),
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        "signerName",
        Json("\"\""),
    ),
    ("io.k8s.api.scheduling.v1.PriorityClass", "value", Json("0")),
    ("io.k8s.api.node.v1.RuntimeClass", "handler", Json("\"\"")),
    (
        "io.k8s.api.discovery.v1.EndpointSlice",
        "addressType",
        Json("\"\""),
    ),
    (
        "io.k8s.api.discovery.v1.EndpointSlice",
        "endpoints",
        Json("null"),
    ),
];

/// The zero value of a nested type: its listed fields.
fn zero_of(ty: &str) -> Value {
    let mut m = Map::new();
    for (owner, field, zero) in FIELDS {
        if *owner != ty {
            continue;
        }
        let v = match zero {
            Of(inner) => zero_of(inner),
            Json(text) => serde_json::from_str(text).expect("table literals are JSON"),
        };
        m.insert((*field).to_string(), v);
    }
    Value::Object(m)
}

/// The zero value of the kind whose definition is `root`.
pub fn zero_object(schema: &dyn SchemaNav, root: &TypeRef) -> Value {
    let mut out = zero_of(&root.0);
    let obj = out.as_object_mut().expect("zero_of gives an object");
    for part in ["metadata", "spec", "status"] {
        if let Some(fi) = schema.field(root, part) {
            let ty = if part == "metadata" { META } else { &fi.elem.0 };
            obj.insert(part.to_string(), zero_of(ty));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patchmeta::BuiltinSchema;
    use serde_json::json;

    fn zero(def: &str) -> Value {
        zero_object(BuiltinSchema::shared().as_ref(), &TypeRef::new(def))
    }

    #[test]
    fn a_deployment_holds_its_template_and_strategy() {
        let want = json!({
            "metadata": {"creationTimestamp": null},
            "spec": {
                "template": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"containers": null}
                },
                "strategy": {}
            },
            "status": {}
        });
        assert_eq!(zero("io.k8s.api.apps.v1.Deployment"), want);
    }

    #[test]
    fn kinds_without_spec_hold_metadata_and_their_own_fields() {
        let cm = zero("io.k8s.api.core.v1.ConfigMap");
        assert_eq!(cm, json!({"metadata": {"creationTimestamp": null}}));
        let rb = zero("io.k8s.api.rbac.v1.RoleBinding");
        assert_eq!(
            rb["roleRef"],
            json!({"apiGroup": "", "kind": "", "name": ""})
        );
        let cj = zero("io.k8s.api.batch.v1.CronJob");
        assert_eq!(
            cj["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            json!({"containers": null})
        );
    }

    #[test]
    fn every_table_type_and_field_exists_in_the_schema() {
        let nav = BuiltinSchema::shared();
        for (owner, field, _) in FIELDS {
            assert!(
                nav.field(&TypeRef::new(*owner), field).is_some(),
                "{owner}.{field}"
            );
        }
    }
}
