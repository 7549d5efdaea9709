//! One set of objects through several versions: HorizontalPodAutoscalers stored
//! as `autoscaling/v2` and served as `v1` too (create, read, update, patch, watch
//! and validation in both, with discovery preferring `v2`), and `events.k8s.io/v1`
//! events sharing the core `v1` events.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::autoscaling::{v1, v2};
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::Api;
use serde_json::json;

use crate::harness::{self, api_error};

fn hpa_v2() -> v2::HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]}
    }))
    .unwrap()
}

#[tokio::test]
async fn hpa_is_one_object_in_v1_and_v2() {
    let s = harness::start().await;
    let api2: Api<v2::HorizontalPodAutoscaler> = s.api("default");
    let api1: Api<v1::HorizontalPodAutoscaler> = s.api("default");
    let wp = WatchParams::default().timeout(30).disable_bookmarks();
    let mut events = api1.watch(&wp, "0").await.unwrap().boxed();

    api2.create(&PostParams::default(), &hpa_v2())
        .await
        .unwrap();
    let as_v1 = api1.get("web").await.unwrap();
    let spec1 = as_v1.spec.clone().unwrap();
    assert_eq!(spec1.target_cpu_utilization_percentage, Some(60));
    assert_eq!((spec1.min_replicas, spec1.max_replicas), (Some(2), 5));
    let ann = as_v1.metadata.annotations.clone().unwrap();
    assert!(ann["autoscaling.alpha.kubernetes.io/metrics"].contains("memory"));

    // An update through v1 keeps what only v2 can say.
    let mut changed = as_v1.clone();
    changed.spec.as_mut().unwrap().max_replicas = 7;
    api1.replace("web", &PostParams::default(), &changed)
        .await
        .unwrap();
    let back = api2.get("web").await.unwrap();
    let spec2 = back.spec.unwrap();
    assert_eq!(spec2.max_replicas, 7);
    let metrics = spec2.metrics.unwrap();
    assert_eq!(metrics.len(), 2);
    assert!(metrics
        .iter()
        .any(|m| m.resource.as_ref().unwrap().name == "memory"));
    assert!(back.metadata.annotations.unwrap_or_default().is_empty());

    let patched = api1
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetCPUUtilizationPercentage": 70}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.spec.unwrap().target_cpu_utilization_percentage,
        Some(70)
    );

    let err = api_error(
        api1.patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxReplicas": 0}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.field, "spec.maxReplicas");

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("event in time")
            .expect("no error")
            .expect("open");
        match ev {
            // k8s-openapi checks `apiVersion` when it decodes: these are v1 objects.
            WatchEvent::Added(h) | WatchEvent::Modified(h) => {
                seen.push(h.spec.unwrap().max_replicas)
            }
            _ => {}
        }
    }
    assert_eq!(seen, vec![5, 7, 7]);
    api1.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(api2
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
}

#[tokio::test]
async fn hpa_created_through_v1_gets_the_v2_defaults() {
    let s = harness::start().await;
    let api1: Api<v1::HorizontalPodAutoscaler> = s.api("default");
    let h: v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "w"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3}})).unwrap();
    let created = api1.create(&PostParams::default(), &h).await.unwrap();
    assert_eq!(
        created.spec.unwrap().target_cpu_utilization_percentage,
        Some(80)
    );
    let api2: Api<v2::HorizontalPodAutoscaler> = s.api("default");
    let v2obj = api2.get("w").await.unwrap();
    let m = &v2obj.spec.unwrap().metrics.unwrap()[0];
    assert_eq!(
        m.resource.as_ref().unwrap().target.average_utilization,
        Some(80)
    );

    let (_, group) = s.get_json("/apis/autoscaling").await;
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, vec!["v2", "v1"]);
    let (_, v1_disc) = s.get_json("/apis/autoscaling/v1").await;
    let hpa = v1_disc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "horizontalpodautoscalers")
        .unwrap();
    assert_eq!(hpa["shortNames"], json!(["hpa"]));
}

#[tokio::test]
async fn events_are_shared_between_core_and_events_k8s_io() {
    let s = harness::start().await;
    let core: Api<CoreEvent> = s.api("default");
    let newer: Api<Event> = s.api("default");
    let e: Event = serde_json::from_value(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "started"},
        "eventTime": "2024-01-01T00:00:00.000000Z", "type": "Normal", "reason": "Started", "action": "Start",
        "note": "container started", "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})).unwrap();
    newer.create(&PostParams::default(), &e).await.unwrap();
    let as_core = core.get("started").await.unwrap();
    assert_eq!(as_core.message.as_deref(), Some("container started"));
    assert_eq!(as_core.involved_object.name.as_deref(), Some("p"));
    assert_eq!(
        as_core.reporting_component.as_deref(),
        Some("example.com/ctl")
    );
    let listed = newer.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].note.as_deref(), Some("container started"));

    let mut bad = e.clone();
    bad.metadata.name = Some("bad".into());
    bad.event_time = None;
    let err = api_error(newer.create(&PostParams::default(), &bad).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.details.unwrap().causes[0].field, "eventTime");
    newer
        .delete("started", &DeleteParams::default())
        .await
        .unwrap();
    assert!(core
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
}
