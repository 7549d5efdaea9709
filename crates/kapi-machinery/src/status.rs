//! The API error type, [`ApiError`], and its rendering as a `metav1.Status` object.
//!
//! This module owns every failure the server reports to clients: HTTP code, `StatusReason`,
//! message and `StatusDetails`. Constructors mirror upstream `k8s.io/apimachinery/pkg/api/errors`
//! `New*` functions one-for-one, with the exact upstream message formats (`configmaps "x" not
//! found`, `Operation cannot be fulfilled on ...`, `ConfigMap "x" is invalid: [...]`), so that
//! kubectl and client libraries see byte-identical errors.
//!
//! Invariants: `ApiError::to_string()` is exactly `message`; [`ApiError::to_status`] emits keys
//! in upstream's order and omits empty fields the way Go's `omitempty` does (except `metadata`,
//! which is always `{}`); `details.kind` holds the *resource* for resource-scoped errors and the
//! *kind* only for `Invalid`, as upstream does.
//!
//! Where to look next: `validation.rs` produces the [`ErrorList`] that [`ApiError::invalid`]
//! turns into causes; the HTTP layer writes `to_status()` with `code` as the response status.

use crate::validation::{aggregate, ErrorList};
use serde_json::{json, Map, Value};
use std::fmt;

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;

/// Upstream `OptimisticLockErrorMsg`, the `conflict` detail for a stale `resourceVersion`.
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// A resource within a group (`configmaps`, `deployments.apps`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group.as_str() {
            "" => f.write_str(&self.resource),
            g => write!(f, "{}.{g}", self.resource),
        }
    }
}

impl From<(&str, &str)> for GroupResource {
    fn from((group, resource): (&str, &str)) -> Self {
        GroupResource::new(group, resource)
    }
}

impl From<&GroupResource> for GroupResource {
    fn from(gr: &GroupResource) -> Self {
        gr.clone()
    }
}

/// A kind within a group (`ConfigMap`, `Deployment.apps`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        GroupKind {
            group: group.to_string(),
            kind: kind.to_string(),
        }
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group.as_str() {
            "" => f.write_str(&self.kind),
            g => write!(f, "{}.{g}", self.kind),
        }
    }
}

impl From<(&str, &str)> for GroupKind {
    fn from((group, kind): (&str, &str)) -> Self {
        GroupKind::new(group, kind)
    }
}

impl From<&GroupKind> for GroupKind {
    fn from(gk: &GroupKind) -> Self {
        gk.clone()
    }
}

macro_rules! reasons {
    ($($variant:ident => $wire:literal,)*) => {
        /// Upstream `metav1.StatusReason`. `Unknown` is the empty string and is omitted from JSON.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($variant,)*
        }

        const ALL_REASONS: &[Reason] = &[$(Reason::$variant,)*];

        impl Reason {
            /// The wire string (`"NotFound"`, `"Expired"`, `""` for `Unknown`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$variant => $wire,)*
                }
            }
        }
    };
}

reasons! {
    Unknown => "",
    Unauthorized => "Unauthorized",
    Forbidden => "Forbidden",
    NotFound => "NotFound",
    AlreadyExists => "AlreadyExists",
    Conflict => "Conflict",
    Gone => "Gone",
    Invalid => "Invalid",
    ServerTimeout => "ServerTimeout",
    StoreReadError => "StorageReadError",
    Timeout => "Timeout",
    TooManyRequests => "TooManyRequests",
    BadRequest => "BadRequest",
    MethodNotAllowed => "MethodNotAllowed",
    NotAcceptable => "NotAcceptable",
    RequestEntityTooLarge => "RequestEntityTooLarge",
    UnsupportedMediaType => "UnsupportedMediaType",
    InternalError => "InternalError",
    Expired => "Expired",
    ServiceUnavailable => "ServiceUnavailable",
}

impl Reason {
    /// Inverse of [`Reason::as_str`]; unrecognised strings map to `Unknown`.
    pub fn parse(s: &str) -> Reason {
        ALL_REASONS
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .unwrap_or(Reason::Unknown)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Upstream `metav1.StatusCause`; `reason` is the cause type (`FieldValueInvalid`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// Upstream `metav1.StatusDetails`. For resource errors `kind` holds the resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub uid: String,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u32>,
}

impl Details {
    fn for_resource(gr: &GroupResource, name: &str) -> Details {
        Details {
            name: name.to_string(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Details::default()
        }
    }

    fn retry_after(seconds: u32) -> Details {
        Details {
            retry_after_seconds: Some(seconds),
            ..Details::default()
        }
    }

    /// JSON in upstream field order, empty members omitted.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        insert_str(&mut m, "name", &self.name);
        insert_str(&mut m, "group", &self.group);
        insert_str(&mut m, "kind", &self.kind);
        insert_str(&mut m, "uid", &self.uid);
        if !self.causes.is_empty() {
            let causes = self.causes.iter().map(|c| {
                let mut cm = Map::new();
                insert_str(&mut cm, "reason", &c.reason);
                insert_str(&mut cm, "message", &c.message);
                insert_str(&mut cm, "field", &c.field);
                Value::Object(cm)
            });
            m.insert("causes".into(), Value::Array(causes.collect()));
        }
        if let Some(secs) = self.retry_after_seconds.filter(|s| *s > 0) {
            m.insert("retryAfterSeconds".into(), json!(secs));
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Details {
        let s = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let causes = v
            .get("causes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let retry = v.get("retryAfterSeconds").and_then(Value::as_u64);
        Details {
            name: s(v, "name"),
            group: s(v, "group"),
            kind: s(v, "kind"),
            uid: s(v, "uid"),
            causes: causes
                .map(|c| Cause {
                    reason: s(c, "reason"),
                    message: s(c, "message"),
                    field: s(c, "field"),
                })
                .collect(),
            retry_after_seconds: retry.and_then(|r| u32::try_from(r).ok()),
        }
    }
}

fn insert_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    if !value.is_empty() {
        m.insert(key.to_string(), Value::String(value.to_string()));
    }
}

/// A failed API request: everything needed to render a `Failure` `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    pub details: Option<Details>,
}

impl ApiError {
    pub fn new(code: u16, reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Details) -> Self {
        self.details = Some(details);
        self
    }

    /// 404 NotFound: `configmaps "x" not found`.
    pub fn not_found(gr: impl Into<GroupResource>, name: &str) -> Self {
        let gr = gr.into();
        ApiError::new(
            404,
            Reason::NotFound,
            format!("{gr} {} not found", quote(name)),
        )
        .with_details(Details::for_resource(&gr, name))
    }

    /// 409 AlreadyExists: `configmaps "x" already exists`.
    pub fn already_exists(gr: impl Into<GroupResource>, name: &str) -> Self {
        let gr = gr.into();
        ApiError::new(
            409,
            Reason::AlreadyExists,
            format!("{gr} {} already exists", quote(name)),
        )
        .with_details(Details::for_resource(&gr, name))
    }

    /// 409 AlreadyExists when a `generateName` could not be made unique.
    pub fn generate_name_conflict(gr: impl Into<GroupResource>, name: &str, retry: u32) -> Self {
        let gr = gr.into();
        let msg = format!(
            "{gr} {} already exists, the server was not able to generate a unique name for the object",
            quote(name)
        );
        let details = Details {
            retry_after_seconds: Some(retry),
            ..Details::for_resource(&gr, name)
        };
        ApiError::new(409, Reason::AlreadyExists, msg).with_details(details)
    }

    /// 409 Conflict: `Operation cannot be fulfilled on configmaps "x": <err>`.
    pub fn conflict(gr: impl Into<GroupResource>, name: &str, err: impl fmt::Display) -> Self {
        let gr = gr.into();
        let msg = format!(
            "Operation cannot be fulfilled on {gr} {}: {err}",
            quote(name)
        );
        ApiError::new(409, Reason::Conflict, msg).with_details(Details::for_resource(&gr, name))
    }

    /// 409 Conflict with the standard stale-resourceVersion message.
    pub fn optimistic_lock_conflict(gr: impl Into<GroupResource>, name: &str) -> Self {
        ApiError::conflict(gr, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    /// 409 Conflict from server-side apply, with the given causes.
    pub fn apply_conflict(causes: Vec<Cause>, message: impl Into<String>) -> Self {
        ApiError::new(409, Reason::Conflict, message).with_details(Details {
            causes,
            ..Details::default()
        })
    }

    /// 422 Invalid: `ConfigMap "x" is invalid: <aggregate>`, one cause per field error.
    pub fn invalid(gk: impl Into<GroupKind>, name: &str, errs: &ErrorList) -> Self {
        let gk = gk.into();
        let causes = errs
            .iter()
            .map(|e| Cause {
                reason: e.kind.as_str().to_string(),
                message: e.error_body(),
                field: e.field.clone(),
            })
            .collect();
        let msg = match aggregate(errs) {
            Some(agg) => format!("{gk} {} is invalid: {agg}", quote(name)),
            None => format!("{gk} {} is invalid", quote(name)),
        };
        let details = Details {
            name: name.to_string(),
            group: gk.group.clone(),
            kind: gk.kind.clone(),
            causes,
            ..Details::default()
        };
        ApiError::new(422, Reason::Invalid, msg).with_details(details)
    }

    /// 400 BadRequest with `msg` as the message.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::new(400, Reason::BadRequest, msg)
    }

    /// 401 Unauthorized; an empty message becomes `not authorized`.
    pub fn unauthorized(msg: impl Into<String>) -> Self {
        let msg = msg.into();
        let msg = if msg.is_empty() {
            "not authorized".to_string()
        } else {
            msg
        };
        ApiError::new(401, Reason::Unauthorized, msg)
    }

    /// 403 Forbidden: `configmaps "x" is forbidden: <reason>` (or `configmaps is forbidden:`
    /// without a name, `forbidden:` without a resource).
    pub fn forbidden(gr: impl Into<GroupResource>, name: &str, reason: impl fmt::Display) -> Self {
        let gr = gr.into();
        let msg = if gr.is_empty() {
            format!("forbidden: {reason}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {reason}")
        } else {
            format!("{gr} {} is forbidden: {reason}", quote(name))
        };
        ApiError::new(403, Reason::Forbidden, msg).with_details(Details::for_resource(&gr, name))
    }

    /// 405 MethodNotAllowed: `<action> is not supported on resources of kind "configmaps"`.
    pub fn method_not_supported(gr: impl Into<GroupResource>, action: &str) -> Self {
        let gr = gr.into();
        let msg = format!(
            "{action} is not supported on resources of kind {}",
            quote(&gr.to_string())
        );
        ApiError::new(405, Reason::MethodNotAllowed, msg)
            .with_details(Details::for_resource(&gr, ""))
    }

    /// 406 NotAcceptable with `msg` as the message.
    pub fn not_acceptable(msg: impl Into<String>) -> Self {
        ApiError::new(406, Reason::NotAcceptable, msg)
    }

    /// 406 NotAcceptable as the apiserver's content negotiation reports it.
    pub fn not_acceptable_types(accepted: &[&str]) -> Self {
        let msg = format!(
            "only the following media types are accepted: {}",
            accepted.join(", ")
        );
        ApiError::not_acceptable(msg)
    }

    /// 406 as go-restful (through which upstream serves its built-in
    /// resources) answers an `Accept` its route produces nothing of.
    pub fn route_not_acceptable(produces: &[&str]) -> Self {
        let msg = format!(
            "406: Not Acceptable\n\nAvailable representations: {}",
            produces.join(", ")
        );
        ApiError::new(406, Reason::NotAcceptable, msg).with_details(Details::default())
    }

    /// 415 as go-restful answers a `Content-Type` its route does not consume.
    pub fn route_unsupported_media_type() -> Self {
        ApiError::new(
            415,
            Reason::UnsupportedMediaType,
            "415: Unsupported Media Type",
        )
        .with_details(Details::default())
    }

    /// 415 UnsupportedMediaType as the apiserver reports an unknown request `Content-Type`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        let msg = format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        );
        ApiError::new(415, Reason::UnsupportedMediaType, msg)
    }

    /// 413 RequestEntityTooLarge: `Request entity too large: <msg>`.
    pub fn request_entity_too_large(msg: impl fmt::Display) -> Self {
        ApiError::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: {msg}"),
        )
    }

    /// 410 Gone (deprecated upstream in favour of [`ApiError::resource_expired`]).
    pub fn gone(msg: impl Into<String>) -> Self {
        ApiError::new(410, Reason::Gone, msg)
    }

    /// 410 Expired, e.g. a watch or list `resourceVersion` that is too old.
    pub fn resource_expired(msg: impl Into<String>) -> Self {
        ApiError::new(410, Reason::Expired, msg)
    }

    /// 500 InternalError: `Internal error occurred: <err>`, with the error as the sole cause.
    pub fn internal(err: impl fmt::Display) -> Self {
        let err = err.to_string();
        let cause = Cause {
            message: err.clone(),
            ..Cause::default()
        };
        ApiError::new(
            500,
            Reason::InternalError,
            format!("Internal error occurred: {err}"),
        )
        .with_details(Details {
            causes: vec![cause],
            ..Details::default()
        })
    }

    /// 503 ServiceUnavailable with `msg` as the message.
    pub fn service_unavailable(msg: impl Into<String>) -> Self {
        ApiError::new(503, Reason::ServiceUnavailable, msg)
    }

    /// 504 Timeout: `Timeout: <msg>`.
    pub fn timeout(msg: impl fmt::Display, retry_after_seconds: u32) -> Self {
        ApiError::new(504, Reason::Timeout, format!("Timeout: {msg}"))
            .with_details(Details::retry_after(retry_after_seconds))
    }

    /// 500 ServerTimeout: the operation should be retried by the client.
    pub fn server_timeout(gr: impl Into<GroupResource>, operation: &str, retry: u32) -> Self {
        let gr = gr.into();
        let msg = format!(
            "The {operation} operation against {gr} could not be completed at this time, please try again."
        );
        let details = Details {
            retry_after_seconds: Some(retry),
            ..Details::for_resource(&gr, operation)
        };
        ApiError::new(500, Reason::ServerTimeout, msg).with_details(details)
    }

    /// 429 TooManyRequests with `msg` as the message (upstream `NewTooManyRequests`).
    pub fn too_many_requests(msg: impl Into<String>, retry_after_seconds: u32) -> Self {
        ApiError::new(429, Reason::TooManyRequests, msg)
            .with_details(Details::retry_after(retry_after_seconds))
    }

    /// 429 TooManyRequests: `Too many requests: <msg>` (upstream `NewTooManyRequestsError`).
    pub fn too_many_requests_error(msg: impl fmt::Display) -> Self {
        ApiError::new(
            429,
            Reason::TooManyRequests,
            format!("Too many requests: {msg}"),
        )
    }

    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }

    pub fn is_already_exists(&self) -> bool {
        self.reason == Reason::AlreadyExists
    }

    pub fn is_conflict(&self) -> bool {
        self.reason == Reason::Conflict
    }

    pub fn is_invalid(&self) -> bool {
        self.reason == Reason::Invalid
    }

    /// The `metav1.Status` (`status: Failure`) for this error.
    pub fn to_status(&self) -> Value {
        let mut m = status_head("Failure");
        insert_str(&mut m, "message", &self.message);
        insert_str(&mut m, "reason", self.reason.as_str());
        if let Some(details) = &self.details {
            m.insert("details".into(), details.to_json());
        }
        if self.code != 0 {
            m.insert("code".into(), json!(self.code));
        }
        Value::Object(m)
    }

    /// Rebuild an error from a `Status` object (`kind: Status`); `None` for anything else.
    pub fn from_status(status: &Value) -> Option<ApiError> {
        if status.get("kind").and_then(Value::as_str) != Some("Status") {
            return None;
        }
        let str_of = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or("");
        let code = status.get("code").and_then(Value::as_u64).unwrap_or(0);
        Some(ApiError {
            code: u16::try_from(code).unwrap_or(0),
            reason: Reason::parse(str_of("reason")),
            message: str_of("message").to_string(),
            details: status
                .get("details")
                .filter(|d| d.is_object())
                .map(Details::from_json),
        })
    }
}

fn status_head(status: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("kind".into(), json!("Status"));
    m.insert("apiVersion".into(), json!("v1"));
    m.insert("metadata".into(), json!({}));
    m.insert("status".into(), json!(status));
    m
}

/// A `status: Success` `metav1.Status`, as returned by deletes that do not return the object
/// (`details` carries name, group, kind = resource, and uid).
pub fn success_status(details: &Details) -> Value {
    let mut m = status_head("Success");
    m.insert("details".into(), details.to_json());
    Value::Object(m)
}

/// Go `%q` of a string.
fn quote(s: &str) -> String {
    crate::validation::go_quote(s)
}
