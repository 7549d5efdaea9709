//! certificates.k8s.io, flowcontrol bootstrap objects, admissionregistration
//! and the create-only review APIs, through `kube::Api`s and raw requests.

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error};

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

pub fn csr_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["bob".to_string()]).unwrap();
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn csr(name: &str, request: &str) -> CertificateSigningRequest {
    from(json!({"metadata": {"name": name}, "spec": {
        "request": request, "signerName": "kubernetes.io/kube-apiserver-client",
        "usages": ["client auth"], "username": "mallory"}}))
}

#[tokio::test]
async fn csr_requestor_approval_and_immutable_spec() {
    let s = harness::start().await;
    let api: Api<CertificateSigningRequest> = s.cluster();
    let created = api
        .create(&PostParams::default(), &csr("c1", &csr_pem()))
        .await
        .unwrap();
    // The requestor is the authenticated user, not what the body claimed.
    assert_eq!(created.spec.username.as_deref(), Some("kubernetes-admin"));
    assert!(created
        .spec
        .groups
        .unwrap()
        .contains(&"system:masters".to_string()));

    // The main resource cannot change the spec or the conditions.
    let patch =
        json!({"spec": {"signerName": "example.com/other"}, "metadata": {"labels": {"a": "b"}}});
    let patched = api
        .patch("c1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        patched.spec.signer_name,
        "kubernetes.io/kube-apiserver-client"
    );
    assert_eq!(patched.metadata.labels.clone().unwrap()["a"], "b");

    // PUT to /approval, as `kubectl certificate approve` does.
    let mut approved = serde_json::to_value(&patched).unwrap();
    approved["status"] =
        json!({"conditions": [{"type": "Approved", "reason": "Test", "message": "ok"}]});
    let body = serde_json::to_vec(&approved).unwrap();
    let (code, out) = s
        .send_json(
            "PUT",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/c1/approval",
            body,
        )
        .await;
    assert_eq!(code, 200, "{out}");
    let cond = &out["status"]["conditions"][0];
    assert_eq!(
        (cond["type"].as_str(), cond["status"].as_str()),
        (Some("Approved"), Some("True"))
    );
    assert!(cond["lastUpdateTime"].is_string());

    // /status may not remove the approval.
    let mut cleared = out.clone();
    cleared["status"] = json!({});
    let (code, err) = s
        .send_json(
            "PUT",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/c1/status",
            serde_json::to_vec(&cleared).unwrap(),
        )
        .await;
    assert_eq!(code, 422, "{err}");
    assert_eq!(
        err["details"]["causes"][0]["message"],
        "Forbidden: updates may not remove a condition of type \"Approved\""
    );
}

#[tokio::test]
async fn csr_with_bad_request_is_invalid() {
    let s = harness::start().await;
    let api: Api<CertificateSigningRequest> = s.cluster();
    let bad = base64::engine::general_purpose::STANDARD.encode("not a pem");
    let err = api_error(api.create(&PostParams::default(), &csr("bad", &bad)).await);
    assert_eq!(err.code, 422);
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.field, "spec.request");
    assert!(
        cause
            .message
            .ends_with("PEM block type must be CERTIFICATE REQUEST"),
        "{cause:?}"
    );
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        0
    );
}

#[tokio::test]
async fn flowcontrol_bootstrap_objects_exist() {
    let s = harness::start().await;
    let levels: Api<PriorityLevelConfiguration> = s.cluster();
    let names: Vec<String> = levels
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .collect();
    for want in [
        "catch-all",
        "exempt",
        "global-default",
        "leader-election",
        "node-high",
        "system",
        "workload-high",
        "workload-low",
    ] {
        assert!(
            names.contains(&want.to_string()),
            "{want} missing from {names:?}"
        );
    }
    let schemas: Api<FlowSchema> = s.cluster();
    let exempt = schemas.get("exempt").await.unwrap();
    assert_eq!(exempt.spec.as_ref().unwrap().matching_precedence, Some(1));
    let cond = &exempt.status.unwrap().conditions.unwrap()[0];
    assert_eq!(
        (cond.type_.as_deref(), cond.status.as_deref()),
        (Some("Dangling"), Some("False"))
    );
    assert_eq!(
        schemas
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        13
    );
    let bad: FlowSchema = from(
        json!({"metadata": {"name": "x"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"},
        "matchingPrecedence": 20000}}),
    );
    let err = api_error(schemas.create(&PostParams::default(), &bad).await);
    assert_eq!(
        err.details.unwrap().causes[0].field,
        "spec.matchingPrecedence"
    );
}

#[tokio::test]
async fn webhook_configuration_defaults_and_validation() {
    let s = harness::start().await;
    let api: Api<ValidatingWebhookConfiguration> = s.cluster();
    let cfg: ValidatingWebhookConfiguration = from(
        json!({"metadata": {"name": "v"}, "webhooks": [{
        "name": "pods.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/validate"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
    );
    let created = api.create(&PostParams::default(), &cfg).await.unwrap();
    let hook = &created.webhooks.unwrap()[0];
    assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(hook.timeout_seconds, Some(10));
    let bad: ValidatingWebhookConfiguration = from(
        json!({"metadata": {"name": "w"}, "webhooks": [{"name": "short",
        "sideEffects": "Some", "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}]}),
    );
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    let fields: Vec<String> = err
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(fields, vec!["webhooks[0].name", "webhooks[0].sideEffects"]);
}

#[tokio::test]
async fn self_subject_review_reports_the_requester() {
    let s = harness::start().await;
    let api: Api<SelfSubjectReview> = s.cluster();
    let review: SelfSubjectReview = from(json!({}));
    let out = api.create(&PostParams::default(), &review).await.unwrap();
    let user = out.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("kubernetes-admin"));
    assert!(user
        .groups
        .unwrap()
        .contains(&"system:authenticated".to_string()));
    // Nothing is stored: the resource has no get or list.
    let (code, _) = s
        .get_json("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn access_reviews_ask_the_authorizer() {
    let s = harness::start().await;
    let sar: Api<SubjectAccessReview> = s.cluster();
    let review: SubjectAccessReview = from(json!({"spec": {"user": "alice",
        "resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}}}));
    let out = sar.create(&PostParams::default(), &review).await.unwrap();
    assert!(!out.status.unwrap().allowed, "RBAC grants alice nothing");
    let master: SubjectAccessReview = from(
        json!({"spec": {"user": "alice", "groups": ["system:masters"],
        "resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}}}),
    );
    let out = sar.create(&PostParams::default(), &master).await.unwrap();
    assert!(out.status.unwrap().allowed);
    let anon: SubjectAccessReview = from(
        json!({"spec": {"user": "system:anonymous", "groups": ["system:unauthenticated"],
        "resourceAttributes": {"verb": "delete", "resource": "pods"}}}),
    );
    assert!(
        !sar.create(&PostParams::default(), &anon)
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );
    let bad: SubjectAccessReview = from(json!({"spec": {"user": "alice"}}));
    let err = api_error(sar.create(&PostParams::default(), &bad).await);
    assert_eq!(
        (err.code, err.details.unwrap().causes[0].field.as_str()),
        (422, "spec.resourceAttributes")
    );

    let ssar: Api<SelfSubjectAccessReview> = s.cluster();
    let mine: SelfSubjectAccessReview =
        from(json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}}));
    assert!(
        ssar.create(&PostParams::default(), &mine)
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );

    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}});
    let (code, out) = s
        .send_json(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["status"]["resourceRules"][0]["verbs"], json!(["*"]));
}

#[tokio::test]
async fn token_review_needs_a_token() {
    let s = harness::start().await;
    let api: Api<TokenReview> = s.cluster();
    let empty: TokenReview = from(json!({"spec": {}}));
    let err = api_error(api.create(&PostParams::default(), &empty).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            400,
            "token is required for TokenReview in authentication.k8s.io"
        )
    );
    let unknown: TokenReview = from(json!({"spec": {"token": "nope"}}));
    let out = api.create(&PostParams::default(), &unknown).await.unwrap();
    assert_eq!(out.status.unwrap().authenticated, Some(false));
}
