//! `--egress-selector-config-file`: an HTTP CONNECT proxy written for the
//! test runs on loopback and records every CONNECT it tunnels; kapi is given
//! an `EgressSelectorConfiguration` file read by the same loader `kapi serve`
//! uses, and the traffic upstream sends through a selection is seen at the
//! proxy: `pods/log` to the kubelet through `cluster`, an admission webhook's
//! `url` through `controlplane`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;
use kapi_egress::Egress;
use kube::api::{Api, LogParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connect_env::{self, pod};
use crate::webhooks::{configure, hook_spec, url_config};
use crate::{harness, webhook_server};

type Routes = Arc<Mutex<HashMap<(String, u16), u16>>>;

/// The test's proxy: `CONNECT host:port` is tunnelled to the loopback port
/// `routes` maps it to, or to `host:port` itself.
struct Proxy {
    port: u16,
    /// Every CONNECT target, in order.
    seen: Arc<Mutex<Vec<String>>>,
    routes: Routes,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start() -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let routes: Routes = Arc::default();
        let (s, r) = (seen.clone(), routes.clone());
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(tunnel(conn, s.clone(), r.clone()));
            }
        });
        Proxy {
            port,
            seen,
            routes,
            task,
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// An egress selector file whose `name` selection is HTTPConnect to this proxy.
    fn selector(&self, dir: &tempfile::TempDir, name: &str) -> Egress {
        let path = dir.path().join("egress.yaml");
        let text = format!(
            "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
             egressSelections:\n- name: {name}\n  connection:\n    proxyProtocol: HTTPConnect\n\
             \x20   transport:\n      tcp:\n        url: http://127.0.0.1:{}\n",
            self.port
        );
        std::fs::write(&path, text).unwrap();
        Egress::load(&path).expect("a valid egress selector file")
    }
}

async fn tunnel(mut conn: tokio::net::TcpStream, seen: Arc<Mutex<Vec<String>>>, routes: Routes) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read_exact(&mut b).await.is_err() {
            return;
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(target) = head
        .strip_prefix("CONNECT ")
        .and_then(|r| r.split(' ').next())
    else {
        let _ = conn
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            .await;
        return;
    };
    seen.lock().unwrap().push(target.to_owned());
    let (host, port) = target.rsplit_once(':').unwrap();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().unwrap();
    let routed = routes
        .lock()
        .unwrap()
        .get(&(host.to_owned(), port))
        .copied();
    let upstream = match routed {
        Some(local) => tokio::net::TcpStream::connect(("127.0.0.1", local)).await,
        None => tokio::net::TcpStream::connect((host, port)).await,
    };
    let Ok(mut upstream) = upstream else {
        let _ = conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if conn
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_ok()
    {
        let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
    }
}

#[tokio::test]
async fn pods_log_reaches_the_kubelet_through_the_cluster_selection() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "cluster");
    let routes = proxy.routes.clone();
    let cluster = egress.cluster();
    let env = connect_env::start_routed(
        move |r| {
            // The proxy, not kapi, knows where the node addresses are.
            *routes.lock().unwrap() = r;
            cluster
        },
        |_| {},
        move |o| o.egress = egress,
    )
    .await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let logs = pods.logs("web", &LogParams::default()).await.unwrap();
    assert_eq!(logs.lines().next(), Some("app line 1"));
    assert_eq!(
        proxy.seen(),
        vec![format!("{}:10250", connect_env::NODE_IP)]
    );
}

#[tokio::test]
async fn admission_webhook_urls_go_through_the_controlplane_selection() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "controlplane");
    let ts = harness::start_configured(move |o| o.egress = egress).await;
    let hook = webhook_server::start().await;
    let spec = hook_spec("allow.example.com", url_config(&hook, "/allow"), json!({}));
    configure(&ts, false, "allow", spec).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            cm.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(hook.calls(), vec!["/allow"]);
    assert_eq!(proxy.seen(), vec![format!("127.0.0.1:{}", hook.port)]);
}

#[tokio::test]
async fn a_proxy_that_refuses_fails_the_webhook_call() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "controlplane");
    let ts = harness::start_configured(move |o| o.egress = egress).await;
    let hook = webhook_server::start().await;
    let port = hook.port;
    drop(hook);
    let spec = json!({"name": "gone.example.com",
        "clientConfig": {"url": format!("https://127.0.0.1:{port}/allow")},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"});
    configure(&ts, false, "gone", spec).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            cm.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 500, "{out}");
    let msg = out["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!(
            "proxy error from 127.0.0.1:{} while dialing 127.0.0.1:{port}, code 502",
            proxy.port
        )),
        "{msg}"
    );
}
