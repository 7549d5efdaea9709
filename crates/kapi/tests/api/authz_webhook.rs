//! Webhook authorization end to end: a SubjectAccessReview webhook written
//! for the tests (`https_fixture.rs`) in the `--authorization-mode` chain
//! (v1beta1, as the flag's default) and in `--authorization-config` chains
//! (v1, match conditions, failure policies, caches, the file reloaded).
//!
//! The webhook allows user `hook-allowed`, denies `hook-denied` ("denied by
//! hook") and has no opinion on anyone else (`hook-none`); the three have
//! static tokens (`harness::TOKENS`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kapi_auth::authz::{self, Mode};
use serde_json::{json, Value};

use super::authn_jwt::eventually;
use super::harness::{self, TestServer};
use super::https_fixture::{HttpsServer, Recorded};

async fn sar_hook() -> HttpsServer {
    HttpsServer::start(Arc::new(|r: &Recorded| {
        let spec = &r.body["spec"];
        let status = match spec["user"].as_str() {
            Some("hook-allowed") => json!({"allowed": true, "reason": "allowed by hook"}),
            Some("hook-denied") => json!({"allowed": false, "denied": true, "reason": "denied by hook"}),
            _ => json!({"allowed": false}),
        };
        let out = json!({"apiVersion": r.body["apiVersion"], "kind": "SubjectAccessReview", "status": status});
        (200, out.to_string())
    }))
    .await
}

/// GET the configmaps of `default` as `token`: (code, body).
async fn list_as(s: &TestServer, token: &str) -> (u16, Value) {
    let client = s.client_with_token(token).await;
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let code = resp.status().as_u16();
    use http_body_util::BodyExt as _;
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn webhook_mode_in_the_chain() {
    let hook = sar_hook().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = hook.kubeconfig(dir.path(), "authz", "/authorize", None);
    let conn = kapi_client::kubeconfig::load(&kubeconfig).unwrap();
    let settings = authz::webhook::Settings::from_flags(
        "v1beta1",
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    );
    let webhook = Arc::new(authz::webhook::Webhook::new(conn, settings).unwrap());
    let s = harness::start_configured(|o| {
        o.authorization_modes = vec![Mode::Webhook, Mode::Rbac];
        o.authorization_webhook = Some(webhook);
    })
    .await;
    assert_eq!(list_as(&s, "allowed-token").await.0, 200);
    let (code, body) = list_as(&s, "denied-token").await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"hook-denied\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": denied by hook"
    );
    // No opinion: RBAC decides (nothing granted).
    assert_eq!(list_as(&s, "none-token").await.0, 403);
    let calls = hook.calls_to("/authorize");
    let review = calls
        .iter()
        .find(|c| c.body["spec"]["user"] == "hook-none")
        .expect("reviewed");
    assert_eq!(review.body["apiVersion"], "authorization.k8s.io/v1beta1");
    // v1beta1 names the groups field `group`.
    assert_eq!(
        review.body["spec"]["group"],
        json!(["team", "system:authenticated"])
    );
    assert_eq!(
        review.body["spec"]["resourceAttributes"],
        json!({"namespace": "default", "verb": "list", "version": "v1", "resource": "configmaps"})
    );
    // Answers are cached: asking again does not call the webhook.
    let before = hook.calls_to("/authorize").len();
    assert_eq!(list_as(&s, "allowed-token").await.0, 200);
    assert_eq!(list_as(&s, "denied-token").await.0, 403);
    assert_eq!(hook.calls_to("/authorize").len(), before);
    // system:masters never reaches the webhook.
    s.configmap_names("default").await;
    assert_eq!(hook.calls_to("/authorize").len(), before);
}

fn config_file(
    dir: &Path,
    hook: &HttpsServer,
    webhook_extra: &str,
    rest: &str,
) -> std::path::PathBuf {
    let kubeconfig = hook.kubeconfig(dir, "authz", "/authorize", None);
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: hook\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {}}}\n{webhook_extra}{rest}",
        kubeconfig.display()
    );
    let path = dir.join("authz.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn server_with_config(path: &Path) -> TestServer {
    let file = authz::structured::ConfigFile::load(path).expect("valid configuration");
    harness::start_configured(|o| {
        o.authorization_config = Some(file);
    })
    .await
}

/// Let `hook-none` list configmaps in `default` through RBAC.
async fn grant_rbac(s: &TestServer) {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cm-reader", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "User", "name": "hook-none", "apiGroup": "rbac.authorization.k8s.io"}]});
    let base = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let (c1, _) = s
        .send_json(
            "POST",
            &format!("{base}/roles"),
            role.to_string().into_bytes(),
        )
        .await;
    let (c2, _) = s
        .send_json(
            "POST",
            &format!("{base}/rolebindings"),
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!((c1, c2), (201, 201));
}

#[tokio::test]
async fn structured_chain_match_conditions_and_reload() {
    let hook = sar_hook().await;
    let dir = tempfile::tempdir().unwrap();
    let conditions = "    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    matchConditions:\n    - expression: \"has(request.resourceAttributes) && request.resourceAttributes.resource == 'configmaps'\"\n    - expression: \"request.user != 'hook-skip'\"\n";
    let path = config_file(
        dir.path(),
        &hook,
        conditions,
        "- {type: Node, name: node}\n- {type: RBAC, name: rbac}\n",
    );
    let s = server_with_config(&path).await;
    assert_eq!(list_as(&s, "allowed-token").await.0, 200);
    assert_eq!(list_as(&s, "denied-token").await.0, 403);
    let review = &hook.calls_to("/authorize")[0];
    assert_eq!(review.body["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(
        review.body["spec"]["groups"],
        json!(["system:authenticated"])
    );
    // A request the conditions do not match never reaches the webhook.
    let calls = hook.calls_to("/authorize").len();
    let client = s.client_with_token("allowed-token").await;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client, "default");
    let err = secrets.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
    assert_eq!(hook.calls_to("/authorize").len(), calls);
    // Reload: the webhook leaves the chain; AlwaysAllow takes its place.
    std::fs::write(
        &path,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- {type: AlwaysAllow, name: everyone}\n",
    )
    .unwrap();
    eventually("reloaded chain", || async {
        (list_as(&s, "denied-token").await.0 == 200).then_some(())
    })
    .await;
    // An invalid file is refused and the running chain stays.
    std::fs::write(&path, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers: []\n").unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(list_as(&s, "denied-token").await.0, 200);
}

#[tokio::test]
async fn failure_policies() {
    let hook = sar_hook().await;
    let dir = tempfile::tempdir().unwrap();
    // An unreachable webhook with NoOpinion: RBAC still decides.
    let path = config_file(
        dir.path(),
        &hook,
        "    failurePolicy: NoOpinion\n",
        "- {type: RBAC, name: rbac}\n",
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let kubeconfig = dir.path().join("authz.kubeconfig");
    let down = std::fs::read_to_string(&kubeconfig)
        .unwrap()
        .replace(&format!("127.0.0.1:{}", hook.port), "127.0.0.1:1");
    std::fs::write(dir.path().join("down.kubeconfig"), down).unwrap();
    std::fs::write(&path, text.replace("authz.kubeconfig", "down.kubeconfig")).unwrap();
    let s = server_with_config(&path).await;
    grant_rbac(&s).await;
    assert_eq!(list_as(&s, "none-token").await.0, 200);
    // Nothing allows: the webhook's failure makes it the server's error.
    let (code, body) = list_as(&s, "denied-token").await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(body["reason"], "InternalError");
    // Deny: the webhook's failure decides, RBAC is not asked.
    let deny = std::fs::read_to_string(&path)
        .unwrap()
        .replace("NoOpinion", "Deny");
    std::fs::write(&path, deny).unwrap();
    let s = server_with_config(&path).await;
    grant_rbac(&s).await;
    let (code, body) = list_as(&s, "none-token").await;
    assert_eq!(code, 500, "{body}");
}
