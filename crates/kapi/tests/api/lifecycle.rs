//! Deletion: finalizers, graceful pod deletion, namespace termination.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::defaults::pod;
use crate::harness::{self, api_error, configmap};

#[tokio::test]
async fn finalizer_holds_object_until_removed() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut cm = configmap("fin", &[]);
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();

    api.delete("fin", &DeleteParams::default()).await.unwrap();
    let marked = api.get("fin").await.expect("still there");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.metadata.finalizers,
        Some(vec!["example.com/hold".to_string()])
    );

    api.patch(
        "fin",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let err = api_error(api.get("fin").await);
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn unscheduled_pod_is_deleted_immediately_despite_grace_period() {
    let s = harness::start().await;
    let api: Api<Pod> = s.api("default");
    api.create(&PostParams::default(), &pod("p", &["nginx"]))
        .await
        .unwrap();
    api.delete("p", &DeleteParams::default().grace_period(30))
        .await
        .unwrap();
    let err = api_error(api.get("p").await);
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn scheduled_pod_is_deleted_gracefully() {
    let s = harness::start().await;
    let api: Api<Pod> = s.api("default");
    let mut p = pod("bound", &["nginx"]);
    p.spec.as_mut().unwrap().node_name = Some("node-1".into());
    api.create(&PostParams::default(), &p).await.unwrap();
    api.delete("bound", &DeleteParams::default().grace_period(30))
        .await
        .unwrap();
    let got = api.get("bound").await.expect("kept for the kubelet");
    assert!(got.metadata.deletion_timestamp.is_some());
    assert_eq!(got.metadata.deletion_grace_period_seconds, Some(30));
    api.delete("bound", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert_eq!(api_error(api.get("bound").await).code, 404);
}

#[tokio::test]
async fn namespace_delete_removes_content_then_namespace() {
    let s = harness::start().await;
    let ns = s.namespace("gone").await;
    let cms: Api<ConfigMap> = s.api(&ns);
    for i in 0..3 {
        cms.create(&PostParams::default(), &configmap(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let pods: Api<Pod> = s.api(&ns);
    pods.create(&PostParams::default(), &pod("p", &["nginx"]))
        .await
        .unwrap();
    let nss: Api<Namespace> = s.cluster();
    nss.delete(&ns, &DeleteParams::default()).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        match nss.get(&ns).await {
            Err(kube::Error::Api(e)) if e.code == 404 => break,
            Ok(n) => {
                assert_eq!(
                    n.status.and_then(|s| s.phase).as_deref(),
                    Some("Terminating")
                );
            }
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "namespace still present");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(s.configmap_names(&ns).await.is_empty());
    let left = pods.list(&Default::default()).await.unwrap();
    assert!(left.items.is_empty());
}
