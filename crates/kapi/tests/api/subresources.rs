//! The status and scale subresources of a Deployment, and `metadata.generation`.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::defaults::deployment;
use crate::harness::{self, rv};

#[tokio::test]
async fn status_update_changes_status_only() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    let d = api
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();

    let mut body = d.clone();
    body.spec.as_mut().unwrap().replicas = Some(7);
    body.status = Some(DeploymentStatus {
        replicas: Some(3),
        ready_replicas: Some(2),
        ..Default::default()
    });
    let out = api
        .replace_status("web", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(out.spec.as_ref().unwrap().replicas, Some(1), "spec ignored");
    let st = out.status.unwrap();
    assert_eq!(st.replicas, Some(3));
    assert_eq!(st.ready_replicas, Some(2));
    assert_eq!(out.metadata.generation, Some(1));
    assert!(rv(&out.metadata) > rv(&d.metadata));

    let patched = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"availableReplicas": 2}, "spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(1));
    let st = patched.status.unwrap();
    assert_eq!(st.available_replicas, Some(2));
    assert_eq!(st.replicas, Some(3));
}

#[tokio::test]
async fn main_update_cannot_change_status() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    api.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let mut d = api.get("web").await.unwrap();
    d.status.as_mut().unwrap().replicas = Some(42);
    d.spec.as_mut().unwrap().replicas = Some(2);
    let out = api
        .replace("web", &PostParams::default(), &d)
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(2));
    assert_eq!(out.status.unwrap().replicas, Some(1));
}

#[tokio::test]
async fn generation_bumps_on_spec_and_annotation_changes_only() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    let d = api
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    let labelled = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(1));
    let status = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(status.metadata.generation, Some(1));
    // Annotations count too (the controller copies them to ReplicaSets),
    // but not when a status write brings them.
    let annotated = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(annotated.metadata.generation, Some(2));
    let status = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"x": "z"}}})),
        )
        .await
        .unwrap();
    assert_eq!(status.metadata.generation, Some(2));
    assert_eq!(status.metadata.annotations.unwrap()["x"], "z");
    let scaled = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(3));
}

#[tokio::test]
async fn scale_get_and_patch() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    api.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));

    let out = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(4));
    let d = api.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(4));
    assert_eq!(d.metadata.generation, Some(2));
}
