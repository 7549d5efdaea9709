//! kapi-auth: who is asking, whether they may, and the record of it — as
//! kube-apiserver decides them. Each part is a filter of the chain plus the
//! logic behind it; `kapi-server` assembles the filters in upstream's order.
//!
//! - `authn/` — authentication: client certificates, the front proxy's
//!   request headers, static tokens, service account tokens (signed and
//!   verified here, with the issuer's discovery documents), bootstrap tokens,
//!   OIDC / structured JWT authentication, the token webhook, anonymous;
//! - `authz/` — authorization: the `--authorization-mode` chain (Node, RBAC,
//!   AlwaysAllow, AlwaysDeny, Webhook) or the `--authorization-config` one,
//!   impersonation, RBAC escalation checks, and the bootstrap roles and
//!   bindings;
//! - `cel.rs`, `config_file.rs` — CEL and strict decoding for the
//!   authentication and authorization configuration files;
//! - `audit/` — the audit policy, audit events per request stage, and the log
//!   sink.
//!
//! Every part reads the objects it needs (service accounts, RBAC objects,
//! pods) through the resource table (`kapi_registry::apis`), from the watch
//! cache. Where to look next: `kapi-server/src/filters/` (the order).

pub mod audit;
pub mod authn;
pub mod authz;
pub mod cel;
pub mod config_file;
