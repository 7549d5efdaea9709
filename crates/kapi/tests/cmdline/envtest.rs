//! controller-runtime's envtest (pkg/internal/testing/controlplane): it writes
//! apiserver.crt/.key (its own CA) and the sa-signer pair into a cert dir,
//! trusts client certificates of another CA (`client-cert-auth-ca.crt`), asks
//! `kube-apiserver --help` whether `--insecure-port` exists, and starts the
//! server with its default arguments. Its admin user is a client certificate
//! in group system:masters.

use crate::pki::{self, Ca};
use crate::proc::{self, Server};

#[test]
fn envtest_command_line_serves_kubectl() {
    let etcd = kapi_testkit::Etcd::start();
    let tmp = tempfile::tempdir().unwrap();
    let certs = tmp.path().join("k8s_test_framework_1234");
    let serving_ca = Ca::new("envtest-serving-ca");
    pki::write_pair(
        &serving_ca.serving("kube-apiserver"),
        &certs.join("apiserver.crt"),
        &certs.join("apiserver.key"),
    );
    let sa = Ca::new("envtest-sa-signer");
    sa.write(
        &certs.join("sa-signer.crt"),
        Some(&certs.join("sa-signer.key")),
    );
    let client_ca = Ca::new("envtest-client-ca");
    client_ca.write(&certs.join("client-cert-auth-ca.crt"), None);
    let user = certs.join("users");
    pki::write_pair(
        &client_ca.client("envtest-admin", &["system:masters"]),
        &user.join("admin.crt"),
        &user.join("admin.key"),
    );

    // envtest's flag discovery: passes --insecure-port only when help lists it.
    let (_, help, _) = proc::run_once(tmp.path(), &["--help"]);
    assert!(!help
        .lines()
        .any(|l| l.trim_start().starts_with("--insecure-port")));

    let port = kapi_testkit::free_port();
    let d = certs.display();
    let args = vec![
        "--service-cluster-ip-range=10.0.0.0/24".to_string(),
        "--allow-privileged=true".into(),
        "--disable-admission-plugins=ServiceAccount".into(),
        format!("--cert-dir={d}"),
        "--authorization-mode=RBAC".into(),
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={d}/sa-signer.crt"),
        format!("--service-account-signing-key-file={d}/sa-signer.key"),
        format!("--etcd-servers={}", etcd.client_url),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
    ];
    let server = Server::start(tmp.path(), &args);
    // kubectl verifies the server with envtest's CA only: the serving
    // certificate must be the one envtest wrote into the cert dir.
    let ca_file = tmp.path().join("serving-ca.crt");
    pki::write(&ca_file, &serving_ca.cert_pem);
    let kubeconfig = tmp.path().join("kubeconfig");
    proc::write_kubeconfig(
        &kubeconfig,
        &format!("https://127.0.0.1:{port}"),
        &ca_file,
        &user.join("admin.crt"),
        &user.join("admin.key"),
    );
    proc::kubectl_get_ns(&kubeconfig, &server);
    // --allow-privileged=true, as envtest passes it: privileged pods are admitted
    // (kube-apiserver's default refuses them).
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "priv", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}}"#;
    let out = proc::kubectl_stdin(&kubeconfig, &["create", "-f", "-"], pod);
    assert!(out.contains("pod/priv created"), "{out}");
}
