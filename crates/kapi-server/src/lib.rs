//! kapi-server: the HTTP layer. A request meets, in order: the filters
//! (`filters.rs`: panic recovery, authentication, authorization), then the
//! routes — health and version (`health.rs`), discovery (`discovery.rs`), OpenAPI
//! (`openapi.rs`) — and for resource URLs the handler dispatcher
//! (`handlers/`), which runs admission (`admission.rs`) and calls the generic
//! store of the resource (`kapi-registry`).
//!
//! [`Server`] holds what every handler shares: the served resources (`apis.rs`),
//! the storage slot, the schemas.

pub mod admission;
pub mod apis;
pub mod audit;
pub mod authn;
pub mod authz;
mod bootstrap;
pub mod controllers;
pub mod discovery;
pub mod fieldcheck;
mod filters;
pub mod flowcontrol;
pub mod handlers;
pub mod health;
pub mod limits;
pub mod metrics;
pub mod negotiate;
mod openapi;
mod openapi_pb;
pub mod request;
mod reviews;
pub mod tls;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_machinery::status::ApiError;
use kapi_registry::ResourceDef;
use kapi_resources::openapi::OpenApi;
use kapi_storage::slot::BackendSlot;
use serde_json::Value;

pub use admission::Cidr;
pub use limits::ChainOptions;

/// Settings the handlers need.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address clients reach us at (discovery's serverAddressByClientCIDRs).
    pub advertise_address: String,
    pub port: u16,
    pub service_cidr: Cidr,
}

pub struct Server {
    pub config: ServerConfig,
    pub apis: apis::Apis,
    pub slot: BackendSlot,
    pub schema: Arc<dyn SchemaNav>,
    pub openapi: OpenApi,
    /// Answers access reviews (the filter chain has its own check for now).
    pub authorizer: Arc<dyn authz::Authorizer>,
    allocations: admission::Allocations,
}

impl Server {
    pub fn new(config: ServerConfig, slot: BackendSlot, defs: Vec<ResourceDef>) -> Arc<Server> {
        let openapi = OpenApi::build(&defs);
        let backend: Arc<dyn kapi_storage::Backend> = Arc::new(slot.clone());
        let schema: Arc<dyn SchemaNav> = kapi_resources::patchmeta::BuiltinSchema::shared();
        Arc::new(Server {
            config,
            apis: apis::Apis::new(defs, backend, schema.clone()),
            slot,
            schema,
            openapi,
            authorizer: reviews::default_authorizer(),
            allocations: admission::Allocations::default(),
        })
    }

    /// The built-in API: every resource `kapi-resources` declares.
    pub fn builtin(config: ServerConfig, slot: BackendSlot) -> Arc<Server> {
        Self::new(config, slot, kapi_resources::registry::builtin_resources())
    }

    /// The schema type of a resource's objects (for patches).
    pub fn schema_root(&self, def: &ResourceDef) -> TypeRef {
        kapi_resources::patchmeta::root_type(&def.group, &def.version, &def.kind)
            .unwrap_or(TypeRef::UNKNOWN)
    }

    /// Fields of `obj` its schema does not know, as dotted paths.
    pub fn unknown_fields(&self, def: &ResourceDef, obj: &Value) -> Vec<String> {
        let root = self.schema_root(def);
        let mut out = Vec::new();
        if !root.is_unknown() {
            collect_unknown(self.schema.as_ref(), &root, obj, "", &mut out);
        }
        out
    }

    /// Bootstrap objects and the in-process controllers `controllers` selects;
    /// call once storage is ready.
    pub async fn start(
        self: &Arc<Self>,
        controllers: &controllers::Options,
    ) -> Result<(), ApiError> {
        bootstrap::run(self).await?;
        controllers::spawn(self, controllers);
        Ok(())
    }

    /// The whole HTTP application, filters included, with the default limits
    /// and no audit.
    pub fn router(self: &Arc<Self>, auth: Arc<authn::Authenticator>) -> Router {
        self.router_with(auth, &ChainOptions::default())
            .expect("the default filter chain opens no files")
    }

    /// The whole HTTP application with the given filter settings; starts the
    /// APF configuration controller.
    pub fn router_with(
        self: &Arc<Self>,
        auth: Arc<authn::Authenticator>,
        opts: &ChainOptions,
    ) -> Result<Router, String> {
        let chain = limits::Chain::build(opts)?;
        if let limits::Concurrency::Apf(fc) = &chain.concurrency {
            flowcontrol::spawn_controller(self.clone(), fc.clone());
        }
        let m = chain.metrics.clone();
        let routes = Router::new()
            .route(
                "/metrics",
                get(
                    move |axum::extract::State(srv): axum::extract::State<Arc<Server>>| {
                        metrics::serve(srv, m.clone())
                    },
                ),
            )
            .route("/version", get(health::version))
            .route("/version/", get(health::version))
            .route("/healthz", get(health::healthz))
            .route("/healthz/{check}", get(health::healthz_one))
            .route("/livez", get(health::livez))
            .route("/livez/{check}", get(health::livez_one))
            .route("/readyz", get(health::readyz))
            .route("/readyz/{check}", get(health::readyz_one))
            .route("/api", get(discovery::api))
            .route("/api/", get(discovery::api))
            .route("/api/v1", get(discovery::core_v1))
            .route("/apis", get(discovery::apis))
            .route("/apis/", get(discovery::apis))
            .route("/apis/{group}", get(discovery::group))
            .route("/apis/{group}/{version}", get(discovery::group_version))
            .route("/openapi/v2", get(openapi::v2))
            .route("/openapi/v3", get(openapi::v3_index))
            .route("/openapi/v3/{*path}", get(openapi::v3_document))
            .fallback(handlers::dispatch)
            .with_state(self.clone());
        Ok(filters::apply(routes, auth, &chain))
    }
}

/// Walk `obj` along its schema, noting fields the schema does not have.
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
