//! The receiving side of aggregation: request header (front-proxy)
//! authentication, served by a second listener on the test's server with
//! `--requestheader-*` settings, and the
//! `kube-system/extension-apiserver-authentication` ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kapi_aggregator::authinfo;
use kapi_auth::authn::requestheader::{CertVerifier, RequestHeader, RequestHeaderConfig};
use kapi_auth::authn::Authenticator;
use kapi_server::tls;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::Value;

use crate::extension_server::{certs, leaves, Certs};
use crate::harness;

/// A client presenting `cert` to `url`, trusting `server_ca`.
async fn client(url: &str, server_ca: &str, cert: &Certs) -> Client {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: t\n\
         clusters: [{{name: c, cluster: {{server: \"{url}\", certificate-authority-data: {}}}}}]\n\
         users: [{{name: u, user: {{client-certificate-data: {}, client-key-data: {}}}}}]\n\
         contexts: [{{name: t, context: {{cluster: c, user: u}}}}]\n",
        b64(server_ca),
        b64(&cert.cert),
        b64(&cert.key)
    );
    let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    config.default_retry = false;
    Client::try_from(config).unwrap()
}

/// POST a SelfSubjectReview with `headers`; the status code and the user.
async fn whoami(client: &Client, headers: &[(&str, &str)]) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    let mut req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec();
    let resp = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, v["status"]["userInfo"].clone())
}

#[tokio::test]
async fn front_proxy_headers_name_the_user_only_with_a_trusted_allowed_certificate() {
    let mut proxies = leaves(None, &["front-proxy-client", "intruder"]);
    let intruder = proxies.pop().unwrap();
    let front_proxy = proxies.pop().unwrap();
    let users = certs(None, "someone");
    let config = RequestHeaderConfig {
        allowed_names: vec!["front-proxy-client".into()],
        uid_headers: vec!["X-Remote-Uid".into()],
        ..RequestHeaderConfig::with_defaults(front_proxy.ca.clone())
    };
    // What `kube-system/extension-apiserver-authentication` will say.
    let info = authinfo::Info {
        client_ca: users.ca.clone(),
        request_header: Some(config.clone()),
    };
    let s = harness::start_configured(|o| o.aggregator.auth_info = Some(info)).await;
    let auth = Authenticator::new(None, false).with_request_header(
        RequestHeader::new(config.clone()).unwrap(),
        CertVerifier::new(std::slice::from_ref(&users.ca)).unwrap(),
    );
    let serving = certs(Some("127.0.0.1"), "kapi-second");
    let tls_config = tls::server_config(
        &serving.cert,
        &serving.key,
        &[front_proxy.ca.clone(), users.ca.clone()],
    )
    .unwrap();
    let app = s.server.router(Arc::new(auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}",
        listener.local_addr().unwrap().port()
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(tls::serve_tls(listener, tls_config, app, async move {
        let _ = rx.await;
    }));

    let proxy = client(&url, &serving.ca, &front_proxy).await;
    let (code, user) = whoami(
        &proxy,
        &[
            ("X-Remote-User", "carol"),
            ("X-Remote-Uid", "uid-carol"),
            ("X-Remote-Group", "ops"),
            ("X-Remote-Group", "dev"),
            ("X-Remote-Extra-Acme.com%2FProject", "p1"),
        ],
    )
    .await;
    assert_eq!(code, 201, "{user}");
    assert_eq!(user["username"], "carol");
    assert_eq!(user["uid"], "uid-carol", "--requestheader-uid-headers");
    assert_eq!(
        user["groups"],
        serde_json::json!(["ops", "dev", "system:authenticated"])
    );
    assert_eq!(user["extra"]["acme.com/project"], serde_json::json!(["p1"]));

    // The front-proxy certificate is no user of its own.
    let (code, _) = whoami(&proxy, &[]).await;
    assert_eq!(code, 401);
    // A user's certificate cannot name another user in headers.
    let someone = client(&url, &serving.ca, &users).await;
    let (code, user) = whoami(&someone, &[("X-Remote-User", "carol")]).await;
    assert_eq!(code, 201);
    assert_eq!(user["username"], "someone");
    // A certificate of the front-proxy CA whose CN is not allowed names no
    // one, and is no user of its own either.
    let intruder = client(&url, &serving.ca, &intruder).await;
    let (code, _) = whoami(&intruder, &[("X-Remote-User", "carol")]).await;
    assert_eq!(code, 401);
    drop(tx);

    // The ConfigMap extension servers read.
    let mut data = Value::Null;
    for _ in 0..200 {
        let (code, cm) = s
            .get_json(
                "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
            )
            .await;
        if code == 200 {
            data = cm["data"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(data["client-ca-file"], users.ca.as_str());
    assert_eq!(
        data["requestheader-client-ca-file"],
        front_proxy.ca.as_str()
    );
    assert_eq!(
        data["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        "[\"X-Remote-Extra-\"]"
    );
}
