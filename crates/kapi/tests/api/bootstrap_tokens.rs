//! Bootstrap tokens end to end (`--enable-bootstrap-token-auth`): Secrets of
//! type `bootstrap.kubernetes.io/token` in kube-system authenticate their
//! `<id>.<secret>` token as `system:bootstrap:<id>` in `system:bootstrappers`
//! and the extra groups; expired, wrongly typed, unmarked or mistyped tokens
//! are refused. The two controllers kube-controller-manager runs for them:
//! the token cleaner deletes expired token Secrets; the bootstrap signer puts
//! each signing token's detached JWS of `kube-public/cluster-info`'s
//! kubeconfig into `jws-kubeconfig-<id>` — checked here against the format
//! `kubeadm join` recomputes, computed independently (HMAC-SHA256 over
//! `base64url(header) "." base64url(kubeconfig)`).
//!
//! Also `--service-account-lookup`: with it (the default) a legacy token
//! whose Secret is gone is refused; without it the token still works (bound
//! tokens are always checked).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};

use super::authn_jwt::{eventually, whoami};
use super::harness::{self, TestServer};

const ID: &str = "abcdef";
const SECRET: &str = "0123456789abcdef";

fn token_secret(id: &str, fields: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v))))
        .collect();
    json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "data": data})
}

async fn create(s: &TestServer, path: &str, obj: &Value) {
    let (code, body) = s
        .send_json("POST", path, obj.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{body}");
}

const SECRETS: &str = "/api/v1/namespaces/kube-system/secrets";

async fn server() -> TestServer {
    harness::start_configured(|o| o.bootstrap_tokens = true).await
}

#[tokio::test]
async fn bootstrap_tokens_authenticate() {
    let s = server().await;
    let good = [
        ("token-id", ID),
        ("token-secret", SECRET),
        ("usage-bootstrap-authentication", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
        ("expiration", "2099-01-01T00:00:00Z"),
    ];
    create(&s, SECRETS, &token_secret(ID, &good)).await;
    let token = format!("{ID}.{SECRET}");
    let user = eventually("token seen", || async {
        let (code, user) = whoami(&s, &token).await;
        (code == 201).then_some(user)
    })
    .await;
    assert_eq!(user["username"], "system:bootstrap:abcdef");
    assert_eq!(
        user["groups"],
        json!([
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated"
        ])
    );
    // The wrong secret, or a malformed token.
    assert_eq!(whoami(&s, &format!("{ID}.0123456789abcdee")).await.0, 401);
    assert_eq!(whoami(&s, "abcdef.short").await.0, 401);
    // Each broken Secret refuses its token.
    let cases: [(&str, &[(&str, &str)]); 4] = [
        (
            "aaaaaa",
            &[
                ("token-id", "aaaaaa"),
                ("token-secret", SECRET),
                ("usage-bootstrap-authentication", "true"),
                ("expiration", "2000-01-01T00:00:00Z"),
            ],
        ),
        (
            "bbbbbb",
            &[("token-id", "bbbbbb"), ("token-secret", SECRET)],
        ),
        (
            "cccccc",
            &[
                ("token-id", "cccccc"),
                ("token-secret", SECRET),
                ("usage-bootstrap-authentication", "true"),
                ("auth-extra-groups", "system:masters"),
            ],
        ),
        (
            "dddddd",
            &[
                ("token-id", "zzzzzz"),
                ("token-secret", SECRET),
                ("usage-bootstrap-authentication", "true"),
            ],
        ),
    ];
    for (id, fields) in cases {
        create(&s, SECRETS, &token_secret(id, fields)).await;
    }
    let mut opaque = token_secret(
        "eeeeee",
        &[
            ("token-id", "eeeeee"),
            ("token-secret", SECRET),
            ("usage-bootstrap-authentication", "true"),
        ],
    );
    opaque["type"] = json!("Opaque");
    create(&s, SECRETS, &opaque).await;
    for id in ["aaaaaa", "bbbbbb", "cccccc", "dddddd", "eeeeee"] {
        let (code, body) = whoami(&s, &format!("{id}.{SECRET}")).await;
        assert_eq!(code, 401, "{id}: {body}");
    }
}

#[tokio::test]
async fn off_without_the_flag() {
    let s = harness::start().await;
    let fields = [
        ("token-id", ID),
        ("token-secret", SECRET),
        ("usage-bootstrap-authentication", "true"),
    ];
    create(&s, SECRETS, &token_secret(ID, &fields)).await;
    assert_eq!(whoami(&s, &format!("{ID}.{SECRET}")).await.0, 401);
}

/// kubeadm's detached JWS, computed here without kapi's code.
fn expected_signature(content: &str, id: &str, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(format!("{{\"alg\":\"HS256\",\"kid\":\"{id}\"}}"));
    let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(content));
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, input.as_bytes());
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

async fn cluster_info(s: &TestServer) -> Value {
    let (code, cm) = s
        .get_json("/api/v1/namespaces/kube-public/configmaps/cluster-info")
        .await;
    assert_eq!(code, 200, "{cm}");
    cm["data"].clone()
}

#[tokio::test]
async fn signer_and_cleaner() {
    let s = harness::start_with_controllers(&[
        "*",
        "-serviceaccount",
        "-root-ca-cert-publisher",
        "bootstrapsigner",
        "tokencleaner",
    ])
    .await;
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: https://10.0.0.1:6443\n";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cluster-info", "namespace": "kube-public"},
        "data": {"kubeconfig": kubeconfig}});
    create(&s, "/api/v1/namespaces/kube-public/configmaps", &cm).await;
    let signing = [
        ("token-id", ID),
        ("token-secret", SECRET),
        ("usage-bootstrap-signing", "true"),
        ("expiration", "2099-01-01T00:00:00Z"),
    ];
    create(&s, SECRETS, &token_secret(ID, &signing)).await;
    // Not for signing: no signature.
    let auth_only = [
        ("token-id", "ghijkl"),
        ("token-secret", SECRET),
        ("usage-bootstrap-authentication", "true"),
    ];
    create(&s, SECRETS, &token_secret("ghijkl", &auth_only)).await;
    let key = format!("jws-kubeconfig-{ID}");
    let data = eventually("signature written", || async {
        let data = cluster_info(&s).await;
        data.get(&key).is_some().then_some(data)
    })
    .await;
    assert_eq!(data[&key], expected_signature(kubeconfig, ID, SECRET));
    assert!(data.get("jws-kubeconfig-ghijkl").is_none(), "{data}");
    assert_eq!(data["kubeconfig"], kubeconfig);
    // An expired token: the cleaner deletes its Secret, the signer drops its signature.
    let expired = [
        ("token-id", "mnopqr"),
        ("token-secret", SECRET),
        ("usage-bootstrap-signing", "true"),
        ("expiration", "2001-01-01T00:00:00Z"),
    ];
    create(&s, SECRETS, &token_secret("mnopqr", &expired)).await;
    eventually("expired token deleted", || async {
        let (code, _) = s
            .get_json(&format!("{SECRETS}/bootstrap-token-mnopqr"))
            .await;
        (code == 404).then_some(())
    })
    .await;
    let (code, _) = s.get_json(&format!("{SECRETS}/bootstrap-token-{ID}")).await;
    assert_eq!(code, 200, "a valid token stays");
    assert!(cluster_info(&s)
        .await
        .get("jws-kubeconfig-mnopqr")
        .is_none());
    // Deleting the signing token removes its signature.
    let (code, _) = s
        .send_json(
            "DELETE",
            &format!("{SECRETS}/bootstrap-token-{ID}"),
            Vec::new(),
        )
        .await;
    assert_eq!(code, 200);
    eventually("signature removed", || async {
        cluster_info(&s).await.get(&key).is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn service_account_lookup() {
    use kapi_auth::authn::serviceaccount::Issuer;
    for lookup in [true, false] {
        let pem = kapi_auth::authn::jwt::generate_ec_pem();
        let issuer = Issuer::new(&pem, &[], Vec::new(), Vec::new(), true)
            .unwrap()
            .with_lookup(lookup);
        let s = harness::start_configured(|o| o.service_accounts = issuer).await;
        let sa =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
        create(&s, "/api/v1/namespaces/default/serviceaccounts", &sa).await;
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}}});
        create(&s, "/api/v1/namespaces/default/secrets", &secret).await;
        // The token controller fills the legacy token in.
        let token = eventually("legacy token filled", || async {
            let (_, obj) = s
                .get_json("/api/v1/namespaces/default/secrets/robot-token")
                .await;
            let t = obj.pointer("/data/token")?.as_str()?;
            String::from_utf8(STANDARD.decode(t).ok()?).ok()
        })
        .await;
        let (code, user) = whoami(&s, &token).await;
        assert_eq!(code, 201, "{user}");
        assert_eq!(user["username"], "system:serviceaccount:default:robot");
        let (code, _) = s
            .send_json(
                "DELETE",
                "/api/v1/namespaces/default/secrets/robot-token",
                Vec::new(),
            )
            .await;
        assert_eq!(code, 200);
        let want = if lookup { 401 } else { 201 };
        eventually("lookup decides", || async {
            (whoami(&s, &token).await.0 == want).then_some(())
        })
        .await;
    }
}
