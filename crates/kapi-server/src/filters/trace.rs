//! APIServerTracing's request span: kube-apiserver 1.33's `WithTracing`
//! (`apiserver/pkg/endpoints/filters/traces.go`, an `otelhttp` handler),
//! present only with `--tracing-config-file` — without it the layer is not in
//! the chain at all, so an untraced server pays nothing per request.
//!
//! Where it sits: right after authentication (upstream moved it there in
//! 1.33, kubernetes PR 127053), so a request that fails authentication has no
//! span, and the incoming W3C `traceparent` is honoured only for users in
//! `system:masters` or `system:monitoring`; anyone else's request starts a
//! new trace that links to the one it carried (`otelhttp`'s public endpoint).
//! The span starts when the request was received (upstream sets the metrics'
//! receive time as its start), is named `GET` for a non-resource path and
//! `GET /api/v1/namespaces/{:namespace}/pods/{:name}` for a resource, and ends
//! when the response body ends, so a watch's span lasts the watch.
//!
//! The handlers open their child spans (`Create`, `Get`, `List`, …) through the
//! [`RequestTrace`] this filter leaves in the request's extensions
//! (`handlers/traced.rs`). The SDK, the sampler and the exporter live in the
//! binary (`kapi/src/otel.rs`): this crate sees only the OpenTelemetry API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use kapi_auth::audit::AuditId;
use kapi_http::limits::{Deadline, Kind};
use kapi_http::next::Next;
use kapi_http::request::RequestInfo;
use kapi_http::user::UserInfo;
use opentelemetry::global::BoxedTracer;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

/// The groups whose trace context is trusted (upstream's
/// `notSystemPrivilegedGroup`).
const TRUSTED_GROUPS: [&str; 2] = ["system:masters", "system:monitoring"];

/// The tracers and the propagator of a traced server: what
/// `--tracing-config-file` builds (`kapi/src/otel.rs`).
#[derive(Clone)]
pub struct Tracing {
    /// The request spans' tracer (scope: `otelhttp`'s, as upstream).
    http: Arc<BoxedTracer>,
    /// The handlers' tracer (scope: component-base tracing's).
    handlers: Arc<BoxedTracer>,
    /// W3C trace context (and baggage), as upstream's `tracing.Propagators()`.
    propagator: Arc<dyn TextMapPropagator + Send + Sync>,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tracing")
    }
}

impl Tracing {
    pub fn new(
        http: BoxedTracer,
        handlers: BoxedTracer,
        propagator: Arc<dyn TextMapPropagator + Send + Sync>,
    ) -> Tracing {
        Tracing {
            http: Arc::new(http),
            handlers: Arc::new(handlers),
            propagator,
        }
    }
}

/// A sampled request's trace, in its extensions for the handlers: the
/// request span's context and the tracer of the spans below it.
#[derive(Clone)]
pub struct RequestTrace {
    tracer: Arc<BoxedTracer>,
    cx: Context,
}

impl RequestTrace {
    /// A child span of the request span (component-base's `tracing.Start`).
    pub fn start(&self, name: &'static str, attributes: Vec<KeyValue>) -> Context {
        let span = self.tracer.build_with_context(
            SpanBuilder::from_name(name).with_attributes(attributes),
            &self.cx,
        );
        self.cx.with_span(span)
    }
}

struct HeaderReader<'a>(&'a HeaderMap);

impl Extractor for HeaderReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The filter (after authentication): open the request span, hand its
/// context to the handlers, and end it when the response body ends.
pub async fn layer<N: Next>(State(t): State<Tracing>, mut req: Request, next: N) -> Response {
    let remote = t.propagator.extract(&HeaderReader(req.headers()));
    let remote_span = remote.span().span_context().clone();
    let trusted = req.extensions().get::<UserInfo>().is_some_and(|u| {
        u.groups
            .iter()
            .any(|g| TRUSTED_GROUPS.contains(&g.as_str()))
    });
    let (parent, links) = if remote_span.is_valid() && !trusted {
        (Context::new(), vec![Link::with_context(remote_span)])
    } else {
        (remote, Vec::new())
    };
    let kind = Kind::of(&req);
    let start = match req.extensions().get::<Deadline>() {
        Some(d) => SystemTime::now() - d.received.elapsed(),
        None => SystemTime::now(),
    };
    let builder = SpanBuilder::from_name(span_name(req.method().as_str(), kind.info.as_ref()))
        .with_kind(SpanKind::Server)
        .with_start_time(start)
        .with_attributes(request_attributes(&req))
        .with_links(links);
    let span = t.http.build_with_context(builder, &parent);
    if !opentelemetry::trace::Span::is_recording(&span) {
        return next.run(req).await;
    }
    let cx = parent.with_span(span);
    req.extensions_mut().insert(RequestTrace {
        tracer: t.handlers.clone(),
        cx: cx.clone(),
    });
    let resp = next.run(req).await;
    let code = resp.status();
    cx.span()
        .set_attribute(KeyValue::new("http.status_code", i64::from(code.as_u16())));
    if code.is_server_error() {
        cx.span().set_status(Status::error(""));
    }
    end_with_body(resp, cx, true)
}

/// End the span of `cx` when `resp`'s body ends (or is dropped unsent);
/// `count` records the bytes written as `http.wrote_bytes`, as `otelhttp`.
pub fn end_with_body(resp: Response, cx: Context, count: bool) -> Response {
    let wrote = Arc::new(AtomicU64::new(0));
    let counted = wrote.clone();
    let on_frame = count.then_some(move |len: usize| {
        counted.fetch_add(len as u64, Ordering::Relaxed);
    });
    kapi_http::limits::on_body_end(resp, on_frame, move || {
        let wrote = wrote.load(Ordering::Relaxed);
        if count && wrote > 0 {
            let wrote = i64::try_from(wrote).unwrap_or(i64::MAX);
            cx.span()
                .set_attribute(KeyValue::new("http.wrote_bytes", wrote));
        }
        cx.span().end();
    })
}

/// The request span's name, as upstream's span name formatter.
fn span_name(method: &str, info: Option<&RequestInfo>) -> String {
    let Some(info) = info else {
        return method.to_owned();
    };
    let mut name = format!("{method} /");
    if info.group.is_empty() {
        name.push_str("api");
    } else {
        name.push_str("apis/");
        name.push_str(&info.group);
    }
    name.push('/');
    name.push_str(&info.version);
    // Upstream's request info names a namespace's own URL's namespace too.
    if info.namespace.is_some() || (info.resource == "namespaces" && info.name.is_some()) {
        name.push_str("/namespaces/{:namespace}");
    }
    name.push('/');
    name.push_str(&info.resource);
    if info.name.is_some() {
        name.push_str("/{:name}");
    }
    if let Some(sub) = &info.subresource {
        name.push('/');
        name.push_str(sub);
    }
    name
}

/// `otelhttp`'s server request attributes (semantic conventions 1.20, its
/// default in upstream 1.33), with upstream's `http.target` and `audit-id`.
fn request_attributes(req: &Request) -> Vec<KeyValue> {
    let mut attrs = vec![
        KeyValue::new("http.method", req.method().as_str().to_owned()),
        KeyValue::new("http.scheme", "https"),
    ];
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    if let Some(host) = host {
        let (name, port) = split_host_port(host);
        attrs.push(KeyValue::new("net.host.name", name.to_owned()));
        if let Some(port) = port.filter(|p| *p != 443) {
            attrs.push(KeyValue::new("net.host.port", i64::from(port)));
        }
    }
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>() {
        attrs.push(KeyValue::new("net.sock.peer.addr", peer.ip().to_string()));
        attrs.push(KeyValue::new("net.sock.peer.port", i64::from(peer.port())));
    }
    if let Some(ua) = header_str(req.headers(), header::USER_AGENT.as_str()) {
        attrs.push(KeyValue::new("user_agent.original", ua.to_owned()));
    }
    if let Some(xff) = header_str(req.headers(), "x-forwarded-for") {
        let first = xff.split(',').next().unwrap_or("").trim();
        if !first.is_empty() {
            attrs.push(KeyValue::new("http.client_ip", first.to_owned()));
        }
    }
    attrs.push(KeyValue::new(
        "net.protocol.version",
        protocol_version(req.version()),
    ));
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned());
    attrs.push(KeyValue::new("http.target", target));
    let audit_id = req
        .extensions()
        .get::<AuditId>()
        .map(|a| truncated_audit_id(&a.0))
        .unwrap_or_default();
    attrs.push(KeyValue::new("audit-id", audit_id));
    attrs
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

/// Go's `Request.Proto` version part: `1.1`, `2.0`.
pub(crate) fn protocol_version(v: axum::http::Version) -> &'static str {
    match v {
        axum::http::Version::HTTP_09 => "0.9",
        axum::http::Version::HTTP_10 => "1.0",
        axum::http::Version::HTTP_2 => "2.0",
        axum::http::Version::HTTP_3 => "3.0",
        _ => "1.1",
    }
}

/// Upstream's `GetAuditIDTruncated`: IDs longer than 64 characters keep
/// their first 64.
pub(crate) fn truncated_audit_id(id: &str) -> String {
    id.chars().take(64).collect()
}

fn split_host_port(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        if let Some((addr, tail)) = rest.split_once(']') {
            let port = tail.strip_prefix(':').and_then(|p| p.parse().ok());
            return (addr, port);
        }
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, port.parse().ok()),
        _ => (host, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(path: &str) -> Option<RequestInfo> {
        let q = kapi_http::request::Query::parse(None);
        kapi_http::request::parse(&axum::http::Method::GET, path, &q)
    }

    #[test]
    fn span_names_follow_upstream() {
        assert_eq!(span_name("GET", None), "GET");
        assert_eq!(
            span_name("GET", info("/api/v1/namespaces/ns/pods/p").as_ref()),
            "GET /api/v1/namespaces/{:namespace}/pods/{:name}"
        );
        assert_eq!(
            span_name(
                "POST",
                info("/apis/apps/v1/namespaces/ns/deployments").as_ref()
            ),
            "POST /apis/apps/v1/namespaces/{:namespace}/deployments"
        );
        assert_eq!(
            span_name("PUT", info("/api/v1/namespaces/ns/pods/p/status").as_ref()),
            "PUT /api/v1/namespaces/{:namespace}/pods/{:name}/status"
        );
        assert_eq!(
            span_name("GET", info("/api/v1/namespaces/ns").as_ref()),
            "GET /api/v1/namespaces/{:namespace}/namespaces/{:name}"
        );
        assert_eq!(
            span_name(
                "GET",
                info("/apis/rbac.authorization.k8s.io/v1/clusterroles").as_ref()
            ),
            "GET /apis/rbac.authorization.k8s.io/v1/clusterroles"
        );
    }

    #[test]
    fn host_and_port() {
        assert_eq!(split_host_port("127.0.0.1:6443"), ("127.0.0.1", Some(6443)));
        assert_eq!(split_host_port("[::1]:443"), ("::1", Some(443)));
        assert_eq!(split_host_port("example.com"), ("example.com", None));
    }
}
