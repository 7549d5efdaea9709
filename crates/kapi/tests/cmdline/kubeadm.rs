//! kubeadm 1.33's kube-apiserver static pod (cmd/kubeadm/app/phases/controlplane
//! getAPIServerCommand with its defaults, flags sorted as in the manifest), its
//! certificates laid out as kubeadm's `pki/` (CA, apiserver, kubelet client,
//! front proxy, sa.key/sa.pub, etcd client), and the super-admin credentials
//! (CN kubernetes-super-admin, O system:masters) `kubeadm init` writes. The
//! NodeRestriction plugin it enables refuses a kubelet's non-mirror pod.
//!
//! Changed: paths (a temp `pki/`) and ports. etcd is kubeadm's kind: HTTPS with
//! client certificates of the etcd CA (`etcd_tls.rs`; kapi-testkit's etcd is
//! plain HTTP, which kapi refuses together with `--etcd-cafile`, as TLS
//! settings for an `http://` URL).

use std::path::Path;

use crate::etcd_tls::TlsEtcd;
use crate::pki::{self, Ca};
use crate::proc::{self, Server};

#[test]
fn kubeadm_manifest_serves_kubectl() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("pki");
    let (ca, etcd_ca) = write_pki(&p);
    let etcd = TlsEtcd::start(&tmp.path().join("etcd"), &etcd_ca);
    let (admin_crt, admin_key) = (
        tmp.path().join("super-admin.crt"),
        tmp.path().join("super-admin.key"),
    );
    pki::write_pair(
        &ca.client("kubernetes-super-admin", &["system:masters"]),
        &admin_crt,
        &admin_key,
    );

    let port = kapi_testkit::free_port();
    let server = Server::start(tmp.path(), &command(&p, port, &etcd.client_url));
    let kubeconfig = tmp.path().join("super-admin.conf");
    let url = format!("https://127.0.0.1:{port}");
    proc::write_kubeconfig(&kubeconfig, &url, &p.join("ca.crt"), &admin_crt, &admin_key);
    proc::kubectl_get_ns(&kubeconfig, &server);
    let log = server.log_text();
    // NodeRestriction, --allow-privileged and bootstrap tokens are
    // implemented: none is named as lacking.
    assert!(!log.contains("NodeRestriction"), "{log}");
    assert!(!log.contains("--allow-privileged"), "{log}");
    assert!(!log.contains("--enable-bootstrap-token-auth"), "{log}");
    // NodeRestriction runs: a kubelet (impersonated) may create mirror pods only.
    let as_node = ["--as=system:node:n1", "--as-group=system:nodes"];
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}"#;
    let out = proc::kubectl_stdin(
        &kubeconfig,
        &[&as_node[..], &["create", "-f", "-"]].concat(),
        pod,
    );
    assert!(
        out.contains("pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods"),
        "{out}"
    );
}

/// kubeadm's certificate phase: CA, apiserver, kubelet client, front proxy,
/// service account keys, etcd CA and the etcd client; returns the cluster
/// CA and the etcd CA.
fn write_pki(p: &Path) -> (Ca, Ca) {
    let ca = Ca::new("kubernetes");
    ca.write(&p.join("ca.crt"), Some(&p.join("ca.key")));
    pki::write_pair(
        &ca.serving("kube-apiserver"),
        &p.join("apiserver.crt"),
        &p.join("apiserver.key"),
    );
    pki::write_pair(
        &ca.client("kube-apiserver-kubelet-client", &["kubeadm:cluster-admins"]),
        &p.join("apiserver-kubelet-client.crt"),
        &p.join("apiserver-kubelet-client.key"),
    );
    let front = Ca::new("front-proxy-ca");
    front.write(
        &p.join("front-proxy-ca.crt"),
        Some(&p.join("front-proxy-ca.key")),
    );
    pki::write_pair(
        &front.client("front-proxy-client", &[]),
        &p.join("front-proxy-client.crt"),
        &p.join("front-proxy-client.key"),
    );
    let (sa_key, sa_pub) = pki::signing_key();
    pki::write(&p.join("sa.key"), &sa_key);
    pki::write(&p.join("sa.pub"), &sa_pub);
    let etcd_ca = Ca::new("etcd-ca");
    etcd_ca.write(&p.join("etcd/ca.crt"), Some(&p.join("etcd/ca.key")));
    pki::write_pair(
        &etcd_ca.client("kube-apiserver-etcd-client", &[]),
        &p.join("apiserver-etcd-client.crt"),
        &p.join("apiserver-etcd-client.key"),
    );
    (ca, etcd_ca)
}

/// getAPIServerCommand's arguments, sorted as in the manifest.
fn command(p: &Path, port: u16, etcd: &str) -> Vec<String> {
    let d = p.display();
    [
        "--advertise-address=127.0.0.1".to_string(),
        "--allow-privileged=true".into(),
        "--authorization-mode=Node,RBAC".into(),
        format!("--client-ca-file={d}/ca.crt"),
        "--enable-admission-plugins=NodeRestriction".into(),
        "--enable-bootstrap-token-auth=true".into(),
        format!("--etcd-cafile={d}/etcd/ca.crt"),
        format!("--etcd-certfile={d}/apiserver-etcd-client.crt"),
        format!("--etcd-keyfile={d}/apiserver-etcd-client.key"),
        format!("--etcd-servers={etcd}"),
        format!("--kubelet-client-certificate={d}/apiserver-kubelet-client.crt"),
        format!("--kubelet-client-key={d}/apiserver-kubelet-client.key"),
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname".into(),
        format!("--proxy-client-cert-file={d}/front-proxy-client.crt"),
        format!("--proxy-client-key-file={d}/front-proxy-client.key"),
        "--requestheader-allowed-names=front-proxy-client".into(),
        format!("--requestheader-client-ca-file={d}/front-proxy-ca.crt"),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        format!("--secure-port={port}"),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={d}/sa.pub"),
        format!("--service-account-signing-key-file={d}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".into(),
        format!("--tls-cert-file={d}/apiserver.crt"),
        format!("--tls-private-key-file={d}/apiserver.key"),
    ]
    .into()
}
