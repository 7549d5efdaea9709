//! API Priority and Fairness, continued: the bootstrap ensurer re-creates
//! deleted configuration objects and forces mandatory specs back (suggested
//! ones by their `autoupdate-spec` annotation), and the seat metrics upstream
//! exports.

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
    // 600 seats shared by shares: global-default has 20 of 245 → ceil(48.98)
    // = 49; it lends 50 % (round(24.5) = 25 seats) and may borrow up to the
    // server's limit.
    let of = |family: &str| {
        metric(
            &text,
            &format!("apiserver_flowcontrol_{family}{{priority_level=\"global-default\"}}"),
        )
    };
    for (family, seats) in [
        ("nominal_limit_seats", 49.0),
        ("request_concurrency_limit", 49.0),
        ("lower_limit_seats", 24.0),
        ("upper_limit_seats", 649.0),
    ] {
        assert_eq!(of(family), seats, "{family}\n{text}");
    }
    let current = of("current_limit_seats");
    assert!((24.0..=649.0).contains(&current), "{current}");
    // The current limits share the sum of the nominal limits (605 here).
    let sum: f64 = text
        .lines()
        .filter(|l| l.starts_with("apiserver_flowcontrol_current_limit_seats{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!((600.0..=610.0).contains(&sum), "{sum}\n{text}");
    for family in [
        "target_seats",
        "demand_seats_high_watermark",
        "demand_seats_average",
        "demand_seats_smoothed",
    ] {
        assert!(
            text.contains(&format!("apiserver_flowcontrol_{family}{{")),
            "{family}"
        );
    }
    assert!(
        text.contains("apiserver_flowcontrol_seat_fair_frac "),
        "{text}"
    );
    assert!(
        text.contains("apiserver_flowcontrol_current_executing_seats{"),
        "{text}"
    );
    assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{"));
}

async fn merge_patch(c: &chain::Chain, path: &str, patch: serde_json::Value) -> serde_json::Value {
    let req = axum::http::Request::builder()
        .method("PATCH")
        .uri(path)
        .header("content-type", "application/merge-patch+json")
        .header("authorization", "Bearer admin-token")
        .body(Body::from(patch.to_string()))
        .unwrap();
    let (code, out) = chain::json(c.call(req).await).await;
    assert_eq!(code, 200, "{path}: {out}");
    out
}

/// Poll `path` until `pred` holds.
async fn until(c: &chain::Chain, path: &str, pred: impl Fn(&serde_json::Value) -> bool) {
    for _ in 0..500 {
        let (code, obj) = get(c, path).await;
        if code == 200 && pred(&obj) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "{path} never reached the expected state: {:?}",
        get(c, path).await
    );
}

const AUTO: &str = "apf.kubernetes.io/autoupdate-spec";

#[tokio::test]
async fn mandatory_specs_are_forced_back_and_suggested_ones_follow_their_annotation() {
    let c = chain::start(ChainOptions::default()).await;
    let pl = |name: &str| format!("{FC}/prioritylevelconfigurations/{name}");
    let shares = |o: &serde_json::Value| o["spec"]["limited"]["nominalConcurrencyShares"].clone();
    // An operator opts a suggested level out (annotation false) and edits it;
    // edits the exempt level's two operator fields; edits a suggested level
    // still marked true; and edits the mandatory catch-all level, all in
    // this order (the controller sees them in the same order).
    merge_patch(
        &c,
        &pl("global-default"),
        serde_json::json!({"metadata": {"annotations": {AUTO: "false"}},
            "spec": {"limited": {"nominalConcurrencyShares": 33}}}),
    )
    .await;
    merge_patch(
        &c,
        &pl("exempt"),
        serde_json::json!({"spec": {"exempt": {"nominalConcurrencyShares": 7, "lendablePercent": 10}}}),
    )
    .await;
    merge_patch(
        &c,
        &pl("workload-low"),
        serde_json::json!({"spec": {"limited": {"nominalConcurrencyShares": 7}}}),
    )
    .await;
    let edited = merge_patch(
        &c,
        &pl("catch-all"),
        serde_json::json!({"metadata": {"annotations": {AUTO: "false"}},
            "spec": {"limited": {"nominalConcurrencyShares": 50}}}),
    )
    .await;
    assert_eq!(shares(&edited), 50);
    // Mandatory: the spec and the annotation are forced back.
    until(&c, &pl("catch-all"), |o| {
        shares(o) == 5 && o["metadata"]["annotations"][AUTO] == "true"
    })
    .await;
    // Suggested and still marked true: forced back too.
    until(&c, &pl("workload-low"), |o| shares(o) == 100).await;
    // The controller has seen every edit by now: the opted-out level and the
    // exempt level's operator fields keep their edits.
    let (_, global) = get(&c, &pl("global-default")).await;
    assert_eq!(shares(&global), 33);
    assert_eq!(global["metadata"]["annotations"][AUTO], "false");
    let (_, exempt) = get(&c, &pl("exempt")).await;
    assert_eq!(exempt["spec"]["exempt"]["nominalConcurrencyShares"], 7);
    assert_eq!(exempt["spec"]["exempt"]["lendablePercent"], 10);

    // A mandatory FlowSchema's rules are forced back as well.
    let fs = format!("{FC}/flowschemas/exempt");
    merge_patch(
        &c,
        &fs,
        serde_json::json!({"spec": {"matchingPrecedence": 3}}),
    )
    .await;
    until(&c, &fs, |o| o["spec"]["matchingPrecedence"] == 1).await;
}

#[tokio::test]
async fn objects_marked_for_auto_update_that_are_not_bootstrap_objects_are_deleted() {
    let c = chain::start(ChainOptions::default()).await;
    let fs = |name: &str, auto: &str| {
        serde_json::json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name, "annotations": {AUTO: auto}},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                "matchingPrecedence": 5000, "rules": []}})
    };
    // An operator's object (annotation false) stays; a retired bootstrap
    // object (annotation true, a name no longer in the bootstrap set) goes.
    for (name, auto) in [("operators", "false"), ("retired", "true")] {
        let (code, out) = c
            .send(
                "admin",
                "POST",
                &format!("{FC}/flowschemas"),
                Body::from(fs(name, auto).to_string()),
            )
            .await;
        assert_eq!(code, 201, "{out}");
    }
    let retired = format!("{FC}/flowschemas/retired");
    for _ in 0..500 {
        if get(&c, &retired).await.0 == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(get(&c, &retired).await.0, 404);
    // Seen before "retired" by the controller, and kept.
    assert_eq!(get(&c, &format!("{FC}/flowschemas/operators")).await.0, 200);
}
