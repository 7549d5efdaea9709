//! The world the connect-subresource tests run in: a fake kubelet (HTTPS,
//! its own CA, checking kapi's kubelet client certificate) and a plain HTTP
//! "pod" endpoint, both on loopback and reached from kapi through a dialer
//! seam that maps the node address 192.0.2.10 and the pod address
//! 192.0.2.20 (documentation addresses, which the proxy check allows) to
//! them; a node `n1` with that address and a pod bound to it.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_kubelet::{BoxIo, Connector, Dialer, KubeletConfig};
use kapi_testkit::kubelet::{self, FakeKubelet, KubeletOptions};
use serde_json::json;

use crate::harness::{self, TestServer};

pub const NODE_IP: &str = "192.0.2.10";
pub const POD_IP: &str = "192.0.2.20";

/// Routes `host:port` pairs to loopback ports; anything else is refused.
struct MapDialer(HashMap<(String, u16), u16>);

#[async_trait::async_trait]
impl Dialer for MapDialer {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<BoxIo> {
        let Some(local) = self.0.get(&(host.to_owned(), port)) else {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        };
        Ok(Box::new(
            tokio::net::TcpStream::connect(("127.0.0.1", *local)).await?,
        ))
    }
}

pub struct Env {
    pub s: TestServer,
    _workdir: tempfile::TempDir,
    _kubelet: FakeKubelet,
    _pod: FakeKubelet,
    _certs: tempfile::TempDir,
}

/// Start the world; `configure` may change the server options further.
pub async fn start(configure: impl FnOnce(&mut kapi::Options)) -> Env {
    start_with(|_| {}, configure).await
}

/// [`start`] with the kubelet connection changed by `kubelet` first.
pub async fn start_with(
    kubelet: impl FnOnce(&mut KubeletConfig),
    configure: impl FnOnce(&mut kapi::Options),
) -> Env {
    start_routed(|routes| Arc::new(MapDialer(routes)), kubelet, configure).await
}

/// [`start_with`], kapi dialling the fake kubelet and pod through the dialer
/// `dialer` makes of the routes (`(host, port)` → loopback port).
pub async fn start_routed(
    dialer: impl FnOnce(HashMap<(String, u16), u16>) -> Arc<dyn Dialer>,
    kubelet: impl FnOnce(&mut KubeletConfig),
    configure: impl FnOnce(&mut kapi::Options),
) -> Env {
    let certs = tempfile::tempdir().unwrap();
    let pki = kapi_server::tls::load_or_generate(certs.path(), &[NODE_IP.to_owned()]).unwrap();
    let (client_cert, client_key) = pki
        .issue_client_cert("kube-apiserver-kubelet-client", &[])
        .unwrap();
    let write = |name: &str, data: &str| {
        let p = certs.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    };
    let workdir = tempfile::tempdir().unwrap();
    let fake = kubelet::serve(KubeletOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        cert_pem: pki.serving_cert_pem.clone(),
        key_pem: pki.serving_key_pem.clone(),
        client_ca_pem: Some(pki.ca_cert_pem.clone()),
        workdir: workdir.path().to_owned(),
    })
    .await
    .unwrap();
    let pod = kubelet::serve_pod_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut routes = HashMap::new();
    routes.insert((NODE_IP.to_owned(), 10250), fake.addr.port());
    routes.insert((NODE_IP.to_owned(), 4194), pod.addr.port());
    for port in [80, 8080] {
        routes.insert((POD_IP.to_owned(), port), pod.addr.port());
    }
    let mut config = KubeletConfig {
        client_certificate: Some(write("client.crt", &client_cert)),
        client_key: Some(write("client.key", &client_key)),
        certificate_authority: Some(write("ca.crt", &pki.ca_cert_pem)),
        dialer: dialer(routes),
        ..Default::default()
    };
    kubelet(&mut config);
    let connector = Arc::new(Connector::new(config).unwrap());
    let s = harness::start_configured(|o| {
        o.kubelet = connector;
        configure(o);
    })
    .await;
    node(&s, "n1", NODE_IP).await;
    Env {
        s,
        _workdir: workdir,
        _kubelet: fake,
        _pod: pod,
        _certs: certs,
    }
}

pub async fn node(s: &TestServer, name: &str, ip: &str) {
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
    let (code, _) = s
        .send_json("POST", "/api/v1/nodes", body.to_string().into_bytes())
        .await;
    assert_eq!(code, 201);
    let status = json!({"status": {
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "ExternalIP", "address": "198.51.100.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}
    }});
    let req = http::Request::patch(format!("/api/v1/nodes/{name}/status"))
        .header("content-type", "application/merge-patch+json")
        .body(status.to_string().into_bytes())
        .unwrap();
    assert_eq!(s.raw(req).await.0, 200);
}

/// A pod with the given containers, bound to `node` (unscheduled when `None`).
pub async fn pod(s: &TestServer, name: &str, containers: &[&str], node: Option<&str>) {
    let cs: Vec<_> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox", "ports": [{"containerPort": 8080, "name": "http"}]}))
        .collect();
    let mut spec = json!({"containers": cs});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec});
    let (code, v) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/pods",
            body.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    let status =
        json!({"status": {"phase": "Running", "podIP": POD_IP, "podIPs": [{"ip": POD_IP}]}});
    let req = http::Request::patch(format!("/api/v1/namespaces/default/pods/{name}/status"))
        .header("content-type", "application/merge-patch+json")
        .body(status.to_string().into_bytes())
        .unwrap();
    assert_eq!(s.raw(req).await.0, 200);
}
