//! kapi-client: how the server's own components talk to the API in-process,
//! as an external client (client-go) would — the in-process controllers, the
//! apiextensions server, the aggregator, flow control's configuration
//! controller and the webhook callers all use it.
//!
//! - `accept_any.rs` — the certificate verifier of `InsecureSkipVerify`
//!   (signatures still checked), for every client that skips verification;
//! - `informer.rs` — list-then-watch over one resource's store, resuming and
//!   re-listing as client-go's reflector, one ordered stream of changes;
//! - `queue.rs` — a de-duplicating work queue and its workers;
//! - `service_resolver.rs` — a Service to a dialable endpoint (no kube-proxy
//!   in a standalone control plane);
//! - `trust.rs` — a server certificate verified against a CA bundle as Go
//!   does (a self-signed CA certificate trusted as its own server's), for
//!   every client given a CA;
//! - `webhook.rs` — the HTTPS client that POSTs reviews to webhooks
//!   (`clientConfig` by URL or by Service) and fetches an OIDC issuer's
//!   documents;
//! - `kubeconfig.rs` — a webhook's connection read from a kubeconfig file
//!   (authentication and authorization webhooks).
//!
//! Writes go straight to the stores of the resource table
//! (`kapi_registry::apis`) with `WriteOptions::for_manager`, so they pass the
//! same strategy and watch cache as a client's writes.
//!
//! Where to look next: `kapi-controllers` (the controllers built on this).

pub mod accept_any;
pub mod informer;
pub mod kubeconfig;
pub mod queue;
pub mod service_resolver;
pub mod trust;
pub mod webhook;
