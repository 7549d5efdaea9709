//! Admission's audit annotations in the audit log: a webhook's
//! `auditAnnotations` as `<webhook>/<key>`, a mutating webhook's
//! `mutation.webhook.admission.k8s.io/round_0_index_0` (from Metadata) and
//! `patch.webhook.admission.k8s.io/round_0_index_0` (from Request only), and
//! a ValidatingAdmissionPolicy's `auditAnnotations` and `Audit` action, and
//! PodSecurity's `enforce-policy` and `audit-violations`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use kapi_auth::audit::policy::Policy;
use kapi_auth::audit::sink::LogOptions;
use kapi_auth::audit::AuditConfig;
use kapi_server::ChainOptions;
use serde_json::{json, Value};

use crate::chain::{self, configmap, request};
use crate::webhook_server;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Request
    resources: [{group: "", resources: ["configmaps"]}]
    namespaces: ["full"]
  - level: Metadata
    resources: [{group: "", resources: ["configmaps", "pods"]}]
  - level: None
"#;

const ADMISSION: &str = "/apis/admissionregistration.k8s.io/v1";

async fn start() -> (chain::Chain, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("audit.log");
    let opts = ChainOptions {
        audit: Some(AuditConfig {
            policy: Policy::parse(POLICY).expect("policy"),
            log: Some(LogOptions::new(&log)),
            webhook: None,
        }),
        ..ChainOptions::default()
    };
    let c = chain::start_in(dir, opts).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "full"}});
    let (code, out) = c
        .send(
            "admin",
            "POST",
            "/api/v1/namespaces",
            Body::from(ns.to_string()),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    (c, log)
}

async fn post(c: &chain::Chain, path: &str, body: Value) {
    let (code, out) = c
        .send("admin", "POST", path, Body::from(body.to_string()))
        .await;
    assert_eq!(code, 201, "{path}: {out}");
}

/// The ResponseComplete event of the request with audit ID `id`.
async fn completed(log: &Path, id: &str) -> Value {
    for _ in 0..500 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let done = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["auditID"] == id && e["stage"] == "ResponseComplete");
        if let Some(e) = done {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no ResponseComplete event for {id}");
}

/// Create a ConfigMap as alice: status code and the audit ID.
async fn create_cm(c: &chain::Chain, ns: &str, name: &str) -> (u16, String) {
    let uri = format!("/api/v1/namespaces/{ns}/configmaps");
    let resp = c
        .call(request("alice", "POST", &uri, configmap(name)))
        .await;
    let id = resp.headers()["audit-id"].to_str().unwrap().to_owned();
    let code = resp.status().as_u16();
    let _ = chain::text(resp).await;
    (code, id)
}

fn rules() -> Value {
    json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

#[tokio::test]
async fn webhook_annotations_reach_the_audit_event_by_level() {
    let (c, log) = start().await;
    let hook = webhook_server::start().await;
    let config = |path: &str| json!({"url": hook.url(path), "caBundle": hook.ca_bundle});
    let webhook = |name: &str, path: &str| {
        json!({"name": name, "clientConfig": config(path), "rules": rules(),
            "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    };
    post(&c, &format!("{ADMISSION}/mutatingwebhookconfigurations"),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "m"}, "webhooks": [webhook("mutate.example.com", "/mutate")]})).await;
    post(&c, &format!("{ADMISSION}/validatingwebhookconfigurations"),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "v"}, "webhooks": [webhook("annotate.example.com", "/annotate")]})).await;

    // Request level: every annotation.
    let (code, id) = create_cm(&c, "full", "one").await;
    assert_eq!(code, 201);
    let ev = completed(&log, &id).await;
    assert_eq!(ev["level"], "Request");
    let a = &ev["annotations"];
    assert_eq!(a["annotate.example.com/decision"], "fine", "{ev}");
    // An invalid key is left out.
    assert!(a.get("annotate.example.com/bad key!").is_none(), "{a}");
    let mutation: Value = serde_json::from_str(
        a["mutation.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .expect("mutation annotation"),
    )
    .unwrap();
    assert_eq!(
        mutation,
        json!({"configuration": "m", "webhook": "mutate.example.com", "mutated": true})
    );
    let patch: Value = serde_json::from_str(
        a["patch.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .expect("patch annotation"),
    )
    .unwrap();
    assert_eq!(patch["configuration"], "m");
    assert_eq!(patch["webhook"], "mutate.example.com");
    assert_eq!(patch["patchType"], "JSONPatch");
    assert_eq!(
        patch["patch"],
        json!([{"op": "add", "path": "/data/mutated", "value": "yes"}])
    );

    // Metadata level: no patch (it shows the request body).
    let (code, id) = create_cm(&c, "default", "two").await;
    assert_eq!(code, 201);
    let ev = completed(&log, &id).await;
    assert_eq!(ev["level"], "Metadata");
    let a = &ev["annotations"];
    assert_eq!(a["annotate.example.com/decision"], "fine", "{ev}");
    assert!(
        a.get("mutation.webhook.admission.k8s.io/round_0_index_0")
            .is_some(),
        "{a}"
    );
    assert!(
        a.get("patch.webhook.admission.k8s.io/round_0_index_0")
            .is_none(),
        "{a}"
    );
}

#[tokio::test]
async fn policy_audit_annotations_and_audit_failures_reach_the_audit_event() {
    let (c, log) = start().await;
    post(&c, &format!("{ADMISSION}/validatingadmissionpolicies"),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "watcher"},
            "spec": {"matchConstraints": {"resourceRules": rules()},
                "validations": [{"expression": "object.metadata.name != 'flagged'", "message": "flagged name"}],
                "auditAnnotations": [{"key": "seen", "valueExpression": "'name=' + object.metadata.name"}]}})).await;
    post(&c, &format!("{ADMISSION}/validatingadmissionpolicybindings"),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "watcher-binding"},
            "spec": {"policyName": "watcher", "validationActions": ["Audit"]}})).await;

    // The Audit action lets the request through and records the failure.
    let (code, id) = create_cm(&c, "default", "flagged").await;
    assert_eq!(code, 201);
    let ev = completed(&log, &id).await;
    let a = &ev["annotations"];
    assert_eq!(a["watcher/seen"], "name=flagged", "{ev}");
    let failure: Value = serde_json::from_str(
        a["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .expect("failure annotation"),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{"message": "flagged name", "policy": "watcher", "binding": "watcher-binding",
            "expressionIndex": 0, "validationActions": ["Audit"]}])
    );

    // A passing object: the policy's annotation only.
    let (code, id) = create_cm(&c, "default", "fine").await;
    assert_eq!(code, 201);
    let ev = completed(&log, &id).await;
    let a = &ev["annotations"];
    assert_eq!(a["watcher/seen"], "name=fine", "{ev}");
    assert!(
        a.get("validation.policy.admission.k8s.io/validation_failure")
            .is_none(),
        "{a}"
    );
}

#[tokio::test]
async fn pod_security_annotates_the_policy_and_audit_violations() {
    let (c, log) = start().await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "watched",
        "labels": {"pod-security.kubernetes.io/audit": "restricted"}}});
    post(&c, "/api/v1/namespaces", ns).await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    let (code, _) = c
        .send(
            "admin",
            "POST",
            "/api/v1/namespaces/watched/serviceaccounts",
            Body::from(sa.to_string()),
        )
        .await;
    assert!(code == 201 || code == 409, "{code}");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"automountServiceAccountToken": false, "containers": [{"name": "c", "image": "busybox"}]}});
    let uri = "/api/v1/namespaces/watched/pods";
    let resp = c
        .call(request("alice", "POST", uri, Body::from(pod.to_string())))
        .await;
    let id = resp.headers()["audit-id"].to_str().unwrap().to_owned();
    let code = resp.status().as_u16();
    let body = chain::text(resp).await;
    assert_eq!(code, 201, "{body}");
    let ev = completed(&log, &id).await;
    let a = &ev["annotations"];
    assert_eq!(
        a["pod-security.kubernetes.io/enforce-policy"], "privileged:latest",
        "{ev}"
    );
    let violations = a["pod-security.kubernetes.io/audit-violations"]
        .as_str()
        .expect("violations");
    assert!(
        violations.starts_with("would violate PodSecurity \"restricted:latest\": "),
        "{violations}"
    );
}
