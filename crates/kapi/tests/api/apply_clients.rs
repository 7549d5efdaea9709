//! Server-side apply, continued: the entries creates record (upstream's `.`
//! marks against the kind's empty object, for built-in and custom kinds),
//! configuration errors answered as upstream, `fieldManager` validation, the
//! last-applied annotation kept by the `kubectl` applier, and a controller's
//! reconcile loop through kube-rs `Patch::Apply`.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

use crate::crd::{crontab, crontab_crd, crontabs, establish};
use crate::harness::{self, api_error};

fn fields_of(obj: &impl serde::Serialize, manager: &str) -> Value {
    let v = serde_json::to_value(obj).unwrap();
    let es = v["metadata"]["managedFields"].as_array().cloned();
    let e = es
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no {manager} entry in {v:#}"));
    e["fieldsV1"].clone()
}

fn post(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.into()),
        ..PostParams::default()
    }
}

#[tokio::test]
async fn creates_record_what_they_add_to_the_kinds_empty_object() {
    let s = harness::start().await;
    let deploy: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }))
    .unwrap();
    let api: Api<Deployment> = s.api("default");
    let out = api.create(&post("creator"), &deploy).await.unwrap();
    let f = fields_of(&out, "creator");
    // The zero Deployment holds spec.strategy and spec.template (and its
    // metadata and spec): no `.` there; labels and the container are new.
    let spec = &f["f:spec"];
    assert!(spec["f:template"].get(".").is_none(), "{f:#}");
    assert!(spec["f:template"]["f:metadata"].get(".").is_none(), "{f:#}");
    assert!(spec["f:strategy"].get(".").is_none(), "{f:#}");
    assert_eq!(spec["f:strategy"]["f:rollingUpdate"]["."], json!({}));
    assert_eq!(
        spec["f:template"]["f:metadata"]["f:labels"],
        json!({".": {}, "f:app": {}})
    );
    let containers = &spec["f:template"]["f:spec"]["f:containers"];
    assert!(containers.get(".").is_none(), "{f:#}");
    assert_eq!(containers["k:{\"name\":\"c\"}"]["."], json!({}));
    assert_eq!(f["f:metadata"], json!({"f:labels": {".": {}, "f:app": {}}}));

    // A custom object's empty object has nothing: its spec is new.
    establish(&s, crontab_crd()).await;
    let ct = crontabs(&s, "default")
        .create(&post("creator"), &crontab("x", json!({"cronSpec": "1"})))
        .await
        .unwrap();
    assert_eq!(
        fields_of(&ct, "creator"),
        json!({"f:spec": {".": {}, "f:cronSpec": {}}})
    );
}

#[tokio::test]
async fn configuration_errors_are_answered_as_upstream() {
    let s = harness::start().await;
    let apply = |body: Value| {
        http::Request::patch("/apis/apps/v1/namespaces/default/deployments/web?fieldManager=m")
            .header("content-type", "application/apply-patch+yaml")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let with = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"template": {"spec": {"containers": containers}}}})
    };
    let cases = [
        (
            with(json!([{"image": "nginx"}])),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)",
        ),
        (
            with(json!([{"name": "c", "imagee": "nginx"}])),
            ".spec.template.spec.containers[name=\"c\"].imagee: field not declared in schema",
        ),
    ];
    for (body, detail) in cases {
        let (code, st) = s.raw(apply(body)).await;
        assert_eq!(code, 500, "{st}");
        assert!(st.get("reason").is_none(), "{st}");
        let want = format!(
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): {detail}"
        );
        assert_eq!(st["message"], want.as_str());
    }
    let api: Api<Deployment> = s.api("default");
    assert!(
        api.get_opt("web").await.unwrap().is_none(),
        "nothing stored"
    );

    // fieldManager is validated as upstream's ValidateFieldManager.
    let long = "m".repeat(129);
    let req = http::Request::patch(format!(
        "/api/v1/namespaces/default/configmaps/c?fieldManager={long}"
    ))
    .header("content-type", "application/merge-patch+json")
    .body(b"{}".to_vec())
    .unwrap();
    let (code, st) = s.raw(req).await;
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long"),
        "{st}"
    );
}

#[tokio::test]
async fn the_kubectl_applier_takes_over_client_side_apply() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let last = "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"cfg\",\"namespace\":\"default\"}}\n";
    let csa: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "cfg", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": last}},
        "data": {"k": "v1"}
    }))
    .unwrap();
    api.create(&post("kubectl-client-side-apply"), &csa)
        .await
        .unwrap();
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"}, "data": {"k": "a&b"}});
    // Another applier conflicts with the client-side applier's field...
    let err = api_error(
        api.patch("cfg", &PatchParams::apply("other"), &Patch::Apply(&config))
            .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.k"
    );
    // ...`kubectl` may take what the annotation records, and rewrites it.
    let out = api
        .patch(
            "cfg",
            &PatchParams::apply("kubectl"),
            &Patch::Apply(&config),
        )
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "a&b");
    let annotation =
        &out.metadata.annotations.unwrap()["kubectl.kubernetes.io/last-applied-configuration"];
    assert_eq!(
        annotation,
        "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"a\\u0026b\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cfg\",\"namespace\":\"default\"}}\n"
    );
}

/// What a controller keeps applying: a ConfigMap with these keys.
fn desired(keys: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "owned", "labels": {"app.kubernetes.io/managed-by": "ctrl"}},
           "data": data})
}

#[tokio::test]
async fn a_controller_reconciles_through_patch_apply() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let pp = PatchParams::apply("ctrl").force();
    let reconcile = |cfg: Value| {
        let api = api.clone();
        let pp = pp.clone();
        async move { api.patch("owned", &pp, &Patch::Apply(cfg)).await.unwrap() }
    };
    let first = reconcile(desired(&[("a", "1"), ("b", "2")])).await;
    // A steady state writes nothing.
    let again = reconcile(desired(&[("a", "1"), ("b", "2")])).await;
    assert_eq!(
        again.metadata.resource_version,
        first.metadata.resource_version
    );
    // A user edits a field the controller owns and adds one of their own.
    let edit = json!({"data": {"a": "changed", "mine": "x"}});
    api.patch(
        "owned",
        &PatchParams {
            field_manager: Some("user".into()),
            ..PatchParams::default()
        },
        &Patch::Merge(&edit),
    )
    .await
    .unwrap();
    // The controller's forced apply takes its field back; the user keeps theirs.
    let back = reconcile(desired(&[("a", "1"), ("b", "2")])).await;
    let data = back.data.clone().unwrap();
    assert_eq!((data["a"].as_str(), data["mine"].as_str()), ("1", "x"));
    assert_eq!(fields_of(&back, "user"), json!({"f:data": {"f:mine": {}}}));
    // The controller stops wanting "b": it goes; the user's key stays.
    let fewer = reconcile(desired(&[("a", "1")])).await;
    let data = fewer.data.clone().unwrap();
    assert!(
        !data.contains_key("b") && data.contains_key("mine"),
        "{data:?}"
    );
    assert_eq!(
        fields_of(&fewer, "ctrl"),
        json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}})
    );
}

#[tokio::test]
async fn custom_objects_merge_by_their_schemas_list_and_map_types() {
    let s = harness::start().await;
    let mut crd = crontab_crd();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["tags"] =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    spec["properties"]["selector"] = json!({"type": "object", "x-kubernetes-map-type": "atomic",
        "additionalProperties": {"type": "string"}});
    establish(&s, crd).await;
    let api = crontabs(&s, "default");
    let cfg = |spec: Value| {
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": "x"}, "spec": spec})
    };
    api.patch(
        "x",
        &PatchParams::apply("a"),
        &Patch::Apply(cfg(json!({"tags": ["t1"], "selector": {"k": "v"}}))),
    )
    .await
    .unwrap();
    // A set merges by value: both managers own their element.
    let out = api
        .patch(
            "x",
            &PatchParams::apply("b"),
            &Patch::Apply(cfg(json!({"tags": ["t2"]}))),
        )
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["tags"], json!(["t1", "t2"]));
    assert_eq!(
        fields_of(&out, "b"),
        json!({"f:spec": {"f:tags": {"v:\"t2\"": {}}}})
    );
    // An atomic map is one field: another key is a conflict on the whole map.
    let err = api_error(
        api.patch(
            "x",
            &PatchParams::apply("b"),
            &Patch::Apply(cfg(json!({"tags": ["t2"], "selector": {"other": "v"}}))),
        )
        .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.selector"
    );
    assert_eq!(
        fields_of(&out, "a"),
        json!({"f:spec": {"f:selector": {}, "f:tags": {"v:\"t1\"": {}}}})
    );
}
