//! Putting a server together: every part built from the parts below it, in
//! one place, from one complete [`Options`] — the resource table over the
//! storage, then authorization over the table, then the admission plugins
//! reading both, the aggregator in front, then the core server made of them
//! all ([`build`]); then the servers and controllers are started
//! ([`Built::start`]). `kapi serve` and the
//! end-to-end tests build servers only through [`build`], so what runs in a
//! test is what runs in production.

use std::sync::Arc;

use kapi_admission_plugins::Selection;
use kapi_aggregator::Aggregator;
use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authn::Authenticator;
use kapi_auth::authz::{self, Authorization, Authorizer, Mode};
use kapi_machinery::status::ApiError;
use kapi_resources::openapi::{OpenApi, Published};
use kapi_server::{RemoteApis, Server, ServerConfig, ServerParts};
use kapi_storage::slot::BackendSlot;

/// What one server is made of, as the flags say it.
pub struct Options {
    pub config: ServerConfig,
    /// Who requests are from: certificates, front proxy, static tokens, the
    /// JWT authenticators, the token webhook, anonymous. [`build`] adds what
    /// needs the resource table (service account and bootstrap tokens).
    pub authenticator: Authenticator,
    /// `--enable-bootstrap-token-auth`.
    pub bootstrap_tokens: bool,
    /// `--authorization-mode`, in order.
    pub authorization_modes: Vec<Mode>,
    /// The webhook of `--authorization-mode=...,Webhook`.
    pub authorization_webhook: Option<Arc<authz::webhook::Webhook>>,
    /// `--authorization-config` (instead of the modes and their webhook).
    pub authorization_config: Option<authz::structured::ConfigFile>,
    /// `--enable-admission-plugins` / `--disable-admission-plugins`.
    pub admission: Selection,
    /// Signs and verifies service account tokens.
    pub service_accounts: Issuer,
    /// The aggregator's front-proxy identity and what it publishes.
    pub aggregator: kapi_aggregator::Settings,
}

impl Options {
    /// kube-apiserver's defaults: RBAC, the default admission plugins, an
    /// ephemeral service account key.
    pub fn new(config: ServerConfig) -> Options {
        Options {
            config,
            authenticator: Authenticator::new(None, true),
            bootstrap_tokens: false,
            authorization_modes: vec![Mode::Rbac],
            authorization_webhook: None,
            authorization_config: None,
            admission: Selection::default(),
            service_accounts: Issuer::ephemeral(),
            aggregator: kapi_aggregator::Settings::default(),
        }
    }
}

/// The servers of the chain, built and not yet started.
pub struct Built {
    /// The core server (with the apiextensions server's resources in its
    /// table); its router is the whole HTTP application.
    pub server: Arc<Server>,
    /// The aggregator in front of it.
    pub aggregator: Arc<Aggregator>,
    /// The authenticator the server's router is made with
    /// (`server.router_with(built.authenticator.clone(), ..)`).
    pub authenticator: Arc<Authenticator>,
}

/// The servers `options` describe, serving the built-in API over `slot`.
pub fn build(options: Options, slot: BackendSlot) -> Built {
    let apis = kapi_server::builtin_apis(&slot);
    let source = match options.authorization_config {
        Some(file) => authz::Source::File(file),
        None => authz::Source::Modes(options.authorization_modes, options.authorization_webhook),
    };
    let authz = Arc::new(Authorization::from_source(source, &apis));
    let mut authenticator = options.authenticator;
    if options.bootstrap_tokens {
        authenticator = authenticator.with_bootstrap_tokens(apis.clone());
    }
    let plugins = kapi_admission_plugins::Context {
        apis: apis.clone(),
        authz: authz.clone() as Arc<dyn Authorizer>,
    };
    let admission = Arc::new(options.admission.build(&plugins));
    let openapi = Arc::new(Published::new(OpenApi::build(&apis.defs())));
    let aggregator = Arc::new(Aggregator::new(options.aggregator, apis.clone()));
    let server = Server::new(ServerParts {
        config: options.config,
        slot,
        apis,
        authz,
        service_accounts: Arc::new(options.service_accounts),
        admission,
        openapi,
        remote: Some(aggregator.clone() as Arc<dyn RemoteApis>),
    });
    Built {
        server,
        aggregator,
        authenticator: Arc::new(authenticator),
    }
}

impl Built {
    /// Bring the servers to life once storage is ready: the objects
    /// kube-apiserver creates at start, the custom resources already defined
    /// (installed before this returns), then the in-process controllers
    /// `controllers` selects and the aggregator's.
    pub async fn start(&self, controllers: &kapi_controllers::Options) -> Result<(), ApiError> {
        let server = &self.server;
        server.bootstrap().await?;
        let apiextensions = kapi_apiextensions_server::Context {
            apis: server.apis.clone(),
            slot: server.slot.clone(),
            schema: server.schema.clone(),
            openapi: server.openapi.clone(),
        };
        kapi_apiextensions_server::start(&Arc::new(apiextensions)).await;
        kapi_controllers::spawn(&Arc::new(server.controller_context()), controllers);
        kapi_aggregator::spawn(&self.aggregator);
        Ok(())
    }
}
