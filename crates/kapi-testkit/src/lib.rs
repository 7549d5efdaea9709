//! Fixtures for tests: real etcd servers started on free loopback ports, and
//! which member of a cluster leads ([`Etcd::is_leader`]); a fake kubelet
//! ([`kubelet`]).
//!
//! Each [`Etcd`] is a Debian `etcd` process in its own temporary data directory,
//! killed when the value is dropped. A watchdog shell kills it too if the test
//! process dies without dropping it (a panic in another thread, SIGKILL), so no
//! etcd outlives its test run.

pub mod kubelet;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// One member of an etcd cluster.
pub struct Etcd {
    pub name: String,
    pub client_url: String,
    pub peer_url: String,
    data: PathBuf,
    cluster: String,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl Etcd {
    /// A single-member cluster, started and ready.
    pub fn start() -> Etcd {
        let mut cluster = Self::cluster(1);
        cluster.pop().expect("one member")
    }

    /// A started cluster of `n` members, all ready. A member that exits
    /// before it is healthy (a free port taken meanwhile, as another test's
    /// connection may take it) has the cluster started again on other ports.
    pub fn cluster(n: usize) -> Vec<Etcd> {
        for _ in 0..3 {
            let mut out = Self::spawn_cluster(n);
            if out
                .iter_mut()
                .all(|e| e.ready_within(Duration::from_secs(30)))
            {
                return out;
            }
        }
        panic!("an etcd cluster of {n} did not become healthy in three tries");
    }

    fn spawn_cluster(n: usize) -> Vec<Etcd> {
        let members: Vec<(String, u16, u16)> = (0..n)
            .map(|i| (format!("m{i}"), free_port(), free_port()))
            .collect();
        let cluster = members
            .iter()
            .map(|(name, _, peer)| format!("{name}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut out: Vec<Etcd> = members
            .into_iter()
            .map(|(name, client, peer)| {
                let dir = tempfile::tempdir().expect("tempdir");
                Etcd {
                    name,
                    client_url: format!("http://127.0.0.1:{client}"),
                    peer_url: format!("http://127.0.0.1:{peer}"),
                    data: dir.path().join("data"),
                    cluster: cluster.clone(),
                    child: None,
                    _dir: dir,
                }
            })
            .collect();
        for e in &mut out {
            e.spawn();
        }
        out
    }

    fn spawn(&mut self) {
        let args = [
            format!("--name={}", self.name),
            format!("--data-dir={}", self.data.display()),
            format!("--listen-client-urls={}", self.client_url),
            format!("--advertise-client-urls={}", self.client_url),
            format!("--listen-peer-urls={}", self.peer_url),
            format!("--initial-advertise-peer-urls={}", self.peer_url),
            format!("--initial-cluster={}", self.cluster),
            "--initial-cluster-state=new".into(),
            "--log-level=error".into(),
            "--experimental-watch-progress-notify-interval=1s".into(),
        ];
        // The watchdog: run etcd, and kill it when this test process is gone.
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
        self.child = Some(child);
    }

    fn wait_ready(&mut self, timeout: Duration) {
        if !self.ready_within(timeout) {
            panic!("etcd {} did not become healthy", self.client_url);
        }
    }

    /// Whether the member answers healthy within `timeout`; false at once
    /// when its process has exited.
    fn ready_within(&mut self, timeout: Duration) -> bool {
        let addr = self.client_url.trim_start_matches("http://").to_owned();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if health_ok(&addr) {
                return true;
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Stop the member (SIGKILL through the watchdog); its data is kept.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
            // The watchdog kills etcd on TERM; wait until the port is free.
            let addr = self.client_url.trim_start_matches("http://").to_owned();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && std::net::TcpStream::connect(&addr).is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Start a stopped member again, with its data; waits for health when `wait`.
    pub fn restart(&mut self, wait: bool) {
        self.stop();
        self.spawn();
        if wait {
            self.wait_ready(Duration::from_secs(30));
        }
    }
}

impl Etcd {
    /// Whether this member is the raft leader (`None` when it does not answer),
    /// from etcd's JSON gateway `POST /v3/maintenance/status`.
    pub fn is_leader(&self) -> Option<bool> {
        use std::io::{Read, Write};
        let addr = self.client_url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        s.write_all(
            b"POST /v3/maintenance/status HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        )
        .ok()?;
        let mut body = String::new();
        let _ = s.read_to_string(&mut body);
        let field = |name: &str| {
            let at = body.find(&format!("\"{name}\":\""))? + name.len() + 4;
            body[at..].split('"').next().map(str::to_owned)
        };
        Some(field("member_id")? == field("leader")?)
    }
}

/// GET /health over plain HTTP/1.0 without a client library.
fn health_ok(addr: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"") || body.contains("\"health\": \"true\"")
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}
