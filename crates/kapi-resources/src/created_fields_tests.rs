//! A create's managedFields entry is written straight from the comparison with
//! the kind's empty object; an update from that empty object works the same
//! entry out through field sets. The two must agree for every shape a create
//! can take: keyed lists (with defaulted and duplicate keys), set lists, nulls,
//! empty maps, free-form maps, ignored status, the status subresource, and
//! objects the schema rejects.

use kapi_machinery::schema::{NoSchema, TypeRef};
use kapi_registry::managed::FieldManager;
use serde_json::{json, Value};

use crate::apply_scenarios::field_manager as manager;
use crate::patchmeta::{root_type, BuiltinSchema};

const NOW: &str = "2026-01-01T00:00:00Z";

/// The create (`update` with no live object) and the same write as an update
/// from the empty object, which takes the field-set path.
fn both(fm: &FieldManager, obj: &Value) -> (Value, Value) {
    let mut created = obj.clone();
    fm.update(None, &mut created, "creator", NOW);
    let mut compared = obj.clone();
    fm.update(Some(&fm.empty_object()), &mut compared, "creator", NOW);
    (created, compared)
}

fn builtin_cases() -> Vec<(&'static str, &'static str, &'static str, bool, Value)> {
    let meta = json!({"name": "x", "namespace": "ns", "uid": "u", "resourceVersion": "1",
        "creationTimestamp": NOW, "generation": 1, "labels": {"a": "1", "b": "2"},
        "annotations": {"k": "v"}, "finalizers": ["f/one", "f/two", "f/one"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "ou"}]});
    vec![
        (
            "",
            "v1",
            "ConfigMap",
            false,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": "count-", "namespace": "default"},
            "data": {"payload": "x"}}),
        ),
        (
            "",
            "v1",
            "ConfigMap",
            false,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": meta.clone(), "data": {}, "binaryData": null, "immutable": false}),
        ),
        (
            "",
            "v1",
            "ConfigMap",
            false,
            json!({"metadata": {"name": "bare"}}),
        ),
        (
            "",
            "v1",
            "Secret",
            false,
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "labels": null}, "type": "Opaque", "data": {"a": "YQ=="}}),
        ),
        (
            "",
            "v1",
            "Pod",
            true,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta.clone(),
            "spec": {"containers": [
                {"name": "a", "image": "nginx", "ports": [
                    {"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"},
                    {"containerPort": 80, "protocol": "TCP", "name": "dup"}],
                 "env": [{"name": "E", "value": "1"}, {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                 "resources": {}, "args": ["x", "y"], "command": []},
                {"name": "b", "image": "busybox"},
                {"name": "a", "image": "shadowed"}],
              "tolerations": [{"key": "k", "operator": "Exists"}],
              "nodeSelector": {}, "restartPolicy": "Always", "securityContext": {}},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}}),
        ),
        (
            "",
            "v1",
            "Service",
            true,
            json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "protocol": "TCP"}],
                     "selector": {"app": "x"}, "clusterIPs": ["10.0.0.1"], "type": "ClusterIP"}}),
        ),
        (
            "",
            "v1",
            "Node",
            true,
            json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}],
                       "capacity": {"cpu": "2"}}}),
        ),
        (
            "",
            "v1",
            "Namespace",
            true,
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes"]}}),
        ),
        (
            "apps",
            "v1",
            "Deployment",
            true,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": "d"}, "creationTimestamp": null},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                      "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log"}],
                                           "dnsPolicy": "ClusterFirst"}}}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            false,
            json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
            "aggregationRule": null}),
        ),
        // Not what the schema allows: the create falls back to the field sets,
        // which fail the same way.
        (
            "",
            "v1",
            "Pod",
            true,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"image": "no-name"}]}}),
        ),
        (
            "",
            "v1",
            "ConfigMap",
            false,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": "not a map"}),
        ),
    ]
}

#[test]
fn a_create_records_what_an_update_from_the_empty_object_records() {
    let schema = BuiltinSchema::shared();
    for (group, version, kind, has_status, obj) in builtin_cases() {
        let root = root_type(group, version, kind).unwrap();
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        for sub in [None, Some("status"), Some("")] {
            let fm = manager(schema.as_ref(), &root, &api_version, kind, sub, has_status);
            let (created, compared) = both(&fm, &obj);
            assert_eq!(created, compared, "{kind} {sub:?}: {obj}");
        }
    }
}

#[test]
fn a_create_of_a_custom_resource_records_what_the_comparison_records() {
    let root = TypeRef::UNKNOWN;
    let cases = [
        json!({"apiVersion": "e.io/v1", "kind": "W", "metadata": {"name": "w", "labels": {"a": "b"}},
               "spec": {"list": [1, 2, {"x": null}], "empty": {}, "nested": {"deep": {"n": 1.5}}, "none": null},
               "status": {"ok": true}}),
        json!({"apiVersion": "e.io/v1", "kind": "W", "metadata": {"name": "w"}}),
    ];
    for obj in cases {
        for has_status in [false, true] {
            let fm = manager(&NoSchema, &root, "e.io/v1", "W", None, has_status);
            let (created, compared) = both(&fm, &obj);
            assert_eq!(created, compared, "{obj}");
        }
    }
}

#[test]
fn the_pod_create_entry_is_upstreams() {
    let schema = BuiltinSchema::shared();
    let root = root_type("", "v1", "Pod").unwrap();
    let fm = manager(schema.as_ref(), &root, "v1", "Pod", None, true);
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"run": "p"}},
        "spec": {"containers": [{"name": "p", "image": "nginx", "ports": [{"containerPort": 80}]}]},
        "status": {"phase": "Pending"}});
    fm.update(None, &mut pod, "kubectl-run", NOW);
    let want = json!({
        "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"p\"}": {".": {}, "f:image": {}, "f:name": {},
            "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}});
    assert_eq!(pod["metadata"]["managedFields"][0]["fieldsV1"], want);
}
