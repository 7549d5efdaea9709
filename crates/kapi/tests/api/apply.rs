//! Server-side apply through kube-rs `Patch::Apply`, as a controller uses it:
//! create by apply, managedFields in upstream's shape, conflicts and `force`,
//! removal of fields a manager stopped applying, ownership moved by updates,
//! dry-run, the status subresource, managedFields reset, option validation.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error};

fn deploy(replicas: i32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]}
            }
        }
    })
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})
}

fn entries(obj: &impl serde::Serialize) -> Vec<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry<'a>(es: &'a [Value], manager: &str) -> &'a Value {
    es.iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry for {manager} in {es:#?}"))
}

#[tokio::test]
async fn apply_creates_and_records_an_apply_entry() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    let out = api
        .patch(
            "web",
            &PatchParams::apply("ctrl"),
            &Patch::Apply(deploy(2, "nginx:1")),
        )
        .await
        .unwrap();
    assert_eq!(out.spec.as_ref().unwrap().replicas, Some(2));
    let es = entries(&out);
    assert_eq!(es.len(), 1, "{es:#?}");
    let e = entry(&es, "ctrl");
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["apiVersion"], "apps/v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].is_string());
    let f = &e["fieldsV1"]["f:spec"];
    assert_eq!(f["f:replicas"], json!({}));
    assert_eq!(f["f:selector"], json!({}));
    assert_eq!(
        f["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"],
        json!({".": {}, "f:image": {}, "f:name": {}})
    );
    assert!(
        e["fieldsV1"].get("f:metadata").is_none(),
        "name is not owned"
    );
    // The same apply again changes nothing.
    let again = api
        .patch(
            "web",
            &PatchParams::apply("ctrl"),
            &Patch::Apply(deploy(2, "nginx:1")),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        out.metadata.resource_version
    );
}

#[tokio::test]
async fn conflicts_name_the_owner_and_force_takes_ownership() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.patch(
        "web",
        &PatchParams::apply("a"),
        &Patch::Apply(deploy(2, "nginx:1")),
    )
    .await
    .unwrap();
    let err = api_error(
        api.patch(
            "web",
            &PatchParams::apply("b"),
            &Patch::Apply(deploy(3, "nginx:1")),
        )
        .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    let causes = err.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].message, "conflict with \"a\"");
    assert_eq!(causes[0].field, ".spec.replicas");

    let out = api
        .patch(
            "web",
            &PatchParams::apply("b").force(),
            &Patch::Apply(deploy(3, "nginx:1")),
        )
        .await
        .unwrap();
    assert_eq!(out.spec.as_ref().unwrap().replicas, Some(3));
    let es = entries(&out);
    assert!(entry(&es, "a")["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());
    assert_eq!(
        entry(&es, "b")["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
}

#[tokio::test]
async fn fields_no_longer_applied_are_removed_unless_shared() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let p = PatchParams::apply("a");
    api.patch(
        "cfg",
        &p,
        &Patch::Apply(cm(json!({"x": "1", "y": "2", "z": "3"}))),
    )
    .await
    .unwrap();
    api.patch(
        "cfg",
        &PatchParams::apply("b"),
        &Patch::Apply(cm(json!({"z": "3"}))),
    )
    .await
    .unwrap();
    let out = api
        .patch("cfg", &p, &Patch::Apply(cm(json!({"x": "1"}))))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["x", "z"]);
}

#[tokio::test]
async fn an_update_takes_ownership_of_what_it_changes() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    api.patch(
        "cfg",
        &PatchParams::apply("a"),
        &Patch::Apply(cm(json!({"k": "1", "j": "2"}))),
    )
    .await
    .unwrap();
    let pp = PatchParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    let out = api
        .patch("cfg", &pp, &Patch::Merge(json!({"data": {"k": "changed"}})))
        .await
        .unwrap();
    let es = entries(&out);
    assert_eq!(entry(&es, "a")["fieldsV1"], json!({"f:data": {"f:j": {}}}));
    let ed = entry(&es, "editor");
    assert_eq!(ed["operation"], "Update");
    assert_eq!(ed["fieldsV1"], json!({"f:data": {"f:k": {}}}));
    let err = api_error(
        api.patch(
            "cfg",
            &PatchParams::apply("a"),
            &Patch::Apply(cm(json!({"k": "1", "j": "2"}))),
        )
        .await,
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.k"
    );
}

#[tokio::test]
async fn dry_run_shows_the_merge_without_storing_it() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let created = api
        .patch(
            "cfg",
            &PatchParams::apply("a"),
            &Patch::Apply(cm(json!({"k": "1"}))),
        )
        .await
        .unwrap();
    let out = api
        .patch(
            "cfg",
            &PatchParams::apply("a").dry_run(),
            &Patch::Apply(cm(json!({"k": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "2");
    let stored = api.get("cfg").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "1");
    assert_eq!(
        stored.metadata.resource_version,
        created.metadata.resource_version
    );
    // A dry-run apply of an absent object creates nothing.
    let mut absent = cm(json!({"k": "1"}));
    absent["metadata"]["name"] = json!("nope");
    api.patch(
        "nope",
        &PatchParams::apply("a").dry_run(),
        &Patch::Apply(absent),
    )
    .await
    .unwrap();
    assert_eq!(s.configmap_names("default").await, ["cfg"]);
}

#[tokio::test]
async fn status_applies_record_the_subresource() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.patch(
        "web",
        &PatchParams::apply("ctrl"),
        &Patch::Apply(deploy(1, "nginx:1")),
    )
    .await
    .unwrap();
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "status": {"replicas": 1, "observedGeneration": 1}});
    let out = api
        .patch_status(
            "web",
            &PatchParams::apply("status-ctrl"),
            &Patch::Apply(status),
        )
        .await
        .unwrap();
    assert_eq!(out.status.as_ref().unwrap().replicas, Some(1));
    let es = entries(&out);
    let e = entry(&es, "status-ctrl");
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:observedGeneration": {}, "f:replicas": {}}})
    );
    // Status in a main-resource apply is neither stored nor owned.
    let mut with_status = deploy(1, "nginx:1");
    with_status["status"] = json!({"replicas": 7});
    let out = api
        .patch(
            "web",
            &PatchParams::apply("ctrl"),
            &Patch::Apply(with_status),
        )
        .await
        .unwrap();
    assert_eq!(out.status.as_ref().unwrap().replicas, Some(1));
    assert!(entry(&entries(&out), "ctrl")["fieldsV1"]
        .get("f:status")
        .is_none());
}

#[tokio::test]
async fn managed_fields_reset_with_an_empty_list() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    api.patch(
        "cfg",
        &PatchParams::apply("a"),
        &Patch::Apply(cm(json!({"k": "1"}))),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "cfg",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": []}})),
        )
        .await
        .unwrap();
    assert!(out.metadata.managed_fields.is_none(), "{:?}", out.metadata);
    let mut c = out.clone();
    c.data.as_mut().unwrap().insert("n".into(), "1".into());
    let out = api
        .replace("cfg", &PostParams::default(), &c)
        .await
        .unwrap();
    assert!(
        out.metadata.managed_fields.is_none(),
        "untracked after reset"
    );
}

#[tokio::test]
async fn apply_options_are_validated_as_upstream() {
    let s = harness::start().await;
    let body = serde_json::to_vec(&cm(json!({"k": "1"}))).unwrap();
    let req = |uri: &str, ct: &str| {
        http::Request::patch(uri)
            .header("content-type", ct)
            .body(body.clone())
            .unwrap()
    };
    let base = "/api/v1/namespaces/default/configmaps/cfg";
    let (code, st) = s.raw(req(base, "application/apply-patch+yaml")).await;
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let (code, st) = s
        .raw(req(
            &format!("{base}?force=true"),
            "application/merge-patch+json",
        ))
        .await;
    assert_eq!(code, 422, "{st}");
    assert!(st["message"].as_str().unwrap().contains("force: Forbidden"));
    // YAML bodies work, and the kind must match the URL.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: '1'\n";
    let r = http::Request::patch(format!("{base}?fieldManager=y"))
        .header("content-type", "application/apply-patch+yaml")
        .body(yaml.as_bytes().to_vec())
        .unwrap();
    let (code, obj) = s.raw(r).await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["k"], "1");
    let wrong = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cfg\n";
    let r = http::Request::patch(format!("{base}?fieldManager=y"))
        .header("content-type", "application/apply-patch+yaml")
        .body(wrong.as_bytes().to_vec())
        .unwrap();
    let (code, st) = s.raw(r).await;
    assert_eq!(code, 400, "{st}");
    assert_eq!(st["message"], "invalid object type: /v1, Kind=Secret");
    let managed = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  managedFields: []\n";
    let r = http::Request::patch(format!("{base}?fieldManager=y"))
        .header("content-type", "application/apply-patch+yaml")
        .body(managed.as_bytes().to_vec())
        .unwrap();
    let (code, st) = s.raw(r).await;
    assert_eq!(code, 400, "{st}");
    assert_eq!(st["message"], "metadata.managedFields must be nil");
}

#[tokio::test]
async fn two_controllers_share_a_list_map() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.patch(
        "web",
        &PatchParams::apply("a"),
        &Patch::Apply(deploy(1, "nginx:1")),
    )
    .await
    .unwrap();
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"}]}}}});
    let out = api
        .patch("web", &PatchParams::apply("b"), &Patch::Apply(sidecar))
        .await
        .unwrap();
    let names: Vec<String> = out
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["nginx", "proxy"]);
    // Creating through update records an Update entry with upstream's "." marks.
    let cms: Api<ConfigMap> = s.api("default");
    let c: ConfigMap = serde_json::from_value(cm(json!({"k": "v"}))).unwrap();
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    let created = cms.create(&pp, &c).await.unwrap();
    assert_eq!(
        entry(&entries(&created), "creator")["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}})
    );
}

#[tokio::test]
async fn apply_create_goes_through_create_admission() {
    let s = harness::start().await;
    // Namespace lifecycle: no object appears in a namespace that does not exist.
    let missing: Api<ConfigMap> = s.api("no-such-ns");
    let err = api_error(
        missing
            .patch(
                "cfg",
                &PatchParams::apply("ctrl"),
                &Patch::Apply(cm(json!({"a": "1"}))),
            )
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert!(err.message.contains("no-such-ns"), "{}", err.message);

    // Allocation: a Service created by apply gets its cluster IP like a POST.
    let svcs: Api<k8s_openapi::api::core::v1::Service> = s.api("default");
    let svc = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "applied"},
        "spec": {"ports": [{"port": 80}]}
    });
    let out = svcs
        .patch("applied", &PatchParams::apply("ctrl"), &Patch::Apply(svc))
        .await
        .unwrap();
    let ip = out.spec.unwrap().cluster_ip.unwrap_or_default();
    assert!(ip.starts_with("10.0.0."), "cluster IP {ip:?}");
    assert_eq!(
        out.metadata.managed_fields.unwrap()[0].operation.as_deref(),
        Some("Apply")
    );
}
