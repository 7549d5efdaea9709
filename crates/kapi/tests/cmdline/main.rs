//! kapi started from real kube-apiserver command lines (issue 21): invoked as
//! `kube-apiserver` it answers `--version` and `--help` as upstream and refuses
//! bad command lines with upstream's messages (`invocation.rs`); and it starts,
//! unchanged but for paths and ports, from kubeadm's static pod manifest
//! (`kubeadm.rs`), the flags controller-runtime's envtest passes (`envtest.rs`)
//! and hack/local-up-cluster.sh's command (`localup.rs`), each against a real
//! etcd (kubeadm's over TLS with client certificates), and serves `kubectl get ns` with the credentials that setup makes.

mod audit_flags;
mod auth_flags;
mod egress;
mod encryption;
mod envtest;
mod etcd_tls;
mod ext_signer;
mod https;
mod invocation;
mod kubeadm;
mod localup;
mod pki;
mod proc;
mod serving;
mod shutdown;
