//! The handler installer: one dispatcher for every resource URL. It resolves the
//! request to a resource, checks the verb against what the resource declares
//! (`ResourceDef::verbs` and its subresources — the same declaration discovery
//! reads), and hands over to the verb's handler, one per file.

pub(crate) mod admit;
mod apply;
mod binding;
mod chunked;
mod componentstatus;
mod connect;
mod create;
mod ctx;
mod delete;
mod dispatch;
mod eviction;
pub mod fieldcheck;
pub(crate) mod get;
mod identity;
mod json_fast;
pub(crate) mod list;
mod patch;
mod pb_fast;
mod reviews;
mod scale;
mod token;
mod traced;
mod update;
mod watch;

pub use ctx::{check_namespace, dry_run, Ctx};
pub use dispatch::dispatch;
pub(crate) use dispatch::plain_not_found;
pub(crate) use dispatch::restful_accepts;
pub use identity::check_identity;
pub use kapi_http::body::{read_body, MAX_BODY};
pub use kapi_http::request::not_found;
