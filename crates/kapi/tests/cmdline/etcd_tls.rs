//! etcd as kubeadm runs it: clients over HTTPS with client-certificate
//! authentication against the etcd CA. kapi-testkit's etcd speaks plain HTTP,
//! so this starts Debian's `etcd` itself (same watchdog idea: the shell kills
//! etcd when the test process is gone) and waits for its plain-HTTP metrics
//! listener to report health.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::pki::{self, Ca};

pub struct TlsEtcd {
    pub client_url: String,
    child: Child,
}

impl TlsEtcd {
    /// Start a one-member cluster in `dir` whose serving certificate `ca` signs
    /// and which trusts client certificates of `ca`.
    pub fn start(dir: &Path, ca: &Ca) -> TlsEtcd {
        let (client, peer, metrics) = (
            kapi_testkit::free_port(),
            kapi_testkit::free_port(),
            kapi_testkit::free_port(),
        );
        let (cert, key, ca_file) = (
            dir.join("server.crt"),
            dir.join("server.key"),
            dir.join("ca.crt"),
        );
        pki::write_pair(&ca.serving("etcd"), &cert, &key);
        pki::write(&ca_file, &ca.cert_pem);
        let client_url = format!("https://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let args = [
            "--name=m0".to_string(),
            format!("--data-dir={}", dir.join("data").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=m0={peer_url}"),
            format!("--listen-metrics-urls=http://127.0.0.1:{metrics}"),
            format!("--cert-file={}", cert.display()),
            format!("--key-file={}", key.display()),
            "--client-cert-auth=true".into(),
            format!("--trusted-ca-file={}", ca_file.display()),
            "--log-level=error".into(),
        ];
        let script = format!(
            "etcd {} & e=$!; trap 'kill -9 $e 2>/dev/null; wait $e; exit 0' TERM; \
             while kill -0 {} 2>/dev/null && kill -0 $e 2>/dev/null; do sleep 0.2; done; kill -9 $e 2>/dev/null",
            args.join(" "),
            std::process::id()
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd (install Debian's etcd-server)");
        let etcd = TlsEtcd { client_url, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !healthy(metrics) {
            assert!(Instant::now() < deadline, "TLS etcd did not become healthy");
            std::thread::sleep(Duration::from_millis(100));
        }
        etcd
    }
}

fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    let mut body = String::new();
    s.write_all(req.as_bytes()).is_ok()
        && s.read_to_string(&mut body).is_ok()
        && body.contains("\"health\":\"true\"")
}

impl Drop for TlsEtcd {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}
