//! What an AdmissionReview carries to a webhook, compared with
//! kube-apiserver's: the old object of updates and deletes, the options of
//! each write as the request gave them (a delete's as its strategy settled
//! them; a delete-collection's items without a name), and the object at the
//! version a webhook matched.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::harness;
use crate::webhook_server;
use crate::webhooks::{configure, create_cm, hook_spec, url_config};

#[tokio::test]
async fn updates_and_deletes_carry_the_old_object() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let all_ops = json!({"rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    configure(
        &ts,
        false,
        "all",
        hook_spec("all.example.com", url_config(&hook, "/allow"), all_ops),
    )
    .await;
    let api: Api<ConfigMap> = ts.api("default");
    let mut cm = create_cm(&ts, "default", "u", &[]).await.unwrap();
    cm.data.as_mut().unwrap().insert("k".into(), "v2".into());
    let named = PostParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    api.replace("u", &named, &cm).await.expect("update");
    let review = hook.last();
    assert_eq!(review["operation"], "UPDATE");
    assert_eq!(review["object"]["data"]["k"], "v2");
    assert_eq!(review["oldObject"]["data"]["k"], "v");
    assert_eq!(
        review["options"],
        json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "editor"})
    );
    // A patch is admitted with UpdateOptions, carrying the request's
    // fieldValidation (upstream's patchToUpdateOptions).
    let strict = kube::api::PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..Default::default()
    };
    let labels = json!({"metadata": {"labels": {"p": "q"}}});
    api.patch("u", &strict, &kube::api::Patch::Merge(&labels))
        .await
        .expect("patch");
    let review = hook.last();
    assert_eq!(review["operation"], "UPDATE");
    assert_eq!(
        review["options"],
        json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldValidation": "Strict"})
    );
    api.delete("u", &Default::default()).await.expect("delete");
    let review = hook.last();
    assert_eq!(review["operation"], "DELETE");
    assert!(review.get("object").is_none_or(Value::is_null));
    assert_eq!(review["oldObject"]["data"]["k"], "v2");
    assert_eq!(review["options"]["kind"], "DeleteOptions");
}

/// A delete is admitted with its options as the request gave them
/// (`propagationPolicy`, `preconditions`, `orphanDependents`, the grace
/// period); a pod's grace period as its strategy settled it, and a pod
/// deleted at once is admitted when marked and when removed; each item of a
/// delete-collection without a name (the collection's attributes) — as
/// kube-apiserver 1.28.4 sends them.
#[tokio::test]
async fn deletes_are_admitted_with_their_options() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let deletes = json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps", "pods"]}]});
    configure(
        &ts,
        false,
        "deletes",
        hook_spec("deletes.example.com", url_config(&hook, "/allow"), deletes),
    )
    .await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let delete = |path: String, body: Value| {
        let ts = &ts;
        async move {
            let body = if body.is_null() {
                Vec::new()
            } else {
                body.to_string().into_bytes()
            };
            let (code, out) = ts.send_json("DELETE", &path, body).await;
            assert_eq!(code, 200, "{out}");
        }
    };
    let options = |extra: Value| {
        let mut o = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
        o.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        o
    };

    // kubectl delete: the policy in a body.
    create_cm(&ts, "default", "a", &[]).await.unwrap();
    let kubectl =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
    delete(format!("{cms}/a"), kubectl).await;
    assert_eq!(
        hook.last()["options"],
        options(json!({"propagationPolicy": "Background"}))
    );
    assert_eq!(hook.last()["name"], "a");

    // Preconditions, orphanDependents and a dry run.
    let b = create_cm(&ts, "default", "b", &[]).await.unwrap();
    let uid = b.metadata.uid.unwrap();
    let body = json!({"orphanDependents": true, "preconditions": {"uid": uid}, "dryRun": ["All"]});
    delete(format!("{cms}/b"), body).await;
    assert_eq!(
        hook.last()["options"],
        options(
            json!({"dryRun": ["All"], "orphanDependents": true, "preconditions": {"uid": uid}})
        )
    );
    assert_eq!(hook.last()["dryRun"], true);

    // From the query.
    delete(
        format!("{cms}/b?gracePeriodSeconds=0&propagationPolicy=Foreground"),
        Value::Null,
    )
    .await;
    assert_eq!(
        hook.last()["options"],
        options(json!({"gracePeriodSeconds": 0, "propagationPolicy": "Foreground"}))
    );

    // A delete-collection: each item without a name, with the request's options.
    create_cm(&ts, "default", "c1", &[("x", "y")])
        .await
        .unwrap();
    create_cm(&ts, "default", "c2", &[("x", "y")])
        .await
        .unwrap();
    let before = hook.calls().len();
    delete(
        format!("{cms}?labelSelector=x%3Dy&gracePeriodSeconds=5"),
        Value::Null,
    )
    .await;
    let seen = hook.seen.lock().unwrap()[before..].to_vec();
    let mut old: Vec<_> = seen
        .iter()
        .map(|(_, r)| r["oldObject"]["metadata"]["name"].clone())
        .collect();
    old.sort_by_key(|v| v.to_string());
    assert_eq!(old, [json!("c1"), json!("c2")]);
    for (_, r) in &seen {
        assert!(r.get("name").is_none_or(|n| n == ""), "{r}");
        assert_eq!(r["options"], options(json!({"gracePeriodSeconds": 5})));
    }

    // A pod no kubelet runs: kubectl's --now (1 s) is settled to 0, and the
    // pod is admitted when marked and again when removed.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/pods",
            pod.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let before = hook.calls().len();
    let now = json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1, "propagationPolicy": "Background"});
    delete("/api/v1/namespaces/default/pods/p".into(), now).await;
    let seen = hook.seen.lock().unwrap()[before..].to_vec();
    assert_eq!(seen.len(), 2);
    for (_, r) in &seen {
        assert_eq!(
            r["options"],
            options(json!({"gracePeriodSeconds": 0, "propagationPolicy": "Background"}))
        );
    }
    assert!(seen[0].1["oldObject"]["metadata"]
        .get("deletionTimestamp")
        .is_none());
    assert_eq!(
        seen[1].1["oldObject"]["metadata"]["deletionGracePeriodSeconds"],
        0
    );
}

#[tokio::test]
async fn equivalent_match_policy_sends_the_object_at_the_matched_version() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let v1_only = |policy: &str| {
        json!({"matchPolicy": policy, "rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
            "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]})
    };
    configure(
        &ts,
        false,
        "exact",
        hook_spec(
            "exact.example.com",
            url_config(&hook, "/exact"),
            v1_only("Exact"),
        ),
    )
    .await;
    configure(
        &ts,
        false,
        "equiv",
        hook_spec(
            "equiv.example.com",
            url_config(&hook, "/equiv"),
            v1_only("Equivalent"),
        ),
    )
    .await;
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            hpa.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    // Only the Equivalent webhook is called, with the object as autoscaling/v1.
    assert_eq!(hook.calls(), ["/equiv"]);
    let review = hook.last();
    assert_eq!(
        review["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(review["requestKind"]["version"], "v2");
    assert_eq!(review["resource"]["version"], "v1");
    assert_eq!(review["requestResource"]["version"], "v2");
    assert_eq!(review["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        review["object"]["spec"]["targetCPUUtilizationPercentage"],
        60
    );
}
