//! What every verb handler gets ([`Ctx`]: the server, the resource, the parsed
//! URL, query, Accept, headers, user, audit event) and the checks they share:
//! write options from the query, the body's identity against the URL.

use std::sync::Arc;

use axum::http::HeaderMap;
use kapi_http::negotiate::Accept;
use kapi_http::request::{Query, RequestInfo};
use kapi_machinery::status::ApiError;
use kapi_registry::apis::Entry;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use crate::server::Server;

/// Everything a verb handler needs.
pub struct Ctx {
    pub srv: Arc<Server>,
    pub entry: Arc<Entry>,
    pub info: RequestInfo,
    pub query: Query,
    pub accept: Accept,
    pub headers: HeaderMap,
    /// Who is asking (set by the authentication filter).
    pub user: Option<kapi_auth::authn::UserInfo>,
    /// The authenticator that admitted the request (token reviews use it).
    pub authenticator: Option<Arc<kapi_auth::authn::Authenticator>>,
    /// The request's audit event, when audited (admission annotates it).
    pub audit: Option<kapi_auth::audit::AuditHandle>,
    /// The server's shutdown state, when the lifecycle filter runs (watches
    /// end when it stops accepting requests).
    pub lifecycle: Option<kapi_http::lifecycle::Lifecycle>,
}

impl Ctx {
    pub fn namespace(&self) -> Option<&str> {
        self.info.namespace.as_deref()
    }

    pub fn name(&self) -> &str {
        self.info.name.as_deref().unwrap_or("")
    }

    /// The write's options, validated as upstream validates its
    /// `CreateOptions` / `UpdateOptions` / `PatchOptions`: every bad one in
    /// one 422 on the options kind.
    pub fn write_options(&self) -> Result<WriteOptions, ApiError> {
        use kapi_machinery::validation::{FieldError, FieldPath};
        let mut errs = Vec::new();
        let (manager, defaulted) = match self.query.non_empty("fieldManager") {
            Some(m) => {
                errs.extend(field_manager_errors(m));
                (m.to_owned(), false)
            }
            None => (self.user_agent_manager(), true),
        };
        let dry_run = match self.query.get("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                let path = FieldPath::new("dryRun");
                errs.push(FieldError::not_supported(
                    &path,
                    serde_json::json!([other]),
                    &["All"],
                ));
                false
            }
        };
        if let Some(v) = self.query.get("fieldValidation") {
            if !matches!(v, "" | "Ignore" | "Strict" | "Warn") {
                let path = FieldPath::new("fieldValidation");
                let valid = ["", "Ignore", "Strict", "Warn"];
                errs.push(FieldError::not_supported(&path, v, &valid));
            }
        }
        if !errs.is_empty() {
            let kind = match self.info.verb {
                "create" => "CreateOptions",
                "update" => "UpdateOptions",
                _ => "PatchOptions",
            };
            let gk = kapi_machinery::status::GroupKind::new("meta.k8s.io", kind);
            return Err(ApiError::invalid(gk, "", &errs));
        }
        Ok(WriteOptions {
            dry_run,
            field_manager: Some(manager),
            field_manager_defaulted: defaulted,
            field_validation: self.query.non_empty("fieldValidation").map(str::to_owned),
            managed_fields_set: false,
            answer_json: false,
            answer_protobuf: false,
            refuse_named_revision: false,
        })
    }

    /// Upstream's default manager: the User-Agent up to its first `/`.
    fn user_agent_manager(&self) -> String {
        let ua = self
            .headers
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("unknown");
        let prefix = ua.split('/').next().unwrap_or(ua);
        prefix.chars().take(128).collect()
    }

    /// Which part of the object a write through this URL may change.
    pub fn update_target(&self) -> UpdateTarget {
        match self.info.subresource.as_deref() {
            Some("status") => UpdateTarget::Status,
            Some("approval") => UpdateTarget::Approval,
            Some("ephemeralcontainers") => UpdateTarget::EphemeralContainers,
            _ => UpdateTarget::Main,
        }
    }

    /// The write as RBAC's escalation check sees it.
    pub fn escalation_target(&self) -> kapi_auth::authz::escalation::Write<'_> {
        kapi_auth::authz::escalation::Write {
            entry: &self.entry,
            namespace: self.namespace(),
            name: self.name(),
            subresource: self.info.subresource.as_deref(),
            user: self.user.as_ref(),
        }
    }

    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }
}

/// `?fieldManager=` as upstream's `ValidateFieldManager`: at most 128 bytes,
/// printable characters only.
fn field_manager_errors(m: &str) -> Vec<kapi_machinery::validation::FieldError> {
    use kapi_machinery::validation::{FieldError, FieldPath};
    let path = FieldPath::new("fieldManager");
    let mut errs = Vec::new();
    if m.len() > 128 {
        errs.push(FieldError::too_long(&path, "", 128));
    }
    for (i, c) in m.char_indices() {
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            let detail = format!("invalid character U+{:04X} (at position {i})", c as u32);
            errs.push(FieldError::invalid(&path, m, detail));
        }
    }
    errs
}

pub fn dry_run(q: &Query) -> Result<bool, ApiError> {
    match q.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
        ))),
    }
}

/// The body's namespace must be empty or the URL's; an empty one becomes the URL's.
pub fn check_namespace(ctx: &Ctx, obj: &mut Value) -> Result<(), ApiError> {
    let Some(ns) = ctx.namespace() else {
        return Ok(());
    };
    let meta = kapi_registry::meta::meta_mut(obj);
    match meta.get("namespace").and_then(Value::as_str) {
        Some(body_ns) if !body_ns.is_empty() && body_ns != ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        Some(body_ns) if body_ns == ns => Ok(()),
        _ => {
            meta.insert("namespace".into(), ns.into());
            Ok(())
        }
    }
}
