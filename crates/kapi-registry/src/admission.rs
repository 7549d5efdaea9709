//! The admission interface the store calls inside its writes. The server's
//! admission chain (`kapi-server/src/admission/`) implements [`WriteAdmission`]
//! for one request; the store's admitted writes (`Store::create_admitted`,
//! `Store::update_admitted`) call it where upstream's generic registry calls
//! its admission functions:
//!
//! - updates, patches and applies: [`WriteAdmission::mutate`] on the object the
//!   update or patch produced from the current object, before the strategy's
//!   preparation; [`WriteAdmission::validate`] on the finished object, after the
//!   strategy validated it; both inside the compare-and-swap loop, so a
//!   concurrent write makes them run again on the newer object;
//! - creates: the handler runs the mutating phase before the store; the store
//!   runs [`WriteAdmission::validate`] after the strategy validated the object,
//!   just before the write.
//!
//! `old` is `None` for a create (also a PUT or apply that creates).

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use serde_json::Value;

/// One request's admission, as the store sees it.
#[async_trait]
pub trait WriteAdmission: Send + Sync {
    /// The mutating phase: may change `obj`.
    async fn mutate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError>;
    /// The validating phase: may only accept or refuse `obj`.
    async fn validate(&self, obj: &Value, old: Option<&Value>) -> Result<(), ApiError>;
}
