//! The binary named `kube-apiserver`: version, help, and refused command lines,
//! each with upstream's output and exit code.

use crate::proc::run_once;

#[test]
fn version_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = run_once(dir.path(), &["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Kubernetes v1.33."), "{out}");
    let (_, raw, _) = run_once(dir.path(), &["--version=raw"]);
    assert!(
        raw.starts_with("version.Info{Major:\"1\", Minor:\"33\""),
        "{raw}"
    );
}

#[test]
fn help_groups_flags_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = run_once(dir.path(), &["--help"]);
    assert_eq!(code, 0);
    let sections: Vec<&str> = out.lines().filter(|l| l.ends_with("flags:")).collect();
    assert_eq!(
        sections,
        [
            "Generic flags:",
            "Etcd flags:",
            "Secure serving flags:",
            "Auditing flags:",
            "Features flags:",
            "Authentication flags:",
            "Authorization flags:",
            "API enablement flags:",
            "Egress selector flags:",
            "Admission flags:",
            "Metrics flags:",
            "Logs flags:",
            "Traces flags:",
            "Misc flags:",
            "Global flags:",
        ]
    );
    assert!(out.contains("Usage:\n  kube-apiserver [flags]"));
    assert!(out.contains("      --profiling "));
    assert!(out
        .lines()
        .any(|l| l.contains("--profiling") && l.ends_with("[no effect in kapi]")));
}

#[test]
fn bad_command_lines_fail_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["--foo"][..], "Error: unknown flag: --foo\n"),
        (&["--insecure-port=0"][..], "Error: unknown flag: --insecure-port\n"),
        (&["--cloud-provider=external"][..], "Error: unknown flag: --cloud-provider\n"),
        (
            &["--secure-port=x"][..],
            "Error: invalid argument \"x\" for \"--secure-port\" flag: strconv.ParseInt: parsing \"x\": invalid syntax\n",
        ),
        (
            &["--anonymous-auth", "false"][..],
            "Error: \"kube-apiserver\" does not take any arguments, got [\"false\"]\n",
        ),
    ] {
        let (code, out, err) = run_once(dir.path(), args);
        assert_eq!((code, out.as_str(), err.as_str()), (1, "", want), "{args:?}");
    }
    let (code, _, err) = run_once(dir.path(), &["--logging-format=xml", "--secure-port=0"]);
    assert_eq!(code, 1);
    assert!(err.contains("Unsupported log format"), "{err}");
}

/// As kube-apiserver with an empty `--cert-dir` and no `--tls-cert-file`:
/// kapi writes its serving pair there (and reuses it on the next start), keeps
/// its data under `<cert-dir>/kapi-data`, and logs JSON lines with
/// `--logging-format=json`, naming the flags it does not act on.
#[test]
fn cert_dir_and_json_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let certs = tmp.path().join("certs");
    let args: Vec<String> = [
        format!("--cert-dir={}", certs.display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        "--logging-format=json".into(),
        "--profiling=false".into(),
        "--storage-ready-timeout=30s".into(),
    ]
    .into();
    let first = crate::proc::Server::start(tmp.path(), &args);
    let kubeconfig = certs.join("kapi-data/admin.kubeconfig");
    crate::proc::kubectl_get_ns(&kubeconfig, &first);
    let log = first.log_text();
    let json: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        json.iter()
            .any(|v| v["fields"]["message"] == "flag --profiling has no effect in kapi"),
        "{log}"
    );
    let crt = std::fs::read_to_string(certs.join("apiserver.crt")).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(certs.join("apiserver.key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    drop(first);
    let second = crate::proc::Server::start(tmp.path(), &args);
    assert_eq!(
        std::fs::read_to_string(certs.join("apiserver.crt")).unwrap(),
        crt
    );
    crate::proc::kubectl_get_ns(&kubeconfig, &second);
}
