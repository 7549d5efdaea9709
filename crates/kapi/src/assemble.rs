//! Putting a server together: every part built from the parts below it, in
//! one place, from one complete [`Options`] — the resource table over the
//! storage, then authorization over the table, then the admission plugins
//! reading both, then the server made of them all. `kapi serve` and the
//! end-to-end tests build servers only through [`build`], so what runs in a
//! test is what runs in production.

use std::sync::Arc;

use kapi_admission_plugins::Selection;
use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authz::{Authorization, Authorizer, Mode};
use kapi_server::{aggregator, Server, ServerConfig, ServerParts};
use kapi_storage::slot::BackendSlot;

/// What one server is made of, as the flags say it.
pub struct Options {
    pub config: ServerConfig,
    /// `--authorization-mode`, in order.
    pub authorization_modes: Vec<Mode>,
    /// `--enable-admission-plugins` / `--disable-admission-plugins`.
    pub admission: Selection,
    /// Signs and verifies service account tokens.
    pub service_accounts: Issuer,
    /// The aggregator's front-proxy identity and what it publishes.
    pub aggregator: aggregator::Settings,
}

impl Options {
    /// kube-apiserver's defaults: RBAC, the default admission plugins, an
    /// ephemeral service account key.
    pub fn new(config: ServerConfig) -> Options {
        Options {
            config,
            authorization_modes: vec![Mode::Rbac],
            admission: Selection::default(),
            service_accounts: Issuer::ephemeral(),
            aggregator: aggregator::Settings::default(),
        }
    }
}

/// The server `options` describe, serving the built-in API over `slot`.
pub fn build(options: Options, slot: BackendSlot) -> Arc<Server> {
    let apis = kapi_server::builtin_apis(&slot);
    let authz = Arc::new(Authorization::new(&options.authorization_modes, &apis));
    let plugins = kapi_admission_plugins::Context {
        apis: apis.clone(),
        authz: authz.clone() as Arc<dyn Authorizer>,
    };
    let admission = Arc::new(options.admission.build(&plugins));
    Server::new(ServerParts {
        config: options.config,
        slot,
        apis,
        authz,
        service_accounts: Arc::new(options.service_accounts),
        admission,
        aggregator: options.aggregator,
    })
}
