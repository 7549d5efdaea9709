//! Schema rules of custom objects that need a whole server to show: embedded
//! resources (`x-kubernetes-embedded-resource`: apiVersion and kind required,
//! metadata validated and kept) and list-type uniqueness (`set` items,
//! `map` keys), each answered with upstream's 422.

use kube::api::PostParams;
use serde_json::json;

use crate::crd::establish;
use crate::harness::{self, api_error};

fn gadget_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.objects.example.com"},
        "spec": {
            "group": "objects.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "template": {"type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"type": "string"}},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"},
                                               "port": {"type": "integer"}}}}
                    }}}}}}]
        }
    })
}

fn gadget(name: &str, spec: serde_json::Value) -> kube::api::DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "objects.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

#[tokio::test]
async fn embedded_resources_and_list_uniqueness() {
    let s = harness::start().await;
    establish(&s, gadget_crd()).await;
    let api = harness::dynamic(
        &s.client,
        "objects.example.com",
        "v1",
        "Gadget",
        "gadgets",
        Some("default"),
    );
    let cases = [
        (
            json!({"template": {"metadata": {"name": "x"}}}),
            vec![
                "spec.template.apiVersion: Required value: must not be empty",
                "spec.template.kind: Required value: must not be empty",
            ],
        ),
        (
            json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}}}),
            // Upstream checks embedded names as path segments.
            vec!["spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'"],
        ),
        (
            json!({"tags": ["a", "b", "a"]}),
            vec!["spec.tags[2]: Duplicate value: \"a\""],
        ),
        (
            json!({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}]}),
            // Upstream renders the key as a Go map (`map[string]interface {}{…}`);
            // kapi renders bad values that are objects as JSON.
            vec!["spec.ports[1]: Duplicate value: "],
        ),
    ];
    for (spec, wants) in cases {
        let err = api_error(
            api.create(&PostParams::default(), &gadget("bad", spec.clone()))
                .await,
        );
        assert_eq!(err.code, 422, "{spec}: {}", err.message);
        assert_eq!(err.reason, "Invalid");
        for want in wants {
            assert!(
                err.message.contains(want),
                "{spec}: want {want}\n got {}",
                err.message
            );
        }
    }
    // A valid embedded object keeps its fields (preserve-unknown-fields) and
    // its metadata.
    let ok = gadget(
        "good",
        json!({"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"x": 1}},
            "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}]}),
    );
    let created = api.create(&PostParams::default(), &ok).await.unwrap();
    assert_eq!(
        created.data["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"x": 1}})
    );
}
