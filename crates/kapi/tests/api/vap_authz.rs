//! The CEL `authorizer` of admission expressions and lazy policy variables, end
//! to end: a ValidatingAdmissionPolicy allows a write only when the requesting
//! user (admin, or a token user with or without the RBAC permission) may also
//! delete configmaps there, checks paths and service accounts, and reports the
//! decision from a variable in its messageExpression; a webhook's matchCondition
//! asks about the request's own resource; a variable that fails is only an
//! error when an expression refers to it.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::harness::{self, api_error, configmap, TestServer};
use crate::webhook_server;
use crate::webhooks::{configure, hook_spec, url_config};

const BASE: &str = "/apis/admissionregistration.k8s.io/v1";

async fn post(ts: &TestServer, path: &str, body: Value) {
    let (code, out) = ts
        .send_json("POST", path, body.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{path}: {out}");
}

/// A Role in `ns` with `verbs` on configmaps, bound to user `user`.
async fn grant(ts: &TestServer, ns: &str, user: &str, verbs: &[&str]) {
    let rbac = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}");
    post(
        ts,
        &format!("{rbac}/roles"),
        json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": user, "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]}),
    )
    .await;
    post(
        ts,
        &format!("{rbac}/rolebindings"),
        json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": user, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"kind": "User", "name": user}]}),
    )
    .await;
}

/// A policy on configmap creates with `spec` merged in, and its Deny binding.
async fn policy(ts: &TestServer, name: &str, spec: Value) {
    let mut s = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
    });
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    post(
        ts,
        &format!("{BASE}/validatingadmissionpolicies"),
        json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": s}),
    )
    .await;
    post(
        ts,
        &format!("{BASE}/validatingadmissionpolicybindings"),
        json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}),
    )
    .await;
}

async fn create_as(
    ts: &TestServer,
    token: Option<&str>,
    ns: &str,
    name: &str,
) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = match token {
        Some(t) => Api::namespaced(ts.client_with_token(t).await, ns),
        None => ts.api(ns),
    };
    api.create(&PostParams::default(), &configmap(name, &[]))
        .await
}

/// Wait until `user` may create configmaps in `ns` (the policy is in place
/// before anything is created; RBAC may lag one event behind).
async fn sar_allows(ts: &TestServer, user: &str, ns: &str, verb: &str) -> bool {
    let (code, out) = ts
        .send_json(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": verb, "resource": "configmaps"}}})
            .to_string()
            .into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    out["status"]["allowed"] == true
}

#[tokio::test]
async fn policy_asks_the_authorizer_for_the_requesting_user() {
    let ts = harness::start().await;
    let ns = ts.namespace("authz").await;
    grant(&ts, &ns, "alice", &["create"]).await;
    grant(&ts, &ns, "bob", &["create", "delete"]).await;
    let sa = format!(
        "{}/namespaces/{ns}/roles",
        "/apis/rbac.authorization.k8s.io/v1"
    );
    post(
        &ts,
        &sa,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "builder", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await;
    post(
        &ts,
        &sa.replace("/roles", "/rolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "builder", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "builder"},
        "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": ns}]}),
    )
    .await;
    assert!(sar_allows(&ts, "bob", &ns, "delete").await);
    assert!(!sar_allows(&ts, "alice", &ns, "delete").await);

    policy(&ts, "may-delete", json!({
        "variables": [{"name": "del", "expression":
            "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('delete')"}],
        "validations": [
            {"expression": "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('delete').allowed()",
             "messageExpression": "'delete allowed: ' + (variables.del.allowed() ? 'yes' : 'no') + (variables.del.errored() ? ', errored' : '') + ', error: [' + variables.del.error() + ']'"},
            {"expression": "authorizer.path('/healthz').check('get').allowed() && !authorizer.path('/metrics').check('get').allowed() || request.userInfo.username != 'alice' && request.userInfo.username != 'bob'"},
            {"expression": "authorizer.serviceAccount(object.metadata.namespace, 'builder').group('').resource('configmaps').namespace(object.metadata.namespace).check('get').allowed()"},
            {"expression": "!authorizer.serviceAccount(object.metadata.namespace, 'other').group('').resource('configmaps').namespace(object.metadata.namespace).check('get').allowed()"},
        ]})).await;

    create_as(&ts, None, &ns, "by-admin")
        .await
        .expect("admin may delete");
    create_as(&ts, Some("bob-token"), &ns, "by-bob")
        .await
        .expect("bob may delete");
    let e = api_error(create_as(&ts, Some("alice-token"), &ns, "by-alice").await);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(
        e.message,
        "configmaps \"by-alice\" is forbidden: ValidatingAdmissionPolicy 'may-delete' with binding 'may-delete' denied request: delete allowed: no, error: []"
    );
}

#[tokio::test]
async fn authorizer_errors_follow_the_failure_policy() {
    let ts = harness::start().await;
    policy(
        &ts,
        "empty-path",
        json!({
        "validations": [{"expression": "authorizer.path(' ').check('get').allowed()"}]}),
    )
    .await;
    let e = api_error(create_as(&ts, None, "default", "x").await);
    assert_eq!(
        e.message,
        "configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'empty-path' with binding 'empty-path' denied request: expression 'authorizer.path(' ').check('get').allowed()' resulted in error: path must not be empty"
    );
}

#[tokio::test]
async fn variables_are_evaluated_only_when_referenced() {
    let ts = harness::start().await;
    policy(
        &ts,
        "lazy",
        json!({
        "variables": [
            {"name": "broken", "expression": "object.data.missing == 'x'"},
            {"name": "size", "expression": "size(object.data)"},
            {"name": "twice", "expression": "variables.size * 2"},
        ],
        "validations": [
            {"expression": "variables.twice == 2"},
            {"expression": "!object.metadata.name.startsWith('use-') || variables.broken"},
        ]}),
    )
    .await;
    create_as(&ts, None, "default", "fine")
        .await
        .expect("broken variable unreferenced");
    let e = api_error(create_as(&ts, None, "default", "use-broken").await);
    assert_eq!(e.code, 422, "{e:?}");
    assert_eq!(
        e.message,
        "configmaps \"use-broken\" is forbidden: ValidatingAdmissionPolicy 'lazy' with binding 'lazy' denied request: expression '!object.metadata.name.startsWith('use-') || variables.broken' resulted in error: composited variable \"broken\" fails to evaluate: no such key: missing"
    );
}

#[tokio::test]
async fn webhook_match_condition_checks_the_request_resource() {
    let ts = harness::start().await;
    let ns = ts.namespace("hooked").await;
    grant(&ts, &ns, "alice", &["create"]).await;
    grant(&ts, &ns, "bob", &["create", "update"]).await;
    assert!(sar_allows(&ts, "bob", &ns, "update").await);
    let hook = webhook_server::start().await;
    let conds = json!({"matchConditions": [
        {"name": "may-update", "expression": "authorizer.requestResource.check('update').allowed()"},
    ]});
    configure(
        &ts,
        false,
        "upd",
        hook_spec("upd.example.com", url_config(&hook, "/deny"), conds),
    )
    .await;
    create_as(&ts, Some("alice-token"), &ns, "by-alice")
        .await
        .expect("alice may not update: the webhook is not called");
    assert!(hook.calls().is_empty());
    let e = api_error(create_as(&ts, Some("bob-token"), &ns, "by-bob").await);
    assert_eq!(e.code, 403, "{e:?}");
    api_error(create_as(&ts, None, &ns, "by-admin").await);
    assert_eq!(hook.calls(), ["/deny", "/deny"]);
    let seen: Vec<String> = hook
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, r)| r["userInfo"]["username"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(seen[0], "bob");
}
