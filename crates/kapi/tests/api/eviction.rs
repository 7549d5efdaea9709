//! `pods/eviction` through the kube client: a pod that is not running goes at
//! once; a running pod covered by a budget at zero answers 429 with upstream's
//! message and `DisruptionBudget` cause and stays; once the budget allows a
//! disruption the eviction spends it and deletes the pod.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::harness;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap()
}

async fn running(api: &Api<Pod>, name: &str) {
    api.create(&PostParams::default(), &pod(name))
        .await
        .unwrap();
    let status = json!({"status": {"phase": "Running"}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
}

#[tokio::test]
async fn eviction_honours_disruption_budgets() {
    let s = harness::start().await;
    let pods: Api<Pod> = s.api("default");
    let pdbs: Api<PodDisruptionBudget> = s.api("default");

    // A pending pod ignores budgets.
    pods.create(&PostParams::default(), &pod("pending"))
        .await
        .unwrap();
    pods.evict("pending", &EvictParams::default())
        .await
        .unwrap();

    running(&pods, "web").await;
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({"apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}))
    .unwrap();
    pdbs.create(&PostParams::default(), &pdb).await.unwrap();
    let status = |allowed: i32| {
        Patch::Merge(json!({"status": {"observedGeneration": 1,
        "disruptionsAllowed": allowed, "desiredHealthy": 1, "currentHealthy": 1, "expectedPods": 1}}))
    };
    pdbs.patch_status("web", &PatchParams::default(), &status(0))
        .await
        .unwrap();

    // Raw request: kube's client retries a 429 with backoff for minutes.
    let eviction =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}});
    let path = "/api/v1/namespaces/default/pods/web/eviction";
    let (code, answer) = s
        .send_json("POST", path, serde_json::to_vec(&eviction).unwrap())
        .await;
    assert_eq!(
        (code, answer["reason"].as_str()),
        (429, Some("TooManyRequests"))
    );
    assert_eq!(
        answer["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &answer["details"]["causes"][0];
    assert_eq!(cause["reason"], "DisruptionBudget");
    assert_eq!(
        cause["message"],
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(pods.get("web").await.is_ok());

    pdbs.patch_status("web", &PatchParams::default(), &status(1))
        .await
        .unwrap();
    pods.evict("web", &EvictParams::default()).await.unwrap();
    let names: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(names.is_empty(), "{names:?}");
    let after = pdbs.get_status("web").await.unwrap().status.unwrap();
    assert_eq!(after.disruptions_allowed, 0);
    assert!(after.disrupted_pods.unwrap().contains_key("web"));

    let (_, disc) = s.get_json("/api/v1").await;
    let ev = disc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .unwrap();
    assert_eq!(
        (ev["kind"].clone(), ev["group"].clone(), ev["verbs"].clone()),
        (json!("Eviction"), json!("policy"), json!(["create"]))
    );
}
