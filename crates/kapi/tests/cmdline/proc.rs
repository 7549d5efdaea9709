//! kapi run as `kube-apiserver`: a symlink of that name to the built binary,
//! started with a command line, its stderr kept, killed when dropped (and by a
//! watchdog shell when the test process dies first). [`kubectl_get_ns`] runs the
//! real kubectl against it with a kubeconfig made of the setup's credentials.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A `kube-apiserver` symlink to the kapi binary, in `dir/bin`.
pub fn kube_apiserver(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let link = bin.join("kube-apiserver");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kapi"), &link).expect("symlink");
    }
    link
}

/// Run `kube-apiserver args…` to completion: (exit code, stdout, stderr).
pub fn run_once(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(kube_apiserver(dir))
        .args(args)
        .output()
        .expect("run kube-apiserver");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub struct Server {
    child: Child,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Start `kube-apiserver` with `args` and wait until it says it serves;
    /// panics with its log if it exits or takes longer than 90 s.
    pub fn start(dir: &Path, args: &[String]) -> Server {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let script = format!(
            "{} {} & k=$!; echo \"kapi-pid $k\" >&2; trap 'kill -9 $k 2>/dev/null; wait $k; exit 0' TERM; \
             while kill -0 {} 2>/dev/null && kill -0 $k 2>/dev/null; do sleep 0.2; done; \
             kill -9 $k 2>/dev/null; wait $k",
            kube_apiserver(dir).display(),
            quoted.join(" "),
            std::process::id()
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kube-apiserver");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                // Logged before the start is announced, so that `port()`
                // finds the line once `start` returns.
                let serving = line.contains("serving on https://");
                sink.lock().unwrap().push(line);
                if serving {
                    let _ = tx.send(true);
                }
            }
            let _ = tx.send(false);
        });
        let server = Server { child, log };
        match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(true) => server,
            _ => panic!("kube-apiserver did not start:\n{}", server.log_text()),
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The kube-apiserver process (not its watchdog shell).
    pub fn pid(&self) -> u32 {
        let log = self.log.lock().unwrap();
        log.iter()
            .find_map(|l| l.strip_prefix("kapi-pid "))
            .and_then(|p| p.trim().parse().ok())
            .expect("the watchdog names the pid")
    }

    /// The port it serves on, from its "serving on" line.
    pub fn port(&self) -> u16 {
        let log = self.log.lock().unwrap();
        log.iter()
            .find_map(|l| l.split("serving on https://").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|addr| addr.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("a serving line with the port")
    }

    /// Send SIGTERM to the server.
    pub fn terminate(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "SIGTERM delivered");
    }

    /// Wait (at most `limit`) for the server to exit; its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // TERM to the watchdog shell, whose trap kills the server.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// A kubeconfig of files, as the setups write them.
pub fn write_kubeconfig(path: &Path, server: &str, ca: &Path, cert: &Path, key: &Path) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    \
         certificate-authority: {}\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    \
         client-key: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
         current-context: c\n",
        ca.display(),
        cert.display(),
        key.display()
    );
    std::fs::write(path, text).expect("kubeconfig");
}

/// `kubectl get ns -o name` with `kubeconfig` until it lists the built-in
/// namespaces (a few tries: RBAC's first sync), or panic with what it said.
pub fn kubectl_get_ns(kubeconfig: &Path, server: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["get", "ns", "-o", "name"])
            .output()
            .expect("kubectl (on PATH) runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && stdout.contains("namespace/kube-system") {
            assert!(stdout.contains("namespace/default"), "{stdout}");
            return stdout;
        }
        if Instant::now() > deadline {
            panic!(
                "kubectl get ns failed: {}\n{stdout}\nserver log:\n{}",
                String::from_utf8_lossy(&out.stderr),
                server.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `kubectl <args>` with `stdin` piped in: what it printed (stdout and stderr).
pub fn kubectl_stdin(kubeconfig: &Path, args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl (on PATH) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("kubectl");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
