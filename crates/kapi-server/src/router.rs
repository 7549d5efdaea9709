//! The whole HTTP application of the core server: the routes (health and
//! version, issuer documents, discovery, OpenAPI, `/metrics`), the handler
//! dispatcher for everything else, the server in front (`remote.rs`) asked
//! first, and the filter chain around it all (`filters/`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use kapi_auth::authn::discovery as discovery_docs;
use kapi_auth::authn::Authenticator;

use crate::filters::{self, ChainOptions};
use crate::server::Server;
use crate::{discovery, handlers, health, openapi};

impl Server {
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
        kapi_http::metrics::spawn_db_size_poll(&m, &self.apis);
        let version_body = health::version_body(self.config.emulation);
        let version = move || {
            let body = version_body.clone();
            async move { health::version(body) }
        };
        let routes = Router::new()
            .route(
                "/metrics",
                get(
                    move |axum::extract::State(srv): axum::extract::State<Arc<Server>>| async move {
                        kapi_http::metrics::serve(&srv.apis, m).await
                    },
                ),
            )
            .route("/version", get(version.clone()))
            .route("/version/", get(version))
            // Upstream serves both documents with a trailing slash too.
            .route(discovery_docs::CONFIG_PATH, get(issuer_configuration))
            .route(
                &format!("{}/", discovery_docs::CONFIG_PATH),
                get(issuer_configuration),
            )
            .route(discovery_docs::JWKS_PATH, get(issuer_jwks))
            .route(&format!("{}/", discovery_docs::JWKS_PATH), get(issuer_jwks))
            .route("/healthz", get(health::healthz))
            .route("/healthz/{*check}", get(health::healthz_one))
            .route("/livez", get(health::livez))
            .route("/livez/{*check}", get(health::livez_one))
            .route("/readyz", get(health::readyz))
            .route("/readyz/{*check}", get(health::readyz_one))
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
            .with_state(self.clone());
        let auth = Arc::new(
            auth.as_ref()
                .clone()
                .with_service_accounts(self.service_accounts.clone(), self.apis.clone()),
        );
        // The server in front of this one (the aggregator) gets each request
        // first, after the filters.
        let remote = self.remote.clone();
        Ok(filters::apply(
            routes,
            auth,
            self.authz.clone(),
            &chain,
            remote,
        ))
    }
}

/// The service account issuer's discovery document (a go-restful route
/// upstream: an `Accept` it does not produce is 406).
async fn issuer_configuration(State(srv): State<Arc<Server>>, headers: HeaderMap) -> Response {
    if let Err(e) = handlers::restful_accepts(&headers, &["application/json"]) {
        return kapi_http::negotiate::error_response(&e);
    }
    discovery_docs::serve_configuration(&srv.service_accounts, srv.config.external_address())
}

/// The service account issuer's key set (a go-restful route too).
async fn issuer_jwks(State(srv): State<Arc<Server>>, headers: HeaderMap) -> Response {
    if let Err(e) = handlers::restful_accepts(&headers, &["application/jwk-set+json"]) {
        return kapi_http::negotiate::error_response(&e);
    }
    discovery_docs::serve_jwks(&srv.service_accounts, srv.config.external_address())
}
