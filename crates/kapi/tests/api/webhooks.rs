//! Admission webhooks end to end: kapi calls the test webhook of
//! `webhook_server.rs` over HTTPS (verified against its caBundle) with
//! AdmissionReview v1, and obeys its answers: allow, deny, JSON Patch, warnings;
//! the failure policy on an unreachable, slow or misbehaving webhook; namespace
//! and object selectors; matchConditions; dry-run; a webhook reached through a
//! Service and its Endpoints.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::harness::{self, api_error, configmap, TestServer};
use crate::webhook_server;

pub(crate) fn hook_spec(name: &str, client_config: Value, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    h
}

/// Create a webhook configuration (`mutating` or validating) with one webhook.
pub(crate) async fn configure(ts: &TestServer, mutating: bool, name: &str, hook: Value) {
    let (kind, plural) = if mutating {
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        )
    } else {
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        )
    };
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": [hook]});
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let (code, out) = ts
        .send_json("POST", &path, body.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{out}");
}

pub(crate) fn url_config(hook: &webhook_server::Hook, path: &str) -> Value {
    json!({"url": hook.url(path), "caBundle": hook.ca_bundle})
}

async fn create_cm(
    ts: &TestServer,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = ts.api(ns);
    api.create(&PostParams::default(), &configmap(name, labels))
        .await
}

#[tokio::test]
async fn validating_webhook_allows_and_denies_with_its_status() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let allow = hook_spec("allow.example.com", url_config(&hook, "/allow"), json!({}));
    configure(&ts, false, "allow", allow).await;
    create_cm(&ts, "default", "a", &[]).await.expect("allowed");
    let review = hook.last();
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(
        review["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        review["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(review["requestKind"], review["kind"]);
    assert_eq!(review["namespace"], "default");
    assert_eq!(review["name"], "a");
    assert_eq!(review["object"]["data"]["k"], "v");
    assert_eq!(review["dryRun"], false);
    // The options as the request gave them: no fieldManager named, none
    // there (the User-Agent's manager is the managedFields' only).
    assert_eq!(
        review["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})
    );
    assert!(review["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(review["userInfo"]["username"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));

    let deny = hook_spec("deny.example.com", url_config(&hook, "/deny"), json!({}));
    configure(&ts, false, "deny", deny).await;
    let s = api_error(create_cm(&ts, "default", "b", &[]).await);
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        "admission webhook \"deny.example.com\" denied the request: no way"
    );
    assert!(ts.configmap_names("default").await.iter().all(|n| n != "b"));
}

/// A mutating webhook on `hook`'s `/mutate` changes a created ConfigMap,
/// in the answer and in storage.
async fn mutation_is_stored(hook: &webhook_server::Hook) {
    let ts = harness::start().await;
    let m = hook_spec("mutate.example.com", url_config(hook, "/mutate"), json!({}));
    configure(&ts, true, "mutate", m).await;
    let cm = create_cm(&ts, "default", "m", &[]).await.expect("created");
    assert_eq!(cm.data.unwrap()["mutated"], "yes");
    let api: Api<ConfigMap> = ts.api("default");
    assert_eq!(api.get("m").await.unwrap().data.unwrap()["mutated"], "yes");
}

#[tokio::test]
async fn mutating_webhook_patch_is_applied_before_storage() {
    mutation_is_stored(&webhook_server::start().await).await;
}

/// A serving certificate that is self-signed and a CA (`CA:TRUE`, what
/// `openssl req -x509` makes), given as its own `caBundle`: Go's verifier
/// trusts a certificate that is one of the roots, so kube-apiserver calls
/// such a webhook, and so does kapi (WebPKI alone refuses a CA as the
/// server's certificate).
#[tokio::test]
async fn webhook_whose_certificate_is_its_own_ca_is_called() {
    let hook = webhook_server::start_ca_self_signed().await;
    mutation_is_stored(&hook).await;
    assert_eq!(hook.calls(), ["/mutate"]);

    // Its name, validity and usage checks: kapi-client's trust tests.
}

#[tokio::test]
async fn failure_policy_decides_for_unreachable_and_misbehaving_webhooks() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dead = json!({"url": format!("https://127.0.0.1:{port}/x"), "caBundle": hook.ca_bundle});
    let ignore = hook_spec(
        "ignore.example.com",
        dead.clone(),
        json!({"failurePolicy": "Ignore"}),
    );
    configure(&ts, false, "ignore", ignore).await;
    create_cm(&ts, "default", "a", &[])
        .await
        .expect("failure policy Ignore");

    let fail = hook_spec(
        "fail.example.com",
        url_config(&hook, "/bad-uid"),
        json!({"failurePolicy": "Fail"}),
    );
    configure(&ts, false, "fail", fail).await;
    let s = api_error(create_cm(&ts, "default", "b", &[]).await);
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
    assert!(
        s.message.starts_with("Internal error occurred: failed calling webhook \"fail.example.com\": expected response.uid="),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn unreachable_webhook_with_fail_policy_rejects_with_500() {
    let ts = harness::start().await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dead = json!({"url": format!("https://127.0.0.1:{port}/x")});
    configure(
        &ts,
        true,
        "dead",
        hook_spec("dead.example.com", dead, json!({})),
    )
    .await;
    let s = api_error(create_cm(&ts, "default", "a", &[]).await);
    assert_eq!(s.code, 500);
    assert!(
        s.message.starts_with(&format!("Internal error occurred: failed calling webhook \"dead.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/x?timeout=10s\": dial tcp")),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn slow_webhook_times_out() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let slow = hook_spec(
        "slow.example.com",
        url_config(&hook, "/slow"),
        json!({"timeoutSeconds": 1}),
    );
    configure(&ts, false, "slow", slow).await;
    let s = api_error(create_cm(&ts, "default", "a", &[]).await);
    assert_eq!(s.code, 500);
    assert!(
        s.message
            .ends_with("?timeout=1s\": context deadline exceeded"),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn namespace_and_object_selectors_choose_the_requests() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let body = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "prod", "labels": {"env": "prod"}}});
    let (code, _) = ts
        .send_json("POST", "/api/v1/namespaces", body.to_string().into_bytes())
        .await;
    assert_eq!(code, 201);
    ts.namespace("dev").await;
    let by_ns = hook_spec(
        "ns.example.com",
        url_config(&hook, "/deny"),
        json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    );
    configure(&ts, false, "ns", by_ns).await;
    api_error(create_cm(&ts, "prod", "a", &[]).await);
    create_cm(&ts, "dev", "a", &[])
        .await
        .expect("other namespace");

    let by_obj = hook_spec(
        "obj.example.com",
        url_config(&hook, "/deny"),
        json!({"objectSelector": {"matchExpressions": [{"key": "guarded", "operator": "Exists"}]}}),
    );
    configure(&ts, false, "obj", by_obj).await;
    create_cm(&ts, "dev", "b", &[("other", "x")])
        .await
        .expect("unlabelled");
    let s = api_error(create_cm(&ts, "dev", "c", &[("guarded", "1")]).await);
    assert!(
        s.message
            .starts_with("admission webhook \"obj.example.com\""),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn match_conditions_filter_calls() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let conds = json!({"matchConditions": [
        {"name": "deny-prefix", "expression": "object.metadata.name.startsWith('deny-')"},
        {"name": "not-admin", "expression": "request.userInfo.username != 'nobody'"},
    ]});
    configure(
        &ts,
        false,
        "mc",
        hook_spec("mc.example.com", url_config(&hook, "/deny"), conds),
    )
    .await;
    create_cm(&ts, "default", "keep", &[])
        .await
        .expect("condition false");
    api_error(create_cm(&ts, "default", "deny-me", &[]).await);
    assert_eq!(hook.calls(), ["/deny"]);

    // A webhook whose matchCondition does not compile is refused.
    let bad = hook_spec(
        "bad.example.com",
        url_config(&hook, "/deny"),
        json!({"matchConditions": [{"name": "x", "expression": "object.metadata.name.startsWith("}]}),
    );
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bad"}, "webhooks": [bad]});
    let (code, out) = ts
        .send_json(
            "POST",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        out["details"]["causes"][0]["field"],
        "webhooks[0].matchConditions[0].expression"
    );
}

#[tokio::test]
async fn dry_run_requests_reach_side_effect_free_webhooks_only_as_dry_run() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let h = hook_spec(
        "dry.example.com",
        url_config(&hook, "/allow"),
        json!({"sideEffects": "NoneOnDryRun"}),
    );
    configure(&ts, false, "dry", h).await;
    let body = serde_json::to_vec(&configmap("d", &[])).unwrap();
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            body,
        )
        .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(hook.last()["dryRun"], true);
    assert!(ts.configmap_names("default").await.is_empty());
    // Webhooks with side effects cannot be registered through v1.
    let some = hook_spec(
        "some.example.com",
        url_config(&hook, "/allow"),
        json!({"sideEffects": "Some"}),
    );
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "some"}, "webhooks": [some]});
    let (code, _) = ts
        .send_json(
            "POST",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 422);
}

#[tokio::test]
async fn webhook_warnings_become_warning_headers() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    configure(
        &ts,
        false,
        "warn",
        hook_spec("warn.example.com", url_config(&hook, "/warn"), json!({})),
    )
    .await;
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&configmap("w", &[])).unwrap())
        .unwrap();
    let resp = ts
        .client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("transport");
    assert_eq!(resp.status().as_u16(), 201);
    let warnings: Vec<String> = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("careful now")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn service_reference_resolves_through_endpoints() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.port}]}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/services",
            svc.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": hook.port}]}]});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/endpoints",
            ep.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let cc = json!({"service": {"namespace": "default", "name": "hook", "path": "/deny"}, "caBundle": hook.ca_bundle});
    configure(
        &ts,
        false,
        "svc",
        hook_spec("svc.example.com", cc, json!({})),
    )
    .await;
    let s = api_error(create_cm(&ts, "default", "a", &[]).await);
    assert_eq!(
        s.message,
        "admission webhook \"svc.example.com\" denied the request: no way"
    );
    assert_eq!(hook.calls(), ["/deny"]);
}

#[tokio::test]
async fn if_needed_webhooks_run_again_after_a_later_mutation() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let first = hook_spec(
        "a.example.com",
        url_config(&hook, "/allow"),
        json!({"reinvocationPolicy": "IfNeeded"}),
    );
    configure(&ts, true, "a-first", first).await;
    let second = hook_spec("b.example.com", url_config(&hook, "/mutate"), json!({}));
    configure(&ts, true, "b-second", second).await;
    create_cm(&ts, "default", "r", &[]).await.expect("created");
    assert_eq!(hook.calls(), ["/allow", "/mutate", "/allow"]);
    // The reinvoked webhook saw the mutated object.
    assert_eq!(hook.last()["object"]["data"]["mutated"], "yes");
}

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
async fn webhook_configurations_themselves_are_never_sent_to_webhooks() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let everything = json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]});
    configure(
        &ts,
        false,
        "deny-all",
        hook_spec("all.example.com", url_config(&hook, "/deny"), everything),
    )
    .await;
    api_error(create_cm(&ts, "default", "x", &[]).await);
    // The broken configuration can still be removed.
    let (code, out) = ts
        .send_json(
            "DELETE",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny-all",
            Vec::new(),
        )
        .await;
    assert_eq!(code, 200, "{out}");
    create_cm(&ts, "default", "x", &[])
        .await
        .expect("webhook gone");
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
