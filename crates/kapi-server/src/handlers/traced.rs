//! The handlers' spans under a traced request's span (upstream's
//! `tracing.Start(ctx, "Create", traceFields(req)...)` in
//! `apiserver/pkg/endpoints/handlers/{create,get,update,patch,delete}.go`):
//! one per verb handler, named as upstream's handler names it, with
//! upstream's `traceFields` attributes, ended when the response body ends.
//! Requests the tracing filter did not sample (or servers without
//! `--tracing-config-file`) carry no [`RequestTrace`] and skip all of it.

use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use kapi_http::request::RequestInfo;
use kapi_machinery::status::ApiError;
use kapi_registry::Verb;
use opentelemetry::trace::TraceContextExt;
use opentelemetry::{Context, KeyValue};

use crate::filters::trace::{end_with_body, protocol_version, truncated_audit_id, RequestTrace};

/// Upstream's limit on the `user-agent` attribute.
const MAX_USER_AGENT: usize = 1024;

/// The span's name: the upstream handler that serves `verb` (a watch is
/// served, and traced, by the list handler).
fn span_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "Get",
        Verb::List | Verb::Watch => "List",
        Verb::Create => "Create",
        Verb::Update => "Update",
        Verb::Patch => "Patch",
        Verb::Delete | Verb::DeleteCollection => "Delete",
    }
}

/// Open the handler span when the request is traced (before the handler
/// takes the request apart).
pub(super) fn start(parts: &Parts, info: &RequestInfo, verb: Verb) -> Option<Context> {
    let trace = parts.extensions.get::<RequestTrace>()?;
    Some(trace.start(span_name(verb), fields(parts, info)))
}

/// End the handler span with the response's body, or now on an error.
pub(super) fn finish(
    cx: Option<Context>,
    result: Result<Response, ApiError>,
) -> Result<Response, ApiError> {
    let Some(cx) = cx else {
        return result;
    };
    match result {
        Ok(resp) => Ok(end_with_body(resp, cx, false)),
        Err(e) => {
            cx.span().end();
            Err(e)
        }
    }
}

/// Upstream's `traceFields`.
fn fields(parts: &Parts, info: &RequestInfo) -> Vec<KeyValue> {
    let headers = &parts.headers;
    let audit_id = parts
        .extensions
        .get::<kapi_auth::audit::AuditId>()
        .map(|a| truncated_audit_id(&a.0))
        .unwrap_or_default();
    let apply = header_str(headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|c| c.starts_with("application/apply-patch"));
    let verb = kapi_http::metrics::metric_verb(parts.method.as_str(), Some(info), apply);
    let mut user_agent = header_str(headers, header::USER_AGENT.as_str())
        .unwrap_or("unknown")
        .to_owned();
    if user_agent.len() > MAX_USER_AGENT {
        let mut cut = MAX_USER_AGENT;
        while !user_agent.is_char_boundary(cut) {
            cut -= 1;
        }
        user_agent.truncate(cut);
        user_agent.push_str("...TRUNCATED");
    }
    vec![
        KeyValue::new(
            "accept",
            header_str(headers, header::ACCEPT.as_str())
                .unwrap_or("")
                .to_owned(),
        ),
        KeyValue::new("audit-id", audit_id),
        KeyValue::new("client", client_ip(parts)),
        KeyValue::new("api-group", info.group.clone()),
        KeyValue::new("api-version", info.version.clone()),
        KeyValue::new("name", info.name.clone().unwrap_or_default()),
        KeyValue::new("namespace", info.namespace.clone().unwrap_or_default()),
        KeyValue::new(
            "protocol",
            format!("HTTP/{}", protocol_version(parts.version)),
        ),
        KeyValue::new("resource", info.resource.clone()),
        KeyValue::new("scope", scope(info)),
        KeyValue::new("url", parts.uri.path().to_owned()),
        KeyValue::new("user-agent", user_agent),
        KeyValue::new("verb", verb),
    ]
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Upstream's `CleanScope`.
fn scope(info: &RequestInfo) -> &'static str {
    if info.name.is_some() || info.verb == "create" {
        "resource"
    } else if info.namespace.is_some() {
        "namespace"
    } else {
        "cluster"
    }
}

/// Upstream's `GetClientIP`: the first address of `X-Forwarded-For`, else
/// `X-Real-Ip`, else the peer's.
fn client_ip(parts: &Parts) -> String {
    let valid = |s: &str| s.trim().parse::<std::net::IpAddr>().ok();
    if let Some(ip) = header_str(&parts.headers, "x-forwarded-for")
        .and_then(|v| v.split(',').next())
        .and_then(valid)
    {
        return ip.to_string();
    }
    if let Some(ip) = header_str(&parts.headers, "x-real-ip").and_then(valid) {
        return ip.to_string();
    }
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string())
}
