//! The authorization filter (upstream `filters.WithAuthorization`): every
//! request's attributes go to the server's authorizer; anything not allowed is
//! answered 403 with upstream's `Forbidden` Status — or 500 when an
//! authorizer failed on the way (a webhook that could not be asked). The decision and the
//! authorizer's reason go into the audit event as upstream's
//! `authorization.k8s.io/decision` (`allow` / `forbid`) and
//! `authorization.k8s.io/reason` annotations.
//!
//! Attributes as upstream's `RequestInfoFactory`: a URL `request.rs` parses is
//! a resource request with its verb (`get`, `list`, `watch`, `create`, …); for
//! `list`/`watch` a `fieldSelector` of `metadata.name=<n>` names the object;
//! everything else is a non-resource request whose verb is the lower-case HTTP
//! method and whose path is the URL path.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use kapi_http::next::Next;
use kapi_machinery::status::{ApiError, GroupResource};

use super::{Attributes, ResourceAttrs};
use crate::audit::AuditHandle;
use crate::authz::Authorizer;
use kapi_http::limits::Kind;
use kapi_http::negotiate::error_response_for;
use kapi_http::request::{self, Query};
use kapi_http::user::UserInfo;

/// The attributes of an HTTP request made by `user`.
pub fn attributes(
    user: &UserInfo,
    method: &axum::http::Method,
    uri: &axum::http::Uri,
) -> Attributes {
    let query = Query::parse(uri.query());
    let info = request::parse(method, uri.path(), &query);
    attributes_of(user, method, uri, &query, info)
}

/// [`attributes`] of a request whose URL was parsed already (`info`).
fn attributes_of(
    user: &UserInfo,
    method: &axum::http::Method,
    uri: &axum::http::Uri,
    query: &Query,
    info: Option<request::RequestInfo>,
) -> Attributes {
    match info {
        Some(info) => {
            let mut name = info.name.clone().unwrap_or_default();
            if matches!(info.verb, "list" | "watch") && name.is_empty() {
                if let Some(sel) = query.get("fieldSelector") {
                    name = name_from_selector(sel).unwrap_or_default();
                }
            }
            // A namespace is its own namespace (upstream's RequestInfo), so
            // RoleBindings in it may grant reading it.
            let namespace = match (&info.namespace, info.resource.as_str(), &info.name) {
                (None, "namespaces", Some(n)) if info.group.is_empty() => n.clone(),
                (ns, _, _) => ns.clone().unwrap_or_default(),
            };
            let verb = if info.verb.is_empty() {
                method.as_str().to_ascii_lowercase()
            } else {
                info.verb.to_owned()
            };
            Attributes::resource(
                user,
                &verb,
                ResourceAttrs {
                    group: info.group,
                    version: info.version,
                    resource: info.resource,
                    subresource: info.subresource.unwrap_or_default(),
                    namespace,
                    name,
                },
            )
        }
        None => Attributes {
            user: user.clone(),
            verb: method.as_str().to_ascii_lowercase(),
            resource: None,
            path: Some(uri.path().to_owned()),
        },
    }
}

/// `metadata.name=<n>` (or `==`) as the only requirement of a field selector.
fn name_from_selector(sel: &str) -> Option<String> {
    let sel = sel.trim();
    if sel.contains(',') {
        return None;
    }
    let rest = sel.strip_prefix("metadata.name")?.trim_start();
    let value = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
    Some(value.trim().to_owned())
}

/// The 403 upstream writes for `attrs` (details carry group, resource, name).
pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let msg = attrs.forbidden_message(reason);
    match &attrs.resource {
        Some(r) => ApiError::forbidden(GroupResource::new(&r.group, &r.resource), &r.name, msg),
        None => ApiError::forbidden(GroupResource::new("", ""), "", msg),
    }
}

/// axum middleware: authorize the request as its (possibly impersonated) user.
pub async fn authorize_layer<N: Next>(
    State(authz): State<Arc<dyn Authorizer>>,
    req: Request,
    next: N,
) -> Response {
    // The attributes hold the one copy of the user the filter needs.
    let user = req
        .extensions()
        .get::<UserInfo>()
        .unwrap_or(UserInfo::anonymous_ref());
    let query = Query::parse(req.uri().query());
    let info = Kind::of(&req).info_for(req.method(), req.uri(), &query);
    let attrs = attributes_of(user, req.method(), req.uri(), &query, info);
    let decision = authz.authorize(&attrs).await;
    let audit = req.extensions().get::<AuditHandle>();
    let accept = req
        .headers()
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    if decision.allowed() {
        if let Some(audit) = audit {
            audit.annotate("authorization.k8s.io/decision", "allow");
            audit.annotate("authorization.k8s.io/reason", decision.reason.as_str());
        }
        return next.run(req).await;
    }
    if let Some(error) = &decision.error {
        // As upstream: an authorizer that failed, with nothing allowing, is
        // the server's error, not the user's.
        tracing::warn!(user = %attrs.user.name, verb = %attrs.verb, %error, "authorization failed");
        if let Some(audit) = audit {
            audit.annotate("authorization.k8s.io/reason", "internal error");
        }
        return error_response_for(&ApiError::internal(error), accept);
    }
    if let Some(audit) = audit {
        audit.annotate("authorization.k8s.io/decision", "forbid");
        audit.annotate("authorization.k8s.io/reason", decision.reason.as_str());
    }
    tracing::debug!(user = %attrs.user.name, verb = %attrs.verb, reason = %decision.reason, "forbidden");
    error_response_for(&forbidden(&attrs, &decision.reason), accept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{Method, Uri};

    fn attrs(m: Method, uri: &str) -> Attributes {
        attributes(&UserInfo::default(), &m, &uri.parse::<Uri>().unwrap())
    }

    #[test]
    fn request_attributes_as_upstream() {
        let a = attrs(Method::GET, "/api/v1/namespaces/default/configmaps");
        let r = a.resource.unwrap();
        assert_eq!(
            (a.verb.as_str(), r.resource.as_str(), r.namespace.as_str()),
            ("list", "configmaps", "default")
        );
        let a = attrs(
            Method::GET,
            "/api/v1/namespaces/x/pods?watch=1&fieldSelector=metadata.name%3Dp1",
        );
        assert_eq!(
            (a.verb.as_str(), a.resource.unwrap().name.as_str()),
            ("watch", "p1")
        );
        let a = attrs(
            Method::PUT,
            "/apis/apps/v1/namespaces/x/deployments/d/scale",
        );
        let r = a.resource.unwrap();
        assert_eq!(
            (a.verb.as_str(), r.group.as_str(), r.subresource.as_str()),
            ("update", "apps", "scale")
        );
        let a = attrs(Method::GET, "/apis/apps/v1");
        assert_eq!(
            (a.verb.as_str(), a.path.as_deref()),
            ("get", Some("/apis/apps/v1"))
        );
        let a = attrs(Method::POST, "/api/v1/namespaces/n/serviceaccounts/s/token");
        assert_eq!(
            (a.verb.as_str(), a.resource.unwrap().subresource.as_str()),
            ("create", "token")
        );
        let a = attrs(Method::GET, "/api/v1/namespaces/team");
        let r = a.resource.unwrap();
        assert_eq!(
            (r.resource.as_str(), r.namespace.as_str(), r.name.as_str()),
            ("namespaces", "team", "team")
        );
        assert_eq!(name_from_selector("metadata.name==a"), Some("a".into()));
        assert_eq!(name_from_selector("metadata.name=a,x=y"), None);
    }
}
