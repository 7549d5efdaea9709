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
//! - deletes: [`WriteAdmission::admit_delete`] (both phases) on the object as
//!   stored, inside the delete's compare-and-swap loop (`Store::delete_admitted`),
//!   as upstream's `ValidateObjectFunc` in `Storage.Delete`: an object changed
//!   between two attempts is admitted again as it is then.
//!
//! - creates and updates: [`WriteAdmission::finished`] once the write is over,
//!   with what was stored, whatever the outcome.
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
    /// The validating phase: may only accept or refuse `obj`. The objects are
    /// lent mutably so that admission can hand them to its plugins without a
    /// copy; they are given back unchanged.
    async fn validate(&self, obj: &mut Value, old: Option<&mut Value>) -> Result<(), ApiError>;
    /// A delete's admission, both phases, on the object about to be deleted;
    /// `grace` is the options' grace period as the resource's strategy
    /// settled it for this object.
    async fn admit_delete(&self, _old: &Value, _grace: Option<i64>) -> Result<(), ApiError> {
        Ok(())
    }
    /// The create or update is over: `stored` is what it wrote, `None` when
    /// it wrote nothing (it failed, or was a dry run). What the request set
    /// aside for the object and the object no longer holds goes back (a
    /// Service's ClusterIP and node ports).
    async fn finished(&self, _stored: Option<&Value>) {}

    /// A warning for the response (the strategy's, which upstream's registry
    /// adds to the request between validation and validating admission).
    fn warn(&self, _text: String) {}

    /// Whether [`WriteAdmission::finished`] looks at the stored object (a
    /// store that has not decoded it does so only then).
    fn wants_written(&self) -> bool {
        true
    }
}
