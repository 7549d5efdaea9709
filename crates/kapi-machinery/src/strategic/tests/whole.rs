//! Strategic merge patch: atomic lists, unknown schemas, `$retainKeys`, and
//! whole objects as `kubectl apply` patches them.

use serde_json::json;

use super::*;

// ---- atomic lists and unknown schema ----

#[test]
fn lists_without_merge_strategy_are_replaced() {
    let orig = json!({"spec": {
        "tolerations": [{"key": "a"}, {"key": "b"}],
        "containers": [{"name": "c", "args": ["1", "2"]}]
    }});
    let patch = json!({"spec": {
        "tolerations": [{"key": "z", "effect": null}],
        "containers": [{"name": "c", "args": ["3"]}]
    }});
    let want = json!({"spec": {
        "tolerations": [{"key": "z"}],
        "containers": [{"name": "c", "args": ["3"]}]
    }});
    assert_eq!(smp(orig, patch), want);
}

#[test]
fn unknown_schema_merges_maps_and_replaces_lists() {
    let orig = json!({"spec": {"containers": [{"name": "a"}], "x": {"y": 1}}});
    let patch = json!({"spec": {"containers": [{"name": "b"}], "x": {"z": 2}}});
    let out = apply(&orig, &patch, &NoSchema, &TypeRef::new("Pod")).unwrap();
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "b"}], "x": {"y": 1, "z": 2}}})
    );
    let out = apply(&orig, &patch, &TestSchema, &TypeRef::UNKNOWN).unwrap();
    assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
}

#[test]
fn map_value_type_is_used_for_map_entries() {
    struct MapSchema;
    impl SchemaNav for MapSchema {
        fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>> {
            match (ty.0.as_str(), name) {
                ("Root", "byName") => Some(std::sync::Arc::new(f("ContainerMap", &[], None))),
                ("Entry", "items") => Some(std::sync::Arc::new(f("Item", &["merge"], Some("id")))),
                _ => None,
            }
        }
        fn map_value(&self, ty: &TypeRef) -> Option<TypeRef> {
            (ty.0 == "ContainerMap").then(|| TypeRef::new("Entry"))
        }
    }
    let orig = json!({"byName": {"k": {"items": [{"id": 1, "v": "a"}]}}});
    let patch = json!({"byName": {"k": {"items": [{"id": 1, "w": "b"}]}}});
    let out = apply(&orig, &patch, &MapSchema, &TypeRef::new("Root")).unwrap();
    assert_eq!(
        out,
        json!({"byName": {"k": {"items": [{"id": 1, "v": "a", "w": "b"}]}}})
    );
}

// ---- retainKeys ----

fn deployment(strategy: Value) -> Value {
    json!({"spec": {"replicas": 1, "strategy": strategy}})
}

fn smp_deploy(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply(&original, &patch, &TestSchema, &TypeRef::new("Deployment"))
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let orig = deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
    let patch = json!({"spec": {"strategy": {
        "$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null
    }}});
    assert_eq!(
        smp_deploy(orig, patch).unwrap(),
        deployment(json!({"type": "Recreate"}))
    );
}

#[test]
fn retain_keys_keeps_listed_fields_and_merges() {
    let orig = deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
    let patch = json!({"spec": {"strategy": {
        "$retainKeys": ["type", "rollingUpdate"], "rollingUpdate": {"maxUnavailable": 0}
    }}});
    let want = deployment(
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
    );
    assert_eq!(smp_deploy(orig, patch).unwrap(), want);
}

#[test]
fn retain_keys_rejects_unlisted_patch_field_and_bad_format() {
    let orig = deployment(json!({"type": "RollingUpdate"}));
    let unlisted = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
    let e = smp_deploy(orig.clone(), unlisted).unwrap_err();
    assert_eq!(e, PatchError::BadRetainKeys);
    let bad = json!({"spec": {"strategy": {"$retainKeys": "type"}}});
    assert_eq!(
        smp_deploy(orig, bad).unwrap_err().to_string(),
        "invalid patch format of retainKeys"
    );
}

#[test]
fn retain_keys_in_merge_list_element() {
    let orig = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
    let patch = json!({"spec": {"volumes": [
        {"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
    ]}});
    let want = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}});
    assert_eq!(smp(orig, patch), want);
}

// ---- whole-object scenarios ----

#[test]
fn kubectl_apply_deployment_template_patch() {
    let orig = json!({
        "metadata": {"name": "d", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "log", "image": "busybox"}
        ]}}}
    });
    let patch = json!({
        "metadata": {"labels": {"tier": "fe"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "log"}],
            "containers": [{"name": "web", "image": "nginx:2",
                "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                "env": [{"name": "B", "value": "2"}]}]
        }}}
    });
    let out = smp_deploy(orig, patch).unwrap();
    assert_no_directives(&out);
    let cs = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs[0]["image"], "nginx:2");
    assert_eq!(
        cs[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(cs[1], json!({"name": "log", "image": "busybox"}));
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "tier": "fe"})
    );
}

#[test]
fn inputs_are_not_modified_and_empty_patch_is_identity() {
    let orig = pod(json!([{"name": "a"}]));
    let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}});
    let (o2, p2) = (orig.clone(), patch.clone());
    let _ = smp(orig.clone(), patch.clone());
    assert_eq!((orig.clone(), patch), (o2, p2));
    assert_eq!(smp(orig.clone(), json!({})), orig);
    let empty = json!({"spec": {"containers": []}});
    assert_eq!(
        smp(empty.clone(), json!({"spec": {"containers": []}})),
        empty
    );
}
