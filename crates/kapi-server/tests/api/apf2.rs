//! API Priority and Fairness, continued: the bootstrap ensurer re-creates
//! deleted configuration objects, and the seat metrics upstream exports.

use std::time::Duration;

use axum::body::Body;
use kapi_server::ChainOptions;

use crate::chain::{self, metric};

const FC: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

async fn get(c: &chain::Chain, path: &str) -> (u16, serde_json::Value) {
    c.send("admin", "GET", path, Body::empty()).await
}

/// Poll until `path` exists again with a uid other than `old`.
async fn recreated(c: &chain::Chain, path: &str, old: &str) -> serde_json::Value {
    for _ in 0..500 {
        let (code, obj) = get(c, path).await;
        if code == 200 && obj["metadata"]["uid"] != old {
            return obj;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{path} was not re-created");
}

#[tokio::test]
async fn deleted_bootstrap_objects_are_recreated() {
    let c = chain::start(ChainOptions::default()).await;
    for path in [
        format!("{FC}/flowschemas/catch-all"),
        format!("{FC}/prioritylevelconfigurations/catch-all"),
        format!("{FC}/flowschemas/exempt"),
        // A suggested object is re-created too.
        format!("{FC}/flowschemas/service-accounts"),
    ] {
        let (code, obj) = get(&c, &path).await;
        assert_eq!(code, 200, "{path}: {obj}");
        let uid = obj["metadata"]["uid"].as_str().unwrap().to_owned();
        let (code, out) = c.send("admin", "DELETE", &path, Body::empty()).await;
        assert_eq!(code, 200, "{path}: {out}");
        let again = recreated(&c, &path, &uid).await;
        assert_eq!(
            again["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
            "true"
        );
        let managers: Vec<&str> = again["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["manager"].as_str())
            .collect();
        assert!(
            managers.contains(&"api-priority-and-fairness-config-producer-v1"),
            "{managers:?}"
        );
    }
    // A user's own FlowSchema stays deleted.
    let fs = serde_json::json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "mine"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"},
        "matchingPrecedence": 5000, "rules": []}});
    let (code, out) = c
        .send(
            "admin",
            "POST",
            &format!("{FC}/flowschemas"),
            Body::from(fs.to_string()),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let (code, _) = c
        .send(
            "admin",
            "DELETE",
            &format!("{FC}/flowschemas/mine"),
            Body::empty(),
        )
        .await;
    assert_eq!(code, 200);
    // Wait for the controller to have seen a later change, then check.
    let (_, obj) = get(&c, &format!("{FC}/flowschemas/kube-scheduler")).await;
    let uid = obj["metadata"]["uid"].as_str().unwrap().to_owned();
    c.send(
        "admin",
        "DELETE",
        &format!("{FC}/flowschemas/kube-scheduler"),
        Body::empty(),
    )
    .await;
    recreated(&c, &format!("{FC}/flowschemas/kube-scheduler"), &uid).await;
    assert_eq!(get(&c, &format!("{FC}/flowschemas/mine")).await.0, 404);
}

#[tokio::test]
async fn seat_metrics_are_exported() {
    let c = chain::start(ChainOptions::default()).await;
    let (code, _) = c
        .send(
            "alice",
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Body::empty(),
        )
        .await;
    assert!(code == 200 || code == 403, "{code}");
    let text = c.metrics().await;
    // 600 seats shared by shares: global-default has 20 of 245 → ceil(48.98) = 49.
    for family in [
        "apiserver_flowcontrol_nominal_limit_seats",
        "apiserver_flowcontrol_request_concurrency_limit",
        "apiserver_flowcontrol_current_limit_seats",
    ] {
        assert_eq!(
            metric(
                &text,
                &format!("{family}{{priority_level=\"global-default\"}}")
            ),
            49.0,
            "{family}\n{text}"
        );
    }
    assert!(
        text.contains("apiserver_flowcontrol_current_executing_seats{"),
        "{text}"
    );
    assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{"));
}
