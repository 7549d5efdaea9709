//! The connect subresources (`pods/log`, `exec`, `attach`, `portforward`,
//! and `proxy` of pods, services and nodes): admission's CONNECT with the
//! request's options object, as upstream's connect handler runs it (not for
//! `log`, a plain read), then the request goes to `kapi-kubelet`, which
//! reaches the kubelet or the proxied address.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::response::Response;
use kapi_admission::Target;
use kapi_http::request::RequestInfo;
use kapi_kubelet::options::Params;
use kapi_kubelet::{ProxyKind, ProxyTarget, StreamKind};
use kapi_machinery::status::ApiError;
use kapi_registry::apis::Entry;
use kapi_registry::Subresource;
use serde_json::{json, Value};

use crate::Server;

/// Whether the subresource is one of the connect family.
pub fn is_connect(sub: &Subresource) -> bool {
    matches!(
        sub,
        Subresource::Log
            | Subresource::Exec
            | Subresource::Attach
            | Subresource::PortForward
            | Subresource::Proxy { .. }
    )
}

pub async fn serve(
    srv: Arc<Server>,
    entry: &Entry,
    info: &RequestInfo,
    sub: &Subresource,
    parts: Parts,
    body: Body,
) -> Result<Response, ApiError> {
    let ns = info.namespace.as_deref().unwrap_or("");
    let name = info.name.as_deref().unwrap_or("");
    let nodes = &srv.kubelet;
    if let Subresource::Log = sub {
        return nodes.log(&srv.apis, ns, name, parts.uri.query()).await;
    }
    let options = options_object(sub, &Params::parse(parts.uri.query()), &info.rest);
    admit(&srv, entry, info, &parts, options).await?;
    let req = Request::from_parts(parts, body);
    let kind = match sub {
        Subresource::Exec => Some(StreamKind::Exec),
        Subresource::Attach => Some(StreamKind::Attach),
        Subresource::PortForward => Some(StreamKind::PortForward),
        _ => None,
    };
    if let Some(kind) = kind {
        return nodes.stream(&srv.apis, kind, ns, name, req).await;
    }
    match sub {
        Subresource::Proxy { .. } => {
            let kind = match entry.def.resource.as_str() {
                "pods" => ProxyKind::Pod,
                "services" => ProxyKind::Service,
                _ => ProxyKind::Node,
            };
            let path = req.uri().path();
            let prefix = path
                .strip_suffix(info.rest.as_str())
                .unwrap_or(path)
                .to_owned();
            let target = ProxyTarget {
                kind,
                namespace: ns,
                id: name,
                prefix: &prefix,
                rest: &info.rest,
            };
            nodes.proxy(&srv.apis, &target, req).await
        }
        _ => Err(ApiError::method_not_supported(
            entry.def.group_resource(),
            info.verb,
        )),
    }
}

async fn admit(
    srv: &Server,
    entry: &Entry,
    info: &RequestInfo,
    parts: &Parts,
    options: Value,
) -> Result<(), ApiError> {
    let user = parts.extensions.get::<kapi_auth::authn::UserInfo>();
    let audit = parts.extensions.get::<kapi_auth::audit::AuditHandle>();
    let target = Target {
        def: &entry.def,
        subresource: info.subresource.as_deref(),
        namespace: info.namespace.as_deref(),
        name: info.name.as_deref().unwrap_or(""),
        user,
        audit,
    };
    kapi_admission::RequestAdmission::connect(srv.admission.clone(), &target, options).await
}

/// The options object admission sees (`PodExecOptions`, ...), as upstream
/// encodes it: false and empty fields left out.
fn options_object(sub: &Subresource, p: &Params, rest: &str) -> Value {
    let (_, _, kind) = sub.response_kind().unwrap_or(("", "v1", ""));
    let mut o = json!({"kind": kind, "apiVersion": "v1"});
    let flag = |k: &str| p.flag(k).unwrap_or(false);
    match sub {
        Subresource::Exec | Subresource::Attach => {
            for k in ["stdin", "stdout", "stderr", "tty"] {
                if flag(k) {
                    o[k] = json!(true);
                }
            }
            if let Some(c) = p.get("container").filter(|c| !c.is_empty()) {
                o["container"] = json!(c);
            }
            let command = p.all("command");
            if matches!(sub, Subresource::Exec) && !command.is_empty() {
                o["command"] = json!(command);
            }
        }
        Subresource::PortForward => {
            let ports: Vec<i64> = p
                .all("ports")
                .iter()
                .flat_map(|v| v.split(','))
                .filter_map(|v| v.trim().parse().ok())
                .collect();
            if !ports.is_empty() {
                o["ports"] = json!(ports);
            }
        }
        _ if !rest.is_empty() => o["path"] = json!(rest),
        _ => {}
    }
    o
}
