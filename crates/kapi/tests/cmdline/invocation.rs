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
            "Cloud provider flags:",
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
