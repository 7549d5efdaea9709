use super::*;
use serde_json::json;

/// The spec kube-apiserver 1.28 stored for a one-version definition
/// (`etcd-dump.json` of the upstream fixture), without metadata.
fn stored_spec() -> Value {
    json!({"group": "fixture.example.com", "version": "v1",
        "names": {"plural": "examples", "singular": "example", "kind": "Example",
                  "listKind": "ExampleList"},
        "scope": "Cluster",
        "validation": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"name": {"type": "string"},
                     "size": {"type": "integer", "default": 3}}}}}},
        "subresources": {"status": {}},
        "versions": [{"name": "v1", "served": true, "storage": true}],
        "conversion": {"strategy": "None"},
        "preserveUnknownFields": false})
}

/// The same spec as kube-apiserver served it (`kubectl get -o json`).
fn served_spec() -> Value {
    json!({"group": "fixture.example.com",
        "names": {"plural": "examples", "singular": "example", "kind": "Example",
                  "listKind": "ExampleList"},
        "scope": "Cluster",
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"name": {"type": "string"},
                         "size": {"type": "integer", "default": 3}}}}}},
            "subresources": {"status": {}}}],
        "conversion": {"strategy": "None"}})
}

fn crd(api_version: &str, spec: Value) -> Value {
    json!({"kind": "CustomResourceDefinition", "apiVersion": api_version,
           "metadata": {"name": "examples.fixture.example.com"}, "spec": spec,
           "status": {"storedVersions": ["v1"]}})
}

fn bytes(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn upstreams_stored_definition_reads_as_it_served_it() {
    let c = StoredAsV1beta1;
    let got = c.convert(crd(V1BETA1, stored_spec()), V1);
    assert_eq!(
        bytes(&got),
        bytes(&crd(V1, served_spec())),
        "same fields, same order"
    );
}

#[test]
fn a_v1_definition_is_stored_as_upstream_stores_it() {
    let c = StoredAsV1beta1;
    let got = c.convert(crd(V1, served_spec()), V1BETA1);
    assert_eq!(bytes(&got), bytes(&crd(V1BETA1, stored_spec())));
}

#[test]
fn per_version_fields_stay_put_when_versions_differ() {
    let spec = json!({"group": "g.io", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced",
        "versions": [
            {"name": "v2", "served": true, "storage": true,
             "schema": {"openAPIV3Schema": {"type": "object"}},
             "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": ".a"}]},
            {"name": "v1", "served": true, "storage": false,
             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
             "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": ".a"}]}],
        "conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}},
        "preserveUnknownFields": true});
    let c = StoredAsV1beta1;
    let stored = c.convert(crd(V1, spec.clone()), V1BETA1);
    let s = &stored["spec"];
    assert_eq!(s["version"], "v2");
    assert!(
        s.get("validation").is_none(),
        "schemas differ: kept per version"
    );
    assert!(s["versions"][0]["schema"].is_object());
    assert_eq!(
        s["additionalPrinterColumns"],
        json!([{"name": "A", "type": "string", "JSONPath": ".a"}])
    );
    assert!(s["versions"][0].get("additionalPrinterColumns").is_none());
    assert_eq!(
        s["conversion"],
        json!({"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"},
               "conversionReviewVersions": ["v1"]})
    );
    assert_eq!(s["preserveUnknownFields"], true);
    let back = c.convert(stored, V1);
    assert_eq!(back, crd(V1, spec), "round trip");
}

#[test]
fn v1beta1_defaults_apply_on_the_way_in() {
    let spec = json!({"group": "g.io", "version": "v1", "names": {"kind": "K", "plural": "ks"}});
    let mut obj = crd(V1BETA1, spec);
    obj["status"] = json!({});
    let got = StoredAsV1beta1.convert(obj, V1);
    assert_eq!(
        got["spec"],
        json!({"group": "g.io", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced",
               "versions": [{"name": "v1", "served": true, "storage": true}],
               "conversion": {"strategy": "None"}, "preserveUnknownFields": true})
    );
    assert_eq!(got["status"]["storedVersions"], json!(["v1"]));
}
