//! kapi-http: the HTTP vocabulary every server-side crate shares, and secure
//! serving. Nothing here knows a server: these are the words the filters, the
//! handlers, admission and the servers of the chain speak to each other.
//!
//! - `request.rs` — what a URL asks for ([`request::RequestInfo`]) and its query;
//! - `user.rs` — who is asking ([`user::UserInfo`]), set by authentication;
//! - `negotiate.rs` — content negotiation: decoding bodies (JSON, YAML,
//!   protobuf), encoding answers, `Status` error responses, tables and
//!   partial-object metadata;
//! - `body.rs` — request bodies: the size limit and reading them;
//! - `limits.rs` — what kind of request this is (long-running, mutating), its
//!   deadline, the timeout and max-inflight filters;
//! - `lifecycle.rs` — graceful termination: readiness, refused and drained
//!   requests, ended watches;
//! - `cors.rs` — `--cors-allowed-origins`;
//! - `metrics/` — the metric families with upstream's names and the filter
//!   that records every request (`mod.rs`), the registry and its text
//!   exposition (`registry.rs`);
//! - `next.rs` — what a filter hands a request on to ([`next::Next`]);
//! - `tls.rs`, `tls/` — certificates, rustls configuration, the admin
//!   kubeconfig and the accept loops.
//!
//! Where to look next: `kapi-auth` (who may), `kapi-server` (the handlers).

pub mod body;
pub mod cors;
pub mod decode;
pub mod lifecycle;
pub mod limits;
pub mod metrics;
pub mod negotiate;
pub mod next;
pub mod pretty;
pub mod request;
pub mod strict;
pub mod tls;
pub mod user;
