//! kapi-controllers — the controllers kapi runs in-process: the part of kube-controller-manager (and
//! of kube-apiserver's own bootstrap loops) a single-binary control plane needs
//! so that deletes finish and namespaces come with their defaults.
//!
//! | name (`--controllers`) | upstream home | file |
//! |---|---|---|
//! | `garbage-collector-controller` (`garbagecollector`) | kube-controller-manager | `gc/` |
//! | `namespace-controller` (`namespace`) | kube-controller-manager | `namespace.rs` |
//! | `serviceaccount-controller` (`serviceaccount`) | kube-controller-manager | `serviceaccounts.rs` |
//! | `serviceaccount-token-controller` (`serviceaccount-token`) | kube-controller-manager | `tokens.rs` |
//! | `root-ca-certificate-publisher-controller` (`root-ca-cert-publisher`) | kube-controller-manager | `rootca.rs` |
//! | `clusterrole-aggregation-controller` (`clusterrole-aggregation`) | kube-controller-manager | `clusterroles.rs` |
//! | `resourcequota-controller` (`resourcequota`) | kube-controller-manager | `resourcequota.rs` |
//! | `persistentvolumeclaim-protection-controller` (`pvc-protection`) | kube-controller-manager | `protection.rs` |
//! | `persistentvolume-protection-controller` (`pv-protection`) | kube-controller-manager | `protection.rs` |
//! | `kubernetes` Service endpoints (`--endpoint-reconciler-type`) | kube-apiserver | `kubernetes_service.rs` |
//! | `bootstrap-signer-controller` (`bootstrapsigner`), off by default | kube-controller-manager | `bootstrap_signer.rs` |
//! | `token-cleaner-controller` (`tokencleaner`), off by default | kube-controller-manager | `token_cleaner.rs` |
//!
//! As in kube-controller-manager, `*` does not turn on the controllers that
//! are off by default; they run when named (kubeadm's
//! `--controllers=*,bootstrapsigner,tokencleaner`).
//!
//! Every controller is driven by watches on the generic store (informers,
//! `kapi_client::informer`) and works through a de-duplicating queue
//! (`kapi_client::queue`); all of them talk to the
//! stores directly, in-process, as the clients of upstream's controllers talk to
//! the API. Turning one off (`--controllers=*,-garbagecollector`) leaves its work
//! to an external kube-controller-manager.

mod bootstrap_signer;
mod clusterroles;
mod gc;
mod identity_lease;
mod kubernetes_service;
mod masterleases;
mod namespace;
mod perns;
mod protection;
mod resourcequota;
mod rootca;
mod serviceaccounts;
mod token_cleaner;
mod tokens;

use std::collections::BTreeSet;
use std::sync::Arc;

use kapi_auth::authn::serviceaccount::Issuer;
use kapi_machinery::status::ApiError;
use kapi_registry::apis::Apis;
use kapi_storage::slot::BackendSlot;

pub use identity_lease::{apiserver_id, hostname};

/// The field manager of writes made by kube-controller-manager's controllers.
const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// kube-controller-manager's controller names with their legacy aliases.
pub const CONTROLLERS: &[(&str, &str)] = &[
    ("garbage-collector-controller", "garbagecollector"),
    ("namespace-controller", "namespace"),
    ("serviceaccount-controller", "serviceaccount"),
    ("serviceaccount-token-controller", "serviceaccount-token"),
    (
        "root-ca-certificate-publisher-controller",
        "root-ca-cert-publisher",
    ),
    (
        "clusterrole-aggregation-controller",
        "clusterrole-aggregation",
    ),
    ("resourcequota-controller", "resourcequota"),
    (
        "persistentvolumeclaim-protection-controller",
        "pvc-protection",
    ),
    ("persistentvolume-protection-controller", "pv-protection"),
];

/// The controllers that run only when named (not with `*`).
pub const OFF_BY_DEFAULT: &[(&str, &str)] = &[
    ("bootstrap-signer-controller", "bootstrapsigner"),
    ("token-cleaner-controller", "tokencleaner"),
];

/// Every controller with its alias.
fn all_controllers() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    CONTROLLERS.iter().chain(OFF_BY_DEFAULT)
}

/// Which controllers run, parsed from `--controllers` as kube-controller-manager
/// does: `*` turns on every controller on by default, `foo` turns one on,
/// `-foo` turns one off; the first entry naming a controller wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    enabled: BTreeSet<&'static str>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            enabled: CONTROLLERS.iter().map(|(name, _)| *name).collect(),
        }
    }
}

impl Selection {
    pub fn parse(items: &[String]) -> Result<Selection, String> {
        let canonical = |s: &str| {
            all_controllers()
                .find(|(name, alias)| s == *name || s == *alias)
                .map(|(name, _)| *name)
        };
        let mut decided: Vec<(&'static str, bool)> = Vec::new();
        let mut star = false;
        for item in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            if item == "*" {
                star = true;
                continue;
            }
            let (name, on) = match item.strip_prefix('-') {
                Some(rest) => (rest, false),
                None => (item, true),
            };
            let known = canonical(name)
                .ok_or_else(|| format!("{name:?} is not in the list of known controllers"))?;
            if !decided.iter().any(|(n, _)| *n == known) {
                decided.push((known, on));
            }
        }
        let enabled = all_controllers()
            .map(|(name, _)| *name)
            .filter(|name| match decided.iter().find(|(n, _)| n == name) {
                Some((_, on)) => *on,
                None => star && !OFF_BY_DEFAULT.iter().any(|(n, _)| n == name),
            })
            .collect();
        Ok(Selection { enabled })
    }

    /// Whether the controller (canonical name or alias) runs.
    pub fn enabled(&self, name: &str) -> bool {
        all_controllers()
            .find(|(n, a)| name == *n || name == *a)
            .is_some_and(|(n, _)| self.enabled.contains(n))
    }
}

/// What the controllers work with: the resource table (every controller reads
/// and writes through its stores, as a client of the API would), and the few
/// facts of this server some of them publish.
pub struct Context {
    pub apis: Arc<Apis>,
    /// The storage, for the master leases (raw keys with no resource).
    pub slot: BackendSlot,
    /// Signs the tokens of legacy service account token secrets.
    pub service_accounts: Arc<Issuer>,
    /// `host:port` clients reach this server at.
    pub advertise_address: String,
    /// The port this server serves on (the `kubernetes` Service's target).
    pub port: u16,
    /// The `kubernetes` Service's ClusterIP (the range's first address).
    pub kubernetes_service_ip: String,
    /// `--kubernetes-service-node-port` (0: the Service is ClusterIP).
    pub kubernetes_service_node_port: u16,
}

/// Which controllers run and what they publish.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub controllers: Selection,
    /// Maintain the `default/kubernetes` Endpoints and EndpointSlice
    /// (`--endpoint-reconciler-type=lease`; `none` turns it off).
    pub endpoint_reconciler: bool,
    /// The cluster CA bundle the root-CA publisher puts in every namespace
    /// (PEM); without it that controller does not run.
    pub root_ca: Option<String>,
    /// Keep this server's identity Lease in `kube-system` (the
    /// `APIServerIdentity` gate).
    pub identity_lease: bool,
}

impl Options {
    /// Everything on, publishing `root_ca`.
    pub fn all(root_ca: impl Into<String>) -> Options {
        Options {
            controllers: Selection::default(),
            endpoint_reconciler: true,
            root_ca: Some(root_ca.into()),
            identity_lease: true,
        }
    }
}

/// Start the selected controllers; they run until the process ends.
pub fn spawn(cx: &Arc<Context>, opts: &Options) {
    let sel = &opts.controllers;
    if sel.enabled("namespace") {
        namespace::spawn(cx.clone());
    }
    if sel.enabled("garbagecollector") {
        gc::spawn(cx.clone());
    }
    if sel.enabled("serviceaccount") {
        serviceaccounts::spawn(cx.clone());
    }
    if sel.enabled("serviceaccount-token") {
        tokens::spawn(cx.clone(), opts.root_ca.clone());
    }
    match &opts.root_ca {
        Some(ca) if sel.enabled("root-ca-cert-publisher") => rootca::spawn(cx.clone(), ca.clone()),
        _ => {}
    }
    if sel.enabled("clusterrole-aggregation") {
        clusterroles::spawn(cx.clone());
    }
    if sel.enabled("resourcequota") {
        resourcequota::spawn(cx.clone());
    }
    if sel.enabled("pvc-protection") {
        protection::spawn_claims(cx.clone());
    }
    if sel.enabled("pv-protection") {
        protection::spawn_volumes(cx.clone());
    }
    if sel.enabled("bootstrapsigner") {
        bootstrap_signer::spawn(cx.clone());
    }
    if sel.enabled("tokencleaner") {
        token_cleaner::spawn(cx.clone());
    }
    kubernetes_service::spawn(cx.clone(), opts.endpoint_reconciler);
    if opts.identity_lease {
        identity_lease::spawn(cx.clone());
    }
}

/// Create what the controllers own before they start: the
/// `default/kubernetes` Service on the first address of the service range, as
/// kube-apiserver creates it at start (left alone when it exists).
pub async fn bootstrap(cx: &Context) -> Result<(), ApiError> {
    let services = cx
        .apis
        .lookup("", "v1", "services")
        .expect("services served");
    let svc = kubernetes_service::service(cx);
    let opts = kapi_registry::store::options::WriteOptions::default();
    ignore_exists(services.store.create(svc, &opts).await)
}

/// `Ok` for success and for "already there".
fn ignore_exists<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Selection {
        let items: Vec<String> = s.split(',').map(str::to_owned).collect();
        Selection::parse(&items).unwrap()
    }

    #[test]
    fn star_minus_and_aliases() {
        let all = parse("*");
        assert!(all.enabled("garbagecollector") && all.enabled("namespace-controller"));
        let no_gc = parse("*,-garbagecollector");
        assert!(!no_gc.enabled("garbage-collector-controller"));
        assert!(no_gc.enabled("serviceaccount"));
        let only_ns = parse("namespace");
        assert!(only_ns.enabled("namespace") && !only_ns.enabled("serviceaccount"));
        // The first entry naming a controller wins, as upstream.
        assert!(parse("namespace,-namespace").enabled("namespace"));
        assert!(!parse("").enabled("namespace"));
        // Off by default: `*` leaves them off, naming them turns them on.
        assert!(!all.enabled("bootstrapsigner") && !all.enabled("tokencleaner"));
        let kubeadm = parse("*,bootstrapsigner,tokencleaner");
        assert!(kubeadm.enabled("bootstrap-signer-controller") && kubeadm.enabled("tokencleaner"));
        assert!(kubeadm.enabled("namespace"));
        assert!(!Selection::default().enabled("tokencleaner"));
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = Selection::parse(&["*".into(), "-nope".into()]).unwrap_err();
        assert_eq!(err, "\"nope\" is not in the list of known controllers");
    }
}
