//! hack/local-up-cluster.sh's kube-apiserver command (start_apiserver, with
//! the script's defaults: Node,RBAC, the default admission list with
//! NodeRestriction, an audit policy at Metadata, the egress selector file it
//! writes, AllAlpha=false, empty --emulated-version and empty arguments where
//! its optional flags are unset), its CERT_DIR certificates, and its admin
//! kubeconfig (client-admin: CN system:admin, O system:masters).
//!
//! Changed: CERT_DIR, LOG_DIR and the key paths (temp dirs), the secure port,
//! the bind address (127.0.0.1 instead of 0.0.0.0) and the etcd URL. The
//! service account key is an EC key here (the script makes RSA with openssl).

use crate::pki::{self, Ca};
use std::path::Path;

use crate::proc::{self, Server};

const EGRESS: &str = "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: Direct\n\
- name: controlplane\n  connection:\n    proxyProtocol: Direct\n\
- name: etcd\n  connection:\n    proxyProtocol: Direct\n";

const AUDIT: &str = "# Log all requests at the Metadata level.\napiVersion: audit.k8s.io/v1\n\
kind: Policy\nrules:\n- level: Metadata\n";

#[test]
fn local_up_cluster_command_serves_kubectl() {
    let etcd = kapi_testkit::Etcd::start();
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("var-run-kubernetes");
    write_cert_dir(&c);
    let sa_key = tmp.path().join("kube-serviceaccount.key");
    pki::write(&sa_key, &pki::signing_key().0);
    let t = tmp.path().join("local-up-cluster.sh.XXXX");
    pki::write(&t.join("kube_egress_selector_configuration.yaml"), EGRESS);
    pki::write(&t.join("kube-audit-policy-file"), AUDIT);
    let logs = tmp.path().join("log");
    std::fs::create_dir_all(&logs).unwrap();

    let port = kapi_testkit::free_port();
    let dirs = Dirs {
        cert: &c,
        sa_key: &sa_key,
        tmp: &t,
        logs: &logs,
    };
    let server = Server::start(tmp.path(), &command(&dirs, port, &etcd.client_url));
    let kubeconfig = c.join("admin.kubeconfig");
    proc::write_kubeconfig(
        &kubeconfig,
        &format!("https://localhost:{port}"),
        &c.join("server-ca.crt"),
        &c.join("client-admin.crt"),
        &c.join("client-admin.key"),
    );
    proc::kubectl_get_ns(&kubeconfig, &server);
    // The audit log is implemented: the kubectl request is in it.
    let audit_log = logs.join("kube-apiserver-audit.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let audit = std::fs::read_to_string(&audit_log).unwrap_or_default();
        if audit.contains("\"system:admin\"") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "audit log: {audit}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The script's generate_certs: server, client and request-header CAs and
/// the serving, kubelet-client, admin and auth-proxy pairs.
fn write_cert_dir(c: &Path) {
    let server_ca = Ca::new("server-ca");
    server_ca.write(&c.join("server-ca.crt"), Some(&c.join("server-ca.key")));
    let client_ca = Ca::new("client-ca");
    client_ca.write(&c.join("client-ca.crt"), Some(&c.join("client-ca.key")));
    let rh_ca = Ca::new("request-header-ca");
    rh_ca.write(
        &c.join("request-header-ca.crt"),
        Some(&c.join("request-header-ca.key")),
    );
    let pair = |ca: &Ca, cn: &str, groups: &[&str], name: &str| {
        let crt = c.join(format!("{name}.crt"));
        pki::write_pair(&ca.client(cn, groups), &crt, &c.join(format!("{name}.key")));
    };
    pki::write_pair(
        &server_ca.serving("kubernetes.default.svc"),
        &c.join("serving-kube-apiserver.crt"),
        &c.join("serving-kube-apiserver.key"),
    );
    pair(&client_ca, "kube-apiserver", &[], "client-kube-apiserver");
    pair(
        &client_ca,
        "system:admin",
        &["system:masters"],
        "client-admin",
    );
    pair(&rh_ca, "system:auth-proxy", &[], "client-auth-proxy");
}

struct Dirs<'a> {
    cert: &'a Path,
    sa_key: &'a Path,
    tmp: &'a Path,
    logs: &'a Path,
}

/// start_apiserver's command line with the script's defaults.
fn command(dirs: &Dirs, port: u16, etcd: &str) -> Vec<String> {
    let (d, k, t) = (
        dirs.cert.display(),
        dirs.sa_key.display(),
        dirs.tmp.display(),
    );
    [
        "--authorization-mode=Node,RBAC".to_string(),
        "--authorization-webhook-config-file=".into(),
        "--authentication-token-webhook-config-file=".into(),
        "".into(),
        "".into(),
        "".into(),
        "--v=3".into(),
        "--vmodule=".into(),
        format!("--audit-policy-file={t}/kube-audit-policy-file"),
        format!("--audit-log-path={}/kube-apiserver-audit.log", dirs.logs.display()),
        format!("--cert-dir={d}"),
        format!("--egress-selector-config-file={t}/kube_egress_selector_configuration.yaml"),
        format!("--client-ca-file={d}/client-ca.crt"),
        format!("--kubelet-client-certificate={d}/client-kube-apiserver.crt"),
        format!("--kubelet-certificate-authority={d}/client-ca.crt"),
        format!("--kubelet-client-key={d}/client-kube-apiserver.key"),
        "--kubelet-port=10250".into(),
        "--kubelet-read-only-port=0".into(),
        format!("--service-account-key-file={k}"),
        "--service-account-lookup=true".into(),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        "--service-account-jwks-uri=https://kubernetes.default.svc/openid/v1/jwks".into(),
        format!("--service-account-signing-key-file={k}"),
        "--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,Priority,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota,NodeRestriction".into(),
        "--disable-admission-plugins=".into(),
        "--admission-control-config-file=".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={d}/serving-kube-apiserver.crt"),
        format!("--tls-private-key-file={d}/serving-kube-apiserver.key"),
        "--storage-backend=etcd3".into(),
        "--storage-media-type=application/vnd.kubernetes.protobuf".into(),
        format!("--etcd-servers={etcd}"),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        "--feature-gates=AllAlpha=false".into(),
        "--emulated-version=".into(),
        "--external-hostname=localhost".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        format!("--requestheader-client-ca-file={d}/request-header-ca.crt"),
        "--requestheader-allowed-names=system:auth-proxy".into(),
        format!("--proxy-client-cert-file={d}/client-auth-proxy.crt"),
        format!("--proxy-client-key-file={d}/client-auth-proxy.key"),
        "--cors-allowed-origins=//127.0.0.1(:[0-9]+)?$,//localhost(:[0-9]+)?$".into(),
    ]
    .into()
}
