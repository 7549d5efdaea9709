//! kapi-aggregator — the aggregator, the outermost server of the chain (DESIGN point 7): it owns
//! `apiregistration.k8s.io` APIServices and sends every request under a
//! remote APIService's group-version (`spec.service` set) to that service;
//! everything else falls through to the core server and, after it, the
//! apiextensions server (the handler dispatcher).
//!
//! | part | file | upstream |
//! |---|---|---|
//! | remote group-versions in memory ([`Aggregator`]) | this file | `apiserver.go` proxy handlers |
//! | local APIServices for built-in and custom group-versions | `autoregister.rs` | `autoregister`, `crdregistration` |
//! | the `Available` condition, remote discovery fetch | `available.rs` | `status/local`, `status/remote` |
//! | the proxy (after the filters, as upstream) | `proxy.rs` | `handler_proxy.go` |
//! | the TLS client to extension servers | `client.rs` | `transport` |
//! | remote OpenAPI documents | `openapi.rs` | `openapi/aggregator` |
//! | remote groups in discovery | `discovery.rs` | `handler_apis.go`, `discovery/aggregated` |
//! | `kube-system/extension-apiserver-authentication` | `authinfo.rs` | `clusterauthenticationtrust` |
//!
//! Invariants: the table only holds remote APIServices as the availability
//! controller last saw them; a group-version not in it is served locally.
//! A request to an unavailable remote group-version is answered 503 here,
//! never passed on.

pub mod authinfo;
pub mod autoregister;
pub mod available;
pub mod client;
pub mod discovery;
pub mod openapi;
pub mod proxy;

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use kapi_registry::apis::Apis;

/// The label autoregister puts on the APIServices it manages.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// One remote APIService as the availability controller last saw it.
#[derive(Clone)]
pub struct Remote {
    /// The APIService's name (`<version>.<group>`).
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    pub namespace: String,
    pub service: String,
    pub port: i64,
    /// How requests reach it (trust, server name, client certificate).
    pub tls: Arc<rustls::ClientConfig>,
    /// What opens its connections (the `cluster` egress selection).
    pub dialer: Arc<dyn kapi_egress::Dialer>,
    /// `Available` is True.
    pub available: bool,
    /// The server's `APIResourceList` for this group-version, when fetched.
    pub discovery: Option<Arc<Value>>,
    /// The server's `/openapi/v2` document, when fetched.
    pub openapi_v2: Option<Arc<Value>>,
    /// The server's `/openapi/v3/apis/<group>/<version>` document and its hash.
    pub openapi_v3: Option<(bytes::Bytes, String)>,
}

impl Remote {
    /// The name the serving certificate must carry (`<svc>.<ns>.svc`).
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }
}

/// How the aggregator is set up (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`, the client CAs it publishes).
#[derive(Clone)]
pub struct Settings {
    /// The front-proxy client certificate and key (PEM) presented to
    /// extension servers.
    pub proxy_client: Option<(String, String)>,
    /// How often every remote APIService is checked again (upstream: 30 s).
    pub resync: Duration,
    /// What `kube-system/extension-apiserver-authentication` says.
    pub auth_info: Option<authinfo::Info>,
    /// How APIServices' services are dialled (`--enable-aggregator-routing`).
    pub routing: kapi_client::service_resolver::Routing,
    /// `--aggregator-reject-forwarding-redirect` (default on): an extension
    /// server's redirect is answered 502 instead of passed to the client.
    pub reject_forwarding_redirect: bool,
    /// How extension servers are reached (the `cluster` selection of
    /// `--egress-selector-config-file`, as upstream's proxy and
    /// availability checks).
    pub egress: kapi_egress::Egress,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            proxy_client: None,
            resync: Duration::from_secs(30),
            auth_info: None,
            routing: Default::default(),
            reject_forwarding_redirect: true,
            egress: Default::default(),
        }
    }
}

/// The remote table, the settings it was built with, and the resource table
/// (APIServices, and the Services their requests go to).
pub struct Aggregator {
    remotes: RwLock<HashMap<(String, String), Remote>>,
    settings: Settings,
    pub apis: Arc<Apis>,
}

impl Aggregator {
    pub fn new(settings: Settings, apis: Arc<Apis>) -> Aggregator {
        Aggregator {
            remotes: RwLock::default(),
            settings,
            apis,
        }
    }

    /// The remote APIService serving `group/version`, if any.
    pub fn remote(&self, group: &str, version: &str) -> Option<Remote> {
        self.remotes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(group.to_owned(), version.to_owned()))
            .cloned()
    }

    /// Every remote APIService.
    pub fn remotes(&self) -> Vec<Remote> {
        let mut all: Vec<Remote> = self
            .remotes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    pub(crate) fn put(&self, remote: Remote) {
        let key = (remote.group.clone(), remote.version.clone());
        let mut remotes = self.remotes.write().unwrap_or_else(PoisonError::into_inner);
        // An APIService whose group-version changed leaves its old entry.
        remotes.retain(|k, r| r.name != remote.name || *k == key);
        remotes.insert(key, remote);
    }

    /// Forget the remote APIService named `name` (deleted, or now local).
    pub(crate) fn forget(&self, name: &str) {
        self.remotes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, r| r.name != name);
    }

    pub(crate) fn proxy_client(&self) -> Option<(String, String)> {
        self.settings.proxy_client.clone()
    }

    pub(crate) fn authentication_info(&self) -> Option<authinfo::Info> {
        self.settings.auth_info.clone()
    }

    pub(crate) fn resync(&self) -> Duration {
        self.settings.resync
    }

    /// How services are dialled (`--enable-aggregator-routing`), for the
    /// aggregator and the server's other clients of services.
    pub fn routing(&self) -> kapi_client::service_resolver::Routing {
        self.settings.routing
    }
}

#[async_trait::async_trait]
impl kapi_server::RemoteApis for Aggregator {
    async fn serve(
        &self,
        req: axum::extract::Request,
    ) -> Result<axum::response::Response, axum::extract::Request> {
        proxy::serve(self, req).await
    }

    fn extend_group_list(&self, groups: &mut Vec<Value>) {
        discovery::extend_group_list(self, groups)
    }

    fn extend_aggregated(&self, items: &mut Vec<Value>) {
        discovery::extend_aggregated(self, items)
    }

    fn merged_v2(&self, local: &[u8]) -> Option<Vec<u8>> {
        openapi::merged_v2(self, local)
    }

    fn extend_v3_index(&self, index: &mut Value) {
        openapi::extend_v3_index(self, index)
    }

    fn v3_document(&self, path: &str) -> Option<(bytes::Bytes, String)> {
        openapi::v3_document(self, path)
    }
}

/// Start the aggregator's controllers: autoregister and availability.
pub fn spawn(agg: &Arc<Aggregator>) {
    autoregister::spawn(agg.clone());
    available::spawn(agg.clone());
    authinfo::spawn(agg.clone());
}

/// The `Available` condition of an object, if any.
fn condition(obj: &Value) -> Option<&Value> {
    kapi_resources::apiregistration::available_condition(obj)
}

/// `(group priority, version priority)` upstream gives a built-in
/// group-version (`cmd/kube-apiserver/app/aggregator.go`); `None` for one it
/// does not list, which then gets no APIService, as upstream.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    const TABLE: &[(&str, &str, i64, i64)] = &[
        ("", "v1", 18000, 1),
        // kube-aggregator's own group (listed first by discovery).
        ("apiregistration.k8s.io", "v1", 18000, 15),
        ("apps", "v1", 17800, 15),
        ("events.k8s.io", "v1", 17750, 15),
        ("events.k8s.io", "v1beta1", 17750, 5),
        ("authentication.k8s.io", "v1", 17700, 15),
        ("authentication.k8s.io", "v1beta1", 17700, 9),
        ("authentication.k8s.io", "v1alpha1", 17700, 1),
        ("authorization.k8s.io", "v1", 17600, 15),
        ("autoscaling", "v1", 17500, 15),
        ("autoscaling", "v2", 17500, 30),
        ("autoscaling", "v2beta1", 17500, 9),
        ("autoscaling", "v2beta2", 17500, 1),
        ("batch", "v1", 17400, 15),
        ("batch", "v1beta1", 17400, 9),
        ("batch", "v2alpha1", 17400, 9),
        ("certificates.k8s.io", "v1", 17300, 15),
        ("certificates.k8s.io", "v1alpha1", 17300, 1),
        ("networking.k8s.io", "v1", 17200, 15),
        ("networking.k8s.io", "v1alpha1", 17200, 1),
        ("policy", "v1", 17100, 15),
        ("policy", "v1beta1", 17100, 9),
        ("rbac.authorization.k8s.io", "v1", 17000, 15),
        ("storage.k8s.io", "v1", 16800, 15),
        ("storage.k8s.io", "v1beta1", 16800, 9),
        ("storage.k8s.io", "v1alpha1", 16800, 1),
        ("apiextensions.k8s.io", "v1", 16700, 15),
        ("admissionregistration.k8s.io", "v1", 16700, 15),
        ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
        ("scheduling.k8s.io", "v1", 16600, 15),
        ("coordination.k8s.io", "v1", 16500, 15),
        ("node.k8s.io", "v1", 16300, 15),
        ("node.k8s.io", "v1alpha1", 16300, 1),
        ("node.k8s.io", "v1beta1", 16300, 9),
        ("discovery.k8s.io", "v1", 16200, 15),
        ("discovery.k8s.io", "v1beta1", 16200, 12),
        ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
        ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
        ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
        ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
        ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
        ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
        ("resource.k8s.io", "v1alpha2", 15900, 9),
    ];
    TABLE
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map(|(_, _, g, v)| (*g, *v))
}
