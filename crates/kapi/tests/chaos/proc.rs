//! The `kapi serve` binary as a child process: started on a free loopback port
//! with a given data directory, killed with SIGKILL, restarted on the same
//! directory. Its stderr (the log) is kept for tests that read it.
//!
//! Like `kapi-testkit`'s etcd, the child runs under a watchdog shell that kills
//! it when the test process is gone, so no server outlives a crashed test run.
//! [`Kapi::client`] is a `kube::Client` from the admin kubeconfig the server
//! writes; [`Tls`] opens raw TLS connections with or without the admin identity.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, Once};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

pub struct Kapi {
    pub url: String,
    pub addr: String,
    pub data_dir: PathBuf,
    pub client: kube::Client,
    pub log: Arc<Mutex<Vec<String>>>,
    pid: u32,
    watchdog: Option<Child>,
}

/// The kapi binary cargo built for this test target.
fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_kapi")
}

pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Kapi {
    /// Start `kapi serve` on `data_dir` (embedded store unless `extra` names
    /// `--etcd-servers`) and wait until it serves; panics with its log if it
    /// exits first.
    pub async fn start(data_dir: &Path, extra: &[&str]) -> Kapi {
        Self::try_start(data_dir, extra)
            .await
            .unwrap_or_else(|log| panic!("kapi did not start:\n{log}"))
    }

    /// As [`Kapi::start`], logging at `level` (a `RUST_LOG` filter).
    pub async fn start_logging(data_dir: &Path, extra: &[&str], level: &str) -> Kapi {
        Self::spawn(data_dir, extra, level)
            .await
            .unwrap_or_else(|log| panic!("kapi did not start:\n{log}"))
    }

    /// As [`Kapi::start`], returning the log on failure.
    pub async fn try_start(data_dir: &Path, extra: &[&str]) -> Result<Kapi, String> {
        let level = std::env::var("KAPI_TEST_LOG").unwrap_or("info".into());
        Self::spawn(data_dir, extra, &level).await
    }

    async fn spawn(data_dir: &Path, extra: &[&str], level: &str) -> Result<Kapi, String> {
        install_crypto_provider();
        let mut args = vec![
            "serve".to_string(),
            "--secure-port=0".into(),
            "--bind-address=127.0.0.1".into(),
            format!("--data-dir={}", data_dir.display()),
            "--controllers=*,-serviceaccount,-root-ca-cert-publisher".into(),
            "--storage-ready-timeout=30s".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let script = format!(
            "{} {} & k=$!; echo $k; trap 'kill -9 $k 2>/dev/null; wait $k; exit 0' TERM; \
             while kill -0 {} 2>/dev/null && kill -0 $k 2>/dev/null; do sleep 0.2; done; \
             kill -9 $k 2>/dev/null; wait $k 2>/dev/null",
            binary(),
            quoted.join(" "),
            std::process::id()
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("RUST_LOG", level)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kapi");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("kapi pid");
        let pid: u32 = line.trim().parse().expect("kapi pid");

        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<Option<String>>();
        let stderr = child.stderr.take().expect("stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(i) = line.find("serving on https://") {
                    let url = line[i + "serving on ".len()..]
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let _ = tx.send(Some(url));
                }
                sink.lock().unwrap().push(line);
            }
            let _ = tx.send(None);
        });
        let url = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(90)))
            .await
            .expect("join");
        let mut kapi = Kapi {
            url: String::new(),
            addr: String::new(),
            data_dir: data_dir.to_path_buf(),
            client: dummy_client(),
            log,
            pid,
            watchdog: Some(child),
        };
        match url {
            Ok(Some(url)) => {
                kapi.addr = url.trim_start_matches("https://").to_string();
                kapi.url = url;
                kapi.client = client_from(&data_dir.join("admin.kubeconfig")).await;
                Ok(kapi)
            }
            _ => {
                kapi.kill();
                Err(kapi.log_text())
            }
        }
    }

    /// SIGKILL the server and wait until it is gone.
    pub fn kill(&mut self) {
        if let Some(mut dog) = self.watchdog.take() {
            let _ = Command::new("kill")
                .args(["-9", &self.pid.to_string()])
                .stderr(Stdio::null())
                .status();
            let _ = dog.wait();
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// A raw-TLS connector trusting the server's CA, with the admin
    /// certificate when `admin`.
    pub fn tls(&self, admin: bool) -> Tls {
        Tls::from_pki(&self.data_dir, admin, &self.addr)
    }
}

impl Drop for Kapi {
    fn drop(&mut self) {
        self.kill();
    }
}

fn dummy_client() -> kube::Client {
    let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
    kube::Client::try_from(config).expect("client")
}

/// A `kube::Client` from a kubeconfig, without client-side retries (tests look
/// at every answer themselves).
pub async fn client_from(path: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("read kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kube config");
    config.default_retry = false;
    config.read_timeout = Some(Duration::from_secs(60));
    kube::Client::try_from(config).expect("client")
}

/// Raw TLS connections to the server, for requests no HTTP client would send.
#[derive(Clone)]
pub struct Tls {
    connector: tokio_rustls::TlsConnector,
    pub addr: String,
}

impl Tls {
    fn from_pki(data_dir: &Path, admin: bool, addr: &str) -> Tls {
        let pki = data_dir.join("pki");
        let read = |name: &str| std::fs::read(pki.join(name)).expect("pki file");
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut read("ca.crt").as_slice()) {
            roots.add(cert.expect("ca pem")).expect("add ca");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots);
        let config = if admin {
            let certs: Vec<_> = rustls_pemfile::certs(&mut read("admin.crt").as_slice())
                .map(|c| c.expect("cert pem"))
                .collect();
            let key = rustls_pemfile::private_key(&mut read("admin.key").as_slice())
                .expect("key pem")
                .expect("a key");
            builder
                .with_client_auth_cert(certs, key)
                .expect("client auth")
        } else {
            builder.with_no_client_auth()
        };
        Tls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            addr: addr.to_string(),
        }
    }

    pub async fn connect(&self) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
        let tcp = tokio::net::TcpStream::connect(&self.addr)
            .await
            .expect("connect");
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        self.connector
            .connect(name.to_owned(), tcp)
            .await
            .expect("tls handshake")
    }

    /// Send `head` + `body` on a fresh connection (`Connection: close` is the
    /// caller's business) and read the whole answer; returns the status code
    /// and the body text.
    pub async fn request(&self, head: &str, body: &[u8]) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = self.connect().await;
        let _ = s.write_all(head.as_bytes()).await;
        let _ = s.write_all(body).await;
        let _ = s.flush().await;
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut out)).await;
        parse_response(&out)
    }
}

/// Status code and body of a raw HTTP/1.1 answer (chunked bodies joined).
pub fn parse_response(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return (code, String::new());
    };
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return (code, body.to_string());
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((len, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    (code, out)
}
