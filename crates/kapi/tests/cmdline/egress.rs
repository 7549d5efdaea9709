//! `--egress-selector-config-file`: a file that cannot work stops the start,
//! naming the flag, the file and the field (upstream's validation message);
//! an `etcd` selection through an HTTP CONNECT proxy carries the etcd
//! client's connections (plain and TLS etcd), seen at a proxy written for
//! the test.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::pki::{self, Ca};
use crate::proc::{self, run_once, Server};

fn start_fails(dir: &Path, extra: &[String]) -> String {
    let mut args: Vec<String> = vec![
        format!("--cert-dir={}", dir.join("certs").display()),
        format!("--data-dir={}", dir.join("data").display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
    ];
    args.extend(extra.iter().cloned());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(dir, &argv);
    assert_eq!(code, 1, "{err}");
    err
}

fn selection(dir: &Path, name: &str, connection: &str) -> String {
    let p = dir.join(format!("{name}.yaml"));
    let text = format!(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
         egressSelections:\n- name: {name}\n  connection: {connection}\n"
    );
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn bad_egress_selector_files_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = selection(
        d,
        "cluster",
        "{proxyProtocol: Direct, transport: {uds: {udsName: /s}}}",
    );
    let err = start_fails(d, &[format!("--egress-selector-config-file={bad}")]);
    assert!(
        err.contains(&format!(
            "--egress-selector-config-file {bad}: failed to validate egress selector configuration: \
             service.connection.transport: Invalid value: \"direct\": config must be absent for direct connect"
        )),
        "{err}"
    );
    let grpc = selection(d, "cluster", "{proxyProtocol: GRPC}");
    let err = start_fails(d, &[format!("--egress-selector-config-file={grpc}")]);
    assert!(
        err.contains(
            "service.connection.transport: Required value: transport must be set for GRPC"
        ),
        "{err}"
    );
}

/// An HTTP CONNECT proxy on loopback (a thread per tunnel), recording targets.
struct ConnectProxy {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    fn start() -> ConnectProxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = seen.clone();
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || tunnel(conn, &s));
            }
        });
        ConnectProxy { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// A file whose `etcd` selection is HTTPConnect to this proxy.
    fn etcd_selection(&self, dir: &Path) -> String {
        let connection = format!(
            "{{proxyProtocol: HTTPConnect, transport: {{tcp: {{url: 'http://127.0.0.1:{}'}}}}}}",
            self.port
        );
        selection(dir, "etcd", &connection)
    }
}

fn tunnel(mut conn: TcpStream, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    seen.lock().unwrap().push(target.clone());
    let Ok(upstream) = TcpStream::connect(&target) else {
        let _ = conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
        return;
    };
    conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .unwrap();
    let (mut up_r, mut up_w) = (upstream.try_clone().unwrap(), upstream);
    let mut down_w = conn;
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_r, &mut down_w);
        let _ = down_w.shutdown(std::net::Shutdown::Both);
    });
    let _ = std::io::copy(&mut reader, &mut up_w);
    let _ = up_w.shutdown(std::net::Shutdown::Write);
}

/// Start kapi on etcd at `url` with `extra` flags and the etcd selection
/// through `proxy`; check it serves (`kubectl get ns`, a create and a get)
/// and that the proxy carried connections to etcd.
fn serves_through_the_proxy(dir: &Path, url: &str, extra: &[String]) {
    let proxy = ConnectProxy::start();
    let certs = dir.join("certs");
    let mut args: Vec<String> = vec![
        format!("--cert-dir={}", certs.display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--etcd-servers={url}"),
        format!(
            "--egress-selector-config-file={}",
            proxy.etcd_selection(dir)
        ),
    ];
    args.extend(extra.iter().cloned());
    let server = Server::start(dir, &args);
    let kubeconfig = certs.join("kapi-data/admin.kubeconfig");
    proc::kubectl_get_ns(&kubeconfig, &server);
    let cm = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "via-proxy", "namespace": "default"}, "data": {"k": "v"}}"#;
    let out = proc::kubectl_stdin(&kubeconfig, &["create", "-f", "-"], cm);
    assert!(out.contains("configmap/via-proxy created"), "{out}");
    let out = proc::kubectl_stdin(
        &kubeconfig,
        &["get", "configmap", "via-proxy", "-o", "jsonpath={.data.k}"],
        "",
    );
    assert_eq!(out.trim(), "v");
    let member = url.rsplit('/').next().unwrap().to_owned();
    let seen = proxy.seen();
    assert!(!seen.is_empty(), "{}", server.log_text());
    assert!(seen.iter().all(|t| *t == member), "{seen:?}");
}

#[test]
fn the_etcd_selection_carries_the_etcd_client() {
    let etcd = kapi_testkit::Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    serves_through_the_proxy(dir.path(), &etcd.client_url, &[]);
}

#[test]
fn the_etcd_selection_carries_tls_to_etcd() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("etcd-ca");
    let etcd_dir = dir.path().join("etcd");
    std::fs::create_dir_all(&etcd_dir).unwrap();
    let etcd = crate::etcd_tls::TlsEtcd::start(&etcd_dir, &ca);
    let (cert, key, ca_file) = (
        dir.path().join("etcd-client.crt"),
        dir.path().join("etcd-client.key"),
        dir.path().join("etcd-ca.crt"),
    );
    pki::write_pair(&ca.client("kube-apiserver-etcd-client", &[]), &cert, &key);
    pki::write(&ca_file, &ca.cert_pem);
    let tls = [
        format!("--etcd-cafile={}", ca_file.display()),
        format!("--etcd-certfile={}", cert.display()),
        format!("--etcd-keyfile={}", key.display()),
    ];
    serves_through_the_proxy(dir.path(), &etcd.client_url, &tls);
}
