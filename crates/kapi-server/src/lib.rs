//! kapi-server: the core server of the chain. A request meets, in order: the
//! filters (`filters/`, assembled in request order from `kapi-http`,
//! `kapi-auth` and `kapi-flowcontrol`), the server in front (`remote.rs`: the
//! aggregator takes the remote group-versions), then the routes — health and
//! version (`health.rs`), discovery (`discovery.rs`), OpenAPI (`openapi.rs`),
//! the issuer documents — and for resource URLs the handler dispatcher
//! (`handlers/`, one verb per file), which runs admission (`kapi-admission`,
//! `handlers/admit.rs`) and calls the generic store of the resource
//! (`kapi-registry`).
//!
//! [`Server`] is made once from [`ServerParts`] (the resource table,
//! authorization, admission, the token issuer, the OpenAPI documents, the
//! server in front) and does not change afterwards; `kapi::assemble` builds the
//! parts. Where to look next: `handlers/mod.rs`.

// The filter chain (`filters/`) nests a dozen stages' futures in one type;
// proving it `Send` takes the compiler deeper than its default limit.
#![recursion_limit = "256"]

mod bootstrap;
pub mod discovery;
pub mod filters;
pub mod handlers;
pub mod health;
mod openapi;
mod openapi_pb;
mod patchview;
mod remote;
mod rest_storage;
mod router;
mod server;
mod services;

pub use filters::ChainOptions;
pub use kapi_http::tls;
pub use remote::RemoteApis;
pub use server::{builtin_apis, builtin_defs, Server, ServerConfig, ServerParts};
pub use services::Cidr;
