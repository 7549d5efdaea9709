//! The connect subresources, one entry point each: `pods/log`,
//! `pods/exec|attach|portforward` and the `pods|services|nodes` `proxy`.
//! Each resolves its destination (`location.rs`), reads its options
//! (`options.rs`) and hands the request to the matching way of carrying it:
//! a streamed GET, a piped upgrade (`forward.rs`), the WebSocket→SPDY
//! translator (`translate.rs`) or the port-forward tunnel (`tunnel.rs`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use kapi_machinery::status::{ApiError, Cause, Details, Reason};
use kapi_registry::apis::Apis;
use serde_json::Value;

use crate::config::KubeletConfig;
use crate::forward::{self, is_upgrade};
use crate::location::{self, Location};
use crate::options::{self, LogOptions, Params, StreamKind};
use crate::translate::{self, Streams};
use crate::transport::Transport;
use crate::{tunnel, ws};

/// How much of a kubelet's error body is read into the Status (upstream's
/// `maxReadLength`).
const MAX_ERROR_BODY: usize = 50_000;

/// The connection side of the server: built once from the kubelet flags.
pub struct Connector {
    transport: Arc<Transport>,
}

/// What a `proxy` request names: `prefix` is the URL path up to and
/// including `/proxy`, `rest` what follows it.
#[derive(Debug, Clone, Copy)]
pub struct ProxyTarget<'a> {
    pub kind: ProxyKind,
    pub namespace: &'a str,
    pub id: &'a str,
    pub prefix: &'a str,
    pub rest: &'a str,
}

/// Which `proxy` subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Pod,
    Service,
    Node,
}

impl Connector {
    pub fn new(config: KubeletConfig) -> Result<Connector, String> {
        Ok(Connector {
            transport: Arc::new(Transport::new(config)?),
        })
    }

    fn preferred(&self) -> &[String] {
        &self.transport.config.preferred_address_types
    }

    /// `GET pods/<name>/log`.
    pub async fn log(
        &self,
        apis: &Apis,
        ns: &str,
        name: &str,
        query: Option<&str>,
    ) -> Result<Response<Body>, ApiError> {
        let pod = location::get(apis, "pods", Some(ns), name).await?;
        let opts = LogOptions::parse(&Params::parse(query), name)?;
        let container = options::container(&pod, opts.container.as_deref())?;
        let Some(node) = node_name(&pod) else {
            return Ok(text_response(Body::empty()));
        };
        let mut loc = location::kubelet(apis, self.preferred(), node).await?;
        loc.kubelet = !opts.insecure_skip_tls_verify_backend;
        let path = opts.kubelet_path(ns, name, &container);
        let url = format!(
            "https://{}{path}",
            crate::transport::authority(&loc.host, loc.port_or_default())
        );
        let mut h = axum::http::HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&crate::transport::authority(
            &loc.host,
            loc.port_or_default(),
        )) {
            h.insert(header::HOST, v);
        }
        let req = forward::request(Method::GET, &path, h, Body::empty())?;
        let timeout = Some(self.transport.config.timeout);
        let resp = forward::send(&self.transport, &loc, req, timeout)
            .await
            .map_err(|e| ApiError::new(500, Reason::Unknown, format!("Get {url:?}: {e}")))?;
        if !resp.status().is_success() {
            return Err(generic_response_error(resp, "pods/log", name).await);
        }
        Ok(text_response(Body::new(resp.into_body())))
    }

    /// `pods/<name>/exec`, `attach` and `portforward`.
    pub async fn stream(
        &self,
        apis: &Apis,
        kind: StreamKind,
        ns: &str,
        name: &str,
        req: Request<Body>,
    ) -> Result<Response<Body>, ApiError> {
        let pod = location::get(apis, "pods", Some(ns), name).await?;
        let p = Params::parse(req.uri().query());
        let container = match kind {
            StreamKind::PortForward => String::new(),
            _ => options::container(&pod, p.get("container"))?,
        };
        let Some(node) = node_name(&pod) else {
            return Err(ApiError::bad_request(format!(
                "pod {name} does not have a host assigned"
            )));
        };
        let loc = location::kubelet(apis, self.preferred(), node).await?;
        let path = options::stream_path(kind, &p, ns, name, &container)?;
        let t = self.transport.clone();
        let h = req.headers();
        if kind != StreamKind::PortForward && ws::wants(h, ws::V5_CHANNEL) {
            let streams = Streams {
                stdin: p.flag("stdin")?,
                stdout: p.flag("stdout")?,
                stderr: p.flag("stderr")?,
                tty: p.flag("tty")?,
            };
            return translate::translate(t, loc, path, streams, req);
        }
        if kind == StreamKind::PortForward && ws::wants(h, ws::SPDY_TUNNEL) {
            return tunnel::tunnel(t, loc, path, req).await;
        }
        if !is_upgrade(h) {
            return Err(ApiError::bad_request("Upgrade request required"));
        }
        let timeout = Some(t.config.timeout);
        forward::upgrade(&t, &loc, &path, req, timeout).await
    }

    /// `pods|services|nodes/<id>/proxy[/<rest>]`.
    pub async fn proxy(
        &self,
        apis: &Apis,
        target: &ProxyTarget<'_>,
        req: Request<Body>,
    ) -> Result<Response<Body>, ApiError> {
        let ProxyTarget {
            kind,
            namespace: ns,
            id,
            prefix,
            rest,
        } = *target;
        if rest.is_empty() {
            let q = req
                .uri()
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
            if let Ok(v) = HeaderValue::from_str(&format!("{prefix}/{q}")) {
                resp.headers_mut().insert(header::LOCATION, v);
            }
            return Ok(resp);
        }
        let loc: Location = match kind {
            ProxyKind::Pod => location::pod_proxy(apis, ns, id).await?,
            ProxyKind::Service => location::service_proxy(apis, ns, id).await?,
            ProxyKind::Node => location::node_proxy(apis, self.preferred(), id).await?,
        };
        let path_and_query = match req.uri().query() {
            Some(q) => format!("{rest}?{q}"),
            None => rest.to_owned(),
        };
        if is_upgrade(req.headers()) {
            return forward::upgrade(&self.transport, &loc, &path_and_query, req, None).await;
        }
        let (parts, body) = req.into_parts();
        let mut h = forward::outgoing_headers(&parts.headers, &loc, false);
        let forwarded = [
            ("x-forwarded-uri", format!("{prefix}{rest}")),
            (
                "x-forwarded-host",
                parts
                    .headers
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned(),
            ),
            ("x-forwarded-proto", "https".to_owned()),
        ];
        for (k, v) in forwarded {
            if let Ok(v) = HeaderValue::from_str(&v) {
                h.insert(k, v);
            }
        }
        let out = forward::request(parts.method, &path_and_query, h, body)?;
        let resp = forward::send(&self.transport, &loc, out, None)
            .await
            .map_err(|e| {
                ApiError::service_unavailable(format!("error trying to reach service: {e}"))
            })?;
        if resp.status().is_redirection() && resp.headers().contains_key(header::LOCATION) {
            let msg = "the backend attempted to redirect this request, which is not permitted";
            return Ok(forward::plain(StatusCode::BAD_GATEWAY, msg));
        }
        Ok(forward::relay(resp))
    }
}

fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

fn text_response(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// Upstream's `NewGenericServerResponse` for a kubelet's non-2xx answer.
async fn generic_response_error(
    resp: hyper::Response<hyper::body::Incoming>,
    resource: &str,
    name: &str,
) -> ApiError {
    let code = resp.status().as_u16();
    let body = Limited::new(resp.into_body(), MAX_ERROR_BODY)
        .collect()
        .await;
    let server_message = body
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    let (reason, message) = match code {
        400 => (Reason::BadRequest, "the server rejected our request for an unknown reason".to_owned()),
        401 => (Reason::Unauthorized, "the server has asked for the client to provide credentials".to_owned()),
        403 => (Reason::Forbidden, "the server does not allow access to the requested resource".to_owned()),
        404 => (Reason::NotFound, "the server could not find the requested resource".to_owned()),
        503 => (Reason::ServiceUnavailable, "the server is currently unable to handle the request".to_owned()),
        c if c >= 500 => (
            Reason::InternalError,
            format!("an error on the server ({server_message:?}) has prevented the request from succeeding"),
        ),
        c => (Reason::Unknown, format!("the server responded with the status code {c} but did not return more information")),
    };
    let mut err = ApiError::new(code, reason, format!("{message} ( {resource} {name})"));
    err.details = Some(Details {
        name: name.to_owned(),
        kind: resource.to_owned(),
        causes: vec![Cause {
            message: server_message,
            ..Default::default()
        }],
        ..Default::default()
    });
    err
}
