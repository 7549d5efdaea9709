//! Tests for strategic merge patch, modelled on upstream `patch_test.go` and on
//! what `kubectl apply` / `kubectl patch` actually send.

use serde_json::{json, Value};

use super::{apply, PatchError};
use crate::schema::{FieldInfo, NoSchema, SchemaNav, TypeRef};

/// A slice of the core/v1 and apps/v1 schemas, with patch metadata as upstream.
struct TestSchema;

fn f(elem: &str, strategies: &[&str], key: Option<&str>) -> FieldInfo {
    FieldInfo {
        elem: TypeRef::new(elem),
        patch_strategies: strategies.iter().map(|s| s.to_string()).collect(),
        patch_merge_key: key.map(str::to_string),
        ..FieldInfo::default()
    }
}

impl SchemaNav for TestSchema {
    fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>> {
        let merge = &["merge"][..];
        Some(std::sync::Arc::new(match (ty.0.as_str(), name) {
            ("Pod" | "Deployment", "metadata") => f("ObjectMeta", &[], None),
            ("Pod", "spec") => f("PodSpec", &[], None),
            ("Deployment", "spec") => f("DeploymentSpec", &[], None),
            ("ObjectMeta", "labels" | "annotations") => f("string", &[], None),
            ("ObjectMeta", "finalizers") => f("string", merge, None),
            ("PodSpec", "containers" | "initContainers") => f("Container", merge, Some("name")),
            ("PodSpec", "volumes") => f("Volume", &["merge", "retainKeys"], Some("name")),
            ("PodSpec", "tolerations") => f("Toleration", &[], None),
            ("PodSpec", "dnsConfig") => f("PodDNSConfig", &["replace"], None),
            ("PodSpec", "readinessGates") => f("PodReadinessGate", merge, None),
            ("PodSpec", "weird") => f("string", &["merge", "replace"], None),
            ("Container", "ports") => f("ContainerPort", merge, Some("containerPort")),
            ("Container", "env") => f("EnvVar", merge, Some("name")),
            ("Container", "args") => f("string", &[], None),
            ("DeploymentSpec", "strategy") => f("DeploymentStrategy", &["retainKeys"], None),
            ("DeploymentSpec", "template") => f("PodTemplateSpec", &[], None),
            ("PodTemplateSpec", "spec") => f("PodSpec", &[], None),
            _ => return None,
        }))
    }
}

fn smp(original: Value, patch: Value) -> Value {
    smp_try(original, patch).unwrap_or_else(|e| panic!("patch failed: {e}"))
}

fn smp_try(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply(&original, &patch, &TestSchema, &TypeRef::new("Pod"))
}

fn err(original: Value, patch: Value) -> String {
    smp_try(original, patch)
        .expect_err("patch should fail")
        .to_string()
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn names(v: &Value) -> Vec<&str> {
    v["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn assert_no_directives(v: &Value) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            assert!(!k.starts_with('$'), "directive {k} leaked");
            assert_no_directives(v);
        }),
        Value::Array(a) => a.iter().for_each(assert_no_directives),
        _ => {}
    }
}

mod lists;
mod maps;
mod whole;
