//! The `--audit-log-*` and `--audit-webhook-*` flags from a real command
//! line: the legacy one-line log format with batched writes, and values
//! upstream refuses stopping the start with upstream's messages.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::proc::{self, run_once, Server};

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

fn base(dir: &Path) -> Vec<String> {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    vec![
        format!("--cert-dir={}", dir.join("certs").display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", dir.join("audit.log").display()),
    ]
}

fn start_fails(dir: &Path, extra: &[&str]) -> String {
    let mut args = base(dir);
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(dir, &argv);
    assert_eq!(code, 1, "{err}");
    err
}

#[test]
fn bad_audit_values_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--audit-log-mode=async"],
            "invalid audit log mode async, allowed modes are \"batch,blocking,blocking-strict\"",
        ),
        (
            &["--audit-log-format=yaml"],
            "invalid audit log format yaml, allowed formats are \"legacy,json\"",
        ),
        (
            &["--audit-log-version=audit.k8s.io/v1beta1"],
            "invalid group version, allowed versions are [\"audit.k8s.io/v1\"]",
        ),
        (
            &["--audit-log-mode=batch", "--audit-log-batch-buffer-size=0"],
            "invalid audit batch log buffer size 0, must be a positive number",
        ),
        (
            &[
                "--audit-log-truncate-enabled",
                "--audit-log-truncate-max-batch-size=10",
                "--audit-log-truncate-max-event-size=100",
            ],
            "invalid audit truncate log max batch size 10, must be greater than max event size (100)",
        ),
    ];
    for (flags, want) in cases {
        let err = start_fails(d, flags);
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    // A webhook whose kubeconfig does not load.
    let err = start_fails(
        d,
        &["--audit-webhook-config-file=/nonexistent/hook.kubeconfig"],
    );
    assert!(err.contains("initializing audit webhook"), "{err}");
}

#[test]
fn legacy_format_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = base(d);
    args.extend(
        [
            "--audit-log-format=legacy",
            "--audit-log-mode=batch",
            "--audit-log-batch-max-size=10",
            "--audit-log-batch-max-wait=200ms",
        ]
        .map(String::from),
    );
    let server = Server::start(d, &args);
    let kubeconfig = d.join("certs/kapi-data/admin.kubeconfig");
    proc::kubectl_get_ns(&kubeconfig, &server);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = std::fs::read_to_string(d.join("audit.log")).unwrap_or_default();
        let line = log.lines().find(|l| {
            l.contains(r#"stage="ResponseComplete""#) && l.contains(r#"uri="/api/v1/namespaces"#)
        });
        if let Some(line) = line {
            assert!(line.contains(" AUDIT: id=\""), "{line}");
            assert!(line.contains(r#"method="list""#), "{line}");
            assert!(line.contains(r#"response="200""#), "{line}");
            assert!(!log.contains('{'), "no JSON in a legacy log: {log}");
            break;
        }
        assert!(Instant::now() < deadline, "audit log: {log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
