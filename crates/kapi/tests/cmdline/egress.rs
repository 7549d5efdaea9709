//! `--egress-selector-config-file`: a file that cannot work stops the start,
//! naming the flag, the file and the field (upstream's validation message);
//! so do what kapi does not implement (`GRPC`, an `etcd` selection through a
//! proxy while etcd is used).

use std::path::Path;

use crate::proc::run_once;

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
    let grpc = selection(
        d,
        "controlplane",
        "{proxyProtocol: GRPC, transport: {uds: {udsName: /s}}}",
    );
    let err = start_fails(d, &[format!("--egress-selector-config-file={grpc}")]);
    assert!(err.contains("the GRPC proxy protocol"), "{err}");
    let etcd = selection(
        d,
        "etcd",
        "{proxyProtocol: HTTPConnect, transport: {uds: {udsName: /s}}}",
    );
    let err = start_fails(
        d,
        &[
            format!("--egress-selector-config-file={etcd}"),
            "--etcd-servers=http://127.0.0.1:1".into(),
        ],
    );
    assert!(
        err.contains("the etcd egress selection must be Direct"),
        "{err}"
    );
}
