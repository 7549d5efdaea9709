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

pub(crate) async fn create_cm(
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
