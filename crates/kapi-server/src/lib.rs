//! kapi-server: the HTTP layer. A request meets, in order: the filters
//! (`filters.rs`: panic recovery, authentication, impersonation,
//! authorization), then the
//! routes — health and version (`health.rs`), discovery (`discovery.rs`), OpenAPI
//! (`openapi.rs`) — and for resource URLs the handler dispatcher
//! (`handlers/`), which runs admission (`admission/`) and calls the generic
//! store of the resource (`kapi-registry`).
//!
//! [`Server`] holds what every handler shares: the served resources (`apis.rs`),
//! the storage slot, the schemas.

mod bootstrap;
mod componentstatus;
pub mod discovery;
pub mod fieldcheck;
pub mod filters;
pub mod handlers;
pub mod health;
mod openapi;
mod openapi_pb;
mod patchview;
mod remote;
mod rest_storage;
mod reviews;
mod services;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use kapi_auth::authn::discovery as discovery_docs;
use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authn::Authenticator;
use kapi_auth::authz::Authorization;
use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_machinery::status::ApiError;
use kapi_registry::apis;
use kapi_registry::ResourceDef;
use kapi_resources::openapi::{OpenApi, Published};
use kapi_storage::slot::BackendSlot;
use serde_json::Value;

pub use filters::ChainOptions;
pub use kapi_http::tls;
pub use remote::RemoteApis;
pub use services::Cidr;

/// Where this server is reached and what it allocates from.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address clients reach us at (discovery's serverAddressByClientCIDRs).
    pub advertise_address: String,
    pub port: u16,
    pub service_cidr: Cidr,
}

/// Everything a server is made of, each part built from the parts below it
/// (the resource table first, then what reads it); [`Server::new`] puts them
/// together into a server that does not change afterwards.
pub struct ServerParts {
    pub config: ServerConfig,
    pub slot: BackendSlot,
    /// The served resources ([`builtin_apis`]).
    pub apis: Arc<apis::Apis>,
    /// The `--authorization-mode` chain over `apis`.
    pub authz: Arc<Authorization>,
    /// Signs and verifies service account tokens.
    pub service_accounts: Arc<Issuer>,
    /// The admission chain every write passes.
    pub admission: Arc<kapi_admission::Chain>,
    /// The OpenAPI documents of `apis`, which the apiextensions server
    /// republishes as custom resources come and go.
    pub openapi: Arc<Published>,
    /// The group-versions served elsewhere (the aggregator in front of this
    /// server in the chain), when there is one.
    pub remote: Option<Arc<dyn RemoteApis>>,
}

/// The resource table of the built-in API (every resource `kapi-resources`
/// declares, and CustomResourceDefinitions) over `slot`, with its watch cache;
/// custom resources are installed into it as their definitions come.
pub fn builtin_apis(slot: &BackendSlot) -> Arc<apis::Apis> {
    let mut defs = kapi_resources::registry::builtin_resources();
    defs.push(kapi_apiextensions::crd::definitions_resource());
    let backend: Arc<dyn kapi_storage::Backend> = Arc::new(slot.clone());
    let schema: Arc<dyn SchemaNav> = kapi_resources::patchmeta::BuiltinSchema::shared();
    let custom = std::iter::once(kapi_apiextensions::crd::CUSTOM_PREFIX.to_owned());
    let root_of = |d: &ResourceDef| {
        kapi_resources::patchmeta::root_type(&d.group, &d.version, &d.kind)
            .unwrap_or(TypeRef::UNKNOWN)
    };
    Arc::new(apis::Apis::new(defs, backend, schema, root_of, custom))
}

pub struct Server {
    pub config: ServerConfig,
    pub apis: Arc<apis::Apis>,
    pub slot: BackendSlot,
    pub schema: Arc<dyn SchemaNav>,
    /// The OpenAPI documents, republished when custom resources come or go
    /// (by the apiextensions server).
    pub openapi: Arc<Published>,
    /// The `--authorization-mode` chain every request and access review asks,
    /// with RBAC's view (escalation checks use it in every mode).
    pub authz: Arc<Authorization>,
    /// Signs and verifies service account tokens.
    pub service_accounts: Arc<Issuer>,
    /// Services' ClusterIPs and node ports.
    pub(crate) services: Arc<services::ServiceAllocator>,
    /// The group-versions served elsewhere (`RemoteApis`).
    pub remote: Option<Arc<dyn RemoteApis>>,
    /// The admission chain.
    pub admission: Arc<kapi_admission::Chain>,
}

impl Server {
    /// The server made of `parts`.
    pub fn new(parts: ServerParts) -> Arc<Server> {
        let backend: Arc<dyn kapi_storage::Backend> = Arc::new(parts.slot.clone());
        let services = Arc::new(services::ServiceAllocator::new(
            backend,
            parts.config.service_cidr,
        ));
        parts.apis.set_hooks("", "v1", "services", services.clone());
        Arc::new(Server {
            config: parts.config,
            schema: kapi_resources::patchmeta::BuiltinSchema::shared(),
            openapi: parts.openapi,
            apis: parts.apis,
            slot: parts.slot,
            authz: parts.authz,
            service_accounts: parts.service_accounts,
            services,
            remote: parts.remote,
            admission: parts.admission,
        })
    }

    /// What the in-process controllers work with.
    pub fn controller_context(&self) -> kapi_controllers::Context {
        kapi_controllers::Context {
            apis: self.apis.clone(),
            slot: self.slot.clone(),
            service_accounts: self.service_accounts.clone(),
            advertise_address: self.config.advertise_address.clone(),
            port: self.config.port,
            kubernetes_service_ip: self.config.service_cidr.nth(1).to_string(),
        }
    }

    /// The OpenAPI documents of what is served now.
    pub fn openapi(&self) -> OpenApi {
        self.openapi.current()
    }

    /// The schema type of a resource's objects (for patches).
    pub fn schema_root(&self, def: &ResourceDef) -> TypeRef {
        kapi_resources::patchmeta::root_type(&def.group, &def.version, &def.kind)
            .unwrap_or(TypeRef::UNKNOWN)
    }

    /// Fields of `obj` its schema does not know, as dotted paths.
    pub fn unknown_fields(&self, def: &ResourceDef, obj: &Value) -> Vec<String> {
        if let Some(fields) = def.strategy.unknown_fields(obj) {
            return fields;
        }
        let root = self.schema_root(def);
        let mut out = Vec::new();
        if !root.is_unknown() {
            collect_unknown(self.schema.as_ref(), &root, obj, "", &mut out);
        }
        out
    }

    /// Drop the fields of `obj` its schema does not know, as upstream's decoding
    /// into typed objects does (under `fieldValidation` Warn and Ignore).
    pub fn prune_unknown(&self, def: &ResourceDef, obj: &mut Value) {
        let root = self.schema_root(def);
        if !root.is_unknown() {
            prune_unknown(self.schema.as_ref(), &root, obj);
        }
    }

    /// Create what kube-apiserver creates at start (namespaces, the
    /// `kubernetes` Service, system priority classes, the flow control and RBAC
    /// bootstrap objects); call once storage is ready.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        bootstrap::run(self).await
    }

    /// The whole HTTP application, filters included, with the default limits
    /// and no audit.
    pub fn router(self: &Arc<Self>, auth: Arc<Authenticator>) -> Router {
        self.router_with(auth, &ChainOptions::default())
            .expect("the default filter chain opens no files")
    }

    /// The whole HTTP application with the given filter settings; starts the
    /// APF configuration controller.
    pub fn router_with(
        self: &Arc<Self>,
        auth: Arc<Authenticator>,
        opts: &ChainOptions,
    ) -> Result<Router, String> {
        let chain = filters::Chain::build(opts)?;
        if let filters::Concurrency::Apf(fc) = &chain.concurrency {
            kapi_flowcontrol::spawn_controller(&self.apis, fc.clone());
        }
        let m = chain.metrics.clone();
        let routes = Router::new()
            .route(
                "/metrics",
                get(
                    move |axum::extract::State(srv): axum::extract::State<Arc<Server>>| async move {
                        kapi_http::metrics::serve(&srv.apis, m).await
                    },
                ),
            )
            .route("/version", get(health::version))
            .route("/version/", get(health::version))
            .route(
                discovery_docs::CONFIG_PATH,
                get(|State(srv): State<Arc<Server>>| async move {
                    discovery_docs::serve_configuration(
                        &srv.service_accounts,
                        &srv.config.advertise_address,
                    )
                }),
            )
            .route(
                discovery_docs::JWKS_PATH,
                get(|State(srv): State<Arc<Server>>| async move {
                    discovery_docs::serve_jwks(&srv.service_accounts, &srv.config.advertise_address)
                }),
            )
            .route("/healthz", get(health::healthz))
            .route("/healthz/{check}", get(health::healthz_one))
            .route("/livez", get(health::livez))
            .route("/livez/{check}", get(health::livez_one))
            .route("/readyz", get(health::readyz))
            .route("/readyz/{check}", get(health::readyz_one))
            .route("/api", get(discovery::api))
            .route("/api/", get(discovery::api))
            .route("/api/v1", get(discovery::core_v1))
            .route("/api/v1/", get(discovery::core_v1))
            .route("/apis", get(discovery::apis))
            .route("/apis/", get(discovery::apis))
            .route("/apis/{group}", get(discovery::group))
            .route("/apis/{group}/", get(discovery::group))
            .route("/apis/{group}/{version}", get(discovery::group_version))
            .route("/apis/{group}/{version}/", get(discovery::group_version))
            .route("/openapi/v2", get(openapi::v2))
            .route("/openapi/v3", get(openapi::v3_index))
            .route("/openapi/v3/{*path}", get(openapi::v3_document))
            .fallback(handlers::dispatch)
            // The server in front of this one (the aggregator) gets each
            // request first, after the filters (`filters::apply`).
            .layer(axum::middleware::from_fn_with_state(
                self.remote.clone(),
                remote::delegate,
            ))
            .with_state(self.clone());
        let auth = Arc::new(
            auth.as_ref()
                .clone()
                .with_service_accounts(self.service_accounts.clone(), self.apis.clone()),
        );
        Ok(filters::apply(routes, auth, self.authz.clone(), &chain))
    }
}

/// Walk `obj` along its schema, noting fields the schema does not have.
fn prune_unknown(schema: &dyn SchemaNav, ty: &TypeRef, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if !schema.is_struct(ty) {
        return;
    }
    map.retain(|k, _| schema.field(ty, k).is_some());
    for (k, v) in map.iter_mut() {
        let Some(info) = schema.field(ty, k) else {
            continue;
        };
        if info.elem.is_unknown() {
            continue;
        }
        match v {
            Value::Array(items) => {
                for item in items {
                    prune_unknown(schema, &info.elem, item);
                }
            }
            Value::Object(_) => prune_unknown(schema, &info.elem, v),
            _ => {}
        }
    }
}

fn collect_unknown(
    schema: &dyn SchemaNav,
    ty: &TypeRef,
    obj: &Value,
    path: &str,
    out: &mut Vec<String>,
) {
    let Some(map) = obj.as_object() else {
        return;
    };
    if !schema.is_struct(ty) {
        return;
    }
    for (k, v) in map {
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        match schema.field(ty, k) {
            None => out.push(here),
            Some(info) if info.elem.is_unknown() => {}
            Some(info) => match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        collect_unknown(schema, &info.elem, item, &format!("{here}[{i}]"), out);
                    }
                }
                Value::Object(_) => collect_unknown(schema, &info.elem, v, &here, out),
                _ => {}
            },
        }
    }
}
