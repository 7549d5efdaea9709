//! PATCH as JSON patch, merge patch and strategic merge patch (server-side
//! apply is `apply.rs`).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::defaults::pod;
use crate::harness::{self, api_error, configmap};

#[tokio::test]
async fn merge_patch_sets_and_removes_keys() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut cm = configmap("m", &[]);
    cm.data.as_mut().unwrap().insert("gone".into(), "1".into());
    api.create(&PostParams::default(), &cm).await.unwrap();
    let out = api
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"new": "n", "gone": null}})),
        )
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data["k"], "v");
    assert_eq!(data["new"], "n");
}

#[tokio::test]
async fn json_patch_applies_operations() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    api.create(&PostParams::default(), &configmap("j", &[]))
        .await
        .unwrap();
    let ops: kube_json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k", "value": "v"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "add", "path": "/data/added", "value": "a"}
    ]))
    .unwrap();
    let out = api
        .patch("j", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data["k"], "w");
    assert_eq!(data["added"], "a");

    let failing: kube_json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k", "value": "nope"}
    ]))
    .unwrap();
    let err = api_error(
        api.patch("j", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await,
    );
    assert_eq!(err.code, 422, "{err:?}");
}

#[tokio::test]
async fn strategic_patch_merges_containers_by_name() {
    let s = harness::start().await;
    let api: Api<Pod> = s.api("default");
    api.create(
        &PostParams::default(),
        &pod("sp", &["nginx:1.25", "redis:7"]),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "sp",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "c1", "image": "redis:8"}
            ]}})),
        )
        .await
        .unwrap();
    let images: Vec<_> = out
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| (c.name, c.image.unwrap()))
        .collect();
    assert_eq!(
        images,
        vec![
            ("c0".to_string(), "nginx:1.25".to_string()),
            ("c1".to_string(), "redis:8".to_string())
        ]
    );
}

#[tokio::test]
async fn strategic_patch_on_deployment_keeps_other_fields() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.create(&PostParams::default(), &crate::defaults::deployment("d"))
        .await
        .unwrap();
    let out = api
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "env": [{"name": "A", "value": "1"}]}
            ]}}}})),
        )
        .await
        .unwrap();
    let c = &out.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx:1.25"));
    assert_eq!(c.env.as_ref().unwrap()[0].value.as_deref(), Some("1"));
}
