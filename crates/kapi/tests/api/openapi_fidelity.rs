//! The OpenAPI documents as upstream publishes them (read from kube-apiserver
//! 1.28.4): list kinds with their Go types' documentation; a custom resource
//! whose schema preserves unknown fields at its root is a bare object in v2
//! (so kubectl's client-side validation lets everything through) and whole
//! in v3; custom resource paths take no strategic merge patch (kubectl then
//! picks a merge patch) and speak JSON and YAML only.

use serde_json::{json, Value};

use crate::crd::establish;
use crate::harness;

fn widgets_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

#[tokio::test]
async fn openapi_v2_and_v3_are_upstreams() {
    let s = harness::start().await;
    establish(&s, widgets_crd()).await;
    let (code, v2) = s.get_json("/openapi/v2").await;
    assert_eq!(code, 200);
    let defs = &v2["definitions"];
    let list = &defs["io.k8s.api.core.v1.ServiceList"];
    assert_eq!(list["description"], "ServiceList holds a list of services.");
    assert_eq!(
        list["properties"]["items"]["description"],
        "List of services"
    );
    let pods = &defs["io.k8s.api.core.v1.PodList"];
    assert_eq!(pods["description"], "PodList is a list of Pods.");
    assert_eq!(
        pods["properties"]["metadata"]["description"],
        "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
    );
    assert_eq!(
        defs["com.example.v1.Widget"],
        json!({"type": "object", "x-kubernetes-group-version-kind": [
            {"group": "example.com", "kind": "Widget", "version": "v1"}]})
    );
    let widgets = &defs["com.example.v1.WidgetList"];
    assert_eq!(widgets["description"], "WidgetList is a list of Widget");
    assert_eq!(
        widgets["properties"]["items"]["description"],
        "List of widgets. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    );
    let named = &v2["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    assert_eq!(
        named["patch"]["consumes"],
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    for op in ["get", "put", "delete"] {
        assert_eq!(
            named[op]["produces"],
            json!(["application/json", "application/yaml"]),
            "{op}"
        );
        assert_eq!(
            named[op]["consumes"],
            json!(["application/json", "application/yaml"]),
            "{op}"
        );
    }
    let status = &v2["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"];
    assert!(!status["patch"]["consumes"]
        .to_string()
        .contains("strategic"));
    let builtin = &v2["paths"]["/api/v1/namespaces/{namespace}/services/{name}"];
    assert!(builtin["patch"]["consumes"]
        .to_string()
        .contains("strategic"));

    let (code, v3) = s.get_json("/openapi/v3/apis/example.com/v1").await;
    assert_eq!(code, 200);
    let widget = &v3["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-preserve-unknown-fields"], true,
        "{widget:#}"
    );
    assert!(widget["properties"].get("metadata").is_some(), "{widget:#}");
}
