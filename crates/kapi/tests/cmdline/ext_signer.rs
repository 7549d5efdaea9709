//! `--service-account-signing-endpoint` (feature gate
//! `ExternalServiceAccountTokenSigner`): service account tokens signed by an
//! external signer on a unix socket — a small `v1alpha1.ExternalJWTSigner`
//! written for the test, with ECDSA P-256 keys — and verified with the keys
//! it publishes: `kubectl create token` gets a token under the signer's key
//! id, capped at the signer's longest lifetime; the token authenticates; the
//! OIDC key set lists the signer's keys but the one excluded from discovery;
//! after the signer rotates to a key kapi has not seen, its tokens
//! authenticate too (the key cache is filled again on an unknown key id).
//! And the flag refused as upstream refuses it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use kapi_auth::authn::external_signer::api::external_jwt_signer_server::{
    ExternalJwtSigner, ExternalJwtSignerServer,
};
use kapi_auth::authn::external_signer::api::{
    FetchKeysRequest, FetchKeysResponse, Key, MetadataRequest, MetadataResponse, SignJwtRequest,
    SignJwtResponse,
};
use kapi_auth::authn::jwt::{self, SigningKey};
use serde_json::Value;
use tonic::{Request, Response, Status};

use crate::https::Setup;
use crate::proc::{self, run_once};

/// A key of the signer: its id, the key, whether discovery leaves it out.
struct SignerKey {
    kid: String,
    key: SigningKey,
    excluded: bool,
}

fn new_key(kid: &str, excluded: bool) -> SignerKey {
    SignerKey {
        kid: kid.into(),
        key: jwt::parse_signing_key(&jwt::generate_ec_pem()).unwrap(),
        excluded,
    }
}

#[derive(Clone)]
struct MockSigner {
    keys: Arc<Mutex<Vec<SignerKey>>>,
    /// Which key signs.
    current: Arc<Mutex<String>>,
    max_seconds: i64,
    fetches: Arc<AtomicUsize>,
}

#[tonic::async_trait]
impl ExternalJwtSigner for MockSigner {
    async fn sign(
        &self,
        req: Request<SignJwtRequest>,
    ) -> Result<Response<SignJwtResponse>, Status> {
        let current = self.current.lock().unwrap().clone();
        let header = B64.encode(format!(
            r#"{{"alg":"ES256","kid":"{current}","typ":"JWT"}}"#
        ));
        let msg = format!("{header}.{}", req.into_inner().claims);
        let keys = self.keys.lock().unwrap();
        let key = keys.iter().find(|k| k.kid == current).unwrap();
        let SigningKey::Ec(pair) = &key.key else {
            unreachable!("P-256 keys")
        };
        let sig = pair
            .sign(&ring::rand::SystemRandom::new(), msg.as_bytes())
            .unwrap();
        Ok(Response::new(SignJwtResponse {
            header,
            signature: B64.encode(sig.as_ref()),
        }))
    }

    async fn fetch_keys(
        &self,
        _: Request<FetchKeysRequest>,
    ) -> Result<Response<FetchKeysResponse>, Status> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let keys = self.keys.lock().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        Ok(Response::new(FetchKeysResponse {
            keys: keys
                .iter()
                .map(|k| Key {
                    key_id: k.kid.clone(),
                    key: kapi_auth::authn::discovery::spki_der(&k.key.verify_key()),
                    exclude_from_oidc_discovery: k.excluded,
                })
                .collect(),
            data_timestamp: Some(prost_types::Timestamp {
                seconds: now.as_secs() as i64,
                nanos: 0,
            }),
            refresh_hint_seconds: 3600,
        }))
    }

    async fn metadata(
        &self,
        _: Request<MetadataRequest>,
    ) -> Result<Response<MetadataResponse>, Status> {
        Ok(Response::new(MetadataResponse {
            max_token_expiration_seconds: self.max_seconds,
        }))
    }
}

/// Serve `signer` on `path` from a runtime of its own (kept alive by the
/// returned runtime).
fn serve(signer: MockSigner, path: &Path) -> tokio::runtime::Runtime {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let path = path.to_owned();
    rt.block_on(async {
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(ExternalJwtSignerServer::new(signer))
                .serve_with_incoming(incoming)
                .await
                .unwrap();
        });
    });
    rt
}

/// Whether `kubectl <args>` succeeded, with its output: stdout when it did,
/// stderr too when it did not.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let (ok, stdout, stderr) = kubectl_streams(kubeconfig, args);
    if ok {
        (true, stdout)
    } else {
        (false, format!("{stdout}{stderr}"))
    }
}

fn kubectl_streams(kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl <args>` until it succeeds (the service account controller makes
/// `default` shortly after the start).
fn kubectl_ok(kubeconfig: &Path, s: &Setup, args: &[&str]) -> String {
    for _ in 0..60 {
        let (ok, text) = kubectl(kubeconfig, args);
        if ok {
            return text.trim().to_owned();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("kubectl {args:?} failed\n{}", s.server.log_text());
}

fn part(token: &str, i: usize) -> Value {
    let seg = token.split('.').nth(i).unwrap();
    serde_json::from_slice(&B64.decode(seg).unwrap()).unwrap()
}

fn admin_kubeconfig(s: &Setup) -> PathBuf {
    let pki = s.pki();
    let path = s.dir.path().join("admin.kubeconfig");
    proc::write_kubeconfig(
        &path,
        &format!("https://127.0.0.1:{}", s.port),
        &pki.join("ca.crt"),
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
    );
    path
}

#[test]
fn tokens_are_signed_and_verified_by_the_external_signer() {
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("signer.sock");
    let signer = MockSigner {
        keys: Arc::new(Mutex::new(vec![
            new_key("key-1", false),
            new_key("legacy", true),
        ])),
        current: Arc::new(Mutex::new("key-1".into())),
        max_seconds: 7200,
        fetches: Arc::new(AtomicUsize::new(0)),
    };
    let _rt = serve(signer.clone(), &sock);
    let s = Setup::start(&[
        "--feature-gates=ExternalServiceAccountTokenSigner=true".into(),
        format!("--service-account-signing-endpoint={}", sock.display()),
        "--service-account-issuer=https://kapi.example".into(),
    ]);
    let kubeconfig = admin_kubeconfig(&s);

    // Asked for ten hours, capped at the signer's two (with upstream's warning).
    kubectl_ok(
        &kubeconfig,
        &s,
        &["get", "serviceaccount", "default", "-n", "default"],
    );
    let (ok, token, warning) = kubectl_streams(
        &kubeconfig,
        &[
            "create",
            "token",
            "default",
            "-n",
            "default",
            "--duration=10h",
        ],
    );
    assert!(ok, "{warning}");
    let token = token.trim().to_owned();
    assert!(
        warning.contains("requested expiration of 36000 seconds shortened to 7200 seconds"),
        "{warning}"
    );
    let (header, claims) = (part(&token, 0), part(&token, 1));
    assert_eq!(header["kid"], "key-1", "{header}");
    assert_eq!(header["alg"], "ES256");
    assert_eq!(claims["iss"], "https://kapi.example");
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 7200, "{claims}");

    // The token is a service account's identity (a kubeconfig with the
    // token alone: a client certificate would authenticate first).
    let token_config = s.dir.path().join("token.kubeconfig");
    let who = |token: &str| {
        let text = serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {
                "server": format!("https://127.0.0.1:{}", s.port),
                "certificate-authority": s.pki().join("ca.crt")}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        })
        .to_string();
        std::fs::write(&token_config, text).unwrap();
        kubectl(
            &token_config,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ],
        )
    };
    let (ok, name) = who(&token);
    assert!(ok, "{name}\n{}", s.server.log_text());
    assert_eq!(name.trim(), "system:serviceaccount:default:default");

    // The OIDC key set: the signer's keys but the excluded one.
    let jwks: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &s,
        &["get", "--raw", "/openid/v1/jwks"],
    ))
    .unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, ["key-1"], "{jwks}");

    // The signer rotates to a key kapi has not fetched: its tokens verify
    // once the cache is filled again.
    let fetched = signer.fetches.load(Ordering::SeqCst);
    signer.keys.lock().unwrap().push(new_key("key-2", false));
    *signer.current.lock().unwrap() = "key-2".into();
    let rotated = kubectl_ok(
        &kubeconfig,
        &s,
        &["create", "token", "default", "-n", "default"],
    );
    assert_eq!(part(&rotated, 0)["kid"], "key-2");
    let (ok, name) = who(&rotated);
    assert!(ok, "{name}\n{}", s.server.log_text());
    assert_eq!(name.trim(), "system:serviceaccount:default:default");
    assert!(signer.fetches.load(Ordering::SeqCst) > fetched);

    // A token of a key the signer never had is refused.
    let forged = {
        let other = new_key("key-1", false);
        let h = B64.encode(r#"{"alg":"ES256","kid":"key-1","typ":"JWT"}"#);
        let msg = format!("{h}.{}", token.split('.').nth(1).unwrap());
        let SigningKey::Ec(pair) = &other.key else {
            unreachable!()
        };
        let sig = pair
            .sign(&ring::rand::SystemRandom::new(), msg.as_bytes())
            .unwrap();
        format!("{msg}.{}", B64.encode(sig.as_ref()))
    };
    let (ok, text) = who(&forged);
    assert!(!ok && text.contains("Unauthorized"), "{text}");
}

#[test]
fn signing_endpoint_refused_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        format!("--cert-dir={}", d.join("certs").display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
    ];
    let start = |extra: &[&str]| {
        let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
        args.extend(extra);
        let (code, _, err) = run_once(d, &args);
        assert_eq!(code, 1, "{err}");
        err
    };
    let err = start(&["--service-account-signing-endpoint=@signer"]);
    assert!(err.contains("setting `--service-account-signing-endpoint` requires enabling ExternalServiceAccountTokenSigner feature gate"), "{err}");
    let err = start(&[
        "--feature-gates=ExternalServiceAccountTokenSigner=true",
        "--service-account-signing-endpoint=@signer",
        "--service-account-key-file=/x.pub",
    ]);
    assert!(err.contains("can't set `--service-account-signing-key-file` and/or `--service-account-key-file` with `--service-account-signing-endpoint` (They are mutually exclusive)"), "{err}");
    let err = start(&[
        "--feature-gates=ExternalServiceAccountTokenSigner=true",
        "--service-account-signing-endpoint=abc",
    ]);
    assert!(
        err.contains("invalid value \"abc\" passed for `--service-account-signing-endpoint`"),
        "{err}"
    );
    // Nothing listens there: the key cache cannot be filled.
    let err = start(&[
        "--feature-gates=ExternalServiceAccountTokenSigner=true",
        &format!(
            "--service-account-signing-endpoint={}",
            d.join("none.sock").display()
        ),
    ]);
    assert!(
        err.contains("while setting up external-jwt-signer: while initially filling key cache"),
        "{err}"
    );
    // The mixed-version proxy's flags need their gate.
    let err = start(&["--peer-ca-file=/ca.crt"]);
    assert!(
        err.contains(
            "--peer-ca-file requires UnknownVersionInteroperabilityProxy feature to be turned on"
        ),
        "{err}"
    );
    let err = start(&["--feature-gates=UnknownVersionInteroperabilityProxy=true"]);
    assert!(err.contains("UnknownVersionInteroperabilityProxy feature requires StorageVersionAPI feature flag to be enabled"), "{err}");
}
