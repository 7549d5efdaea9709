//! APIServerTracing end to end (`--tracing-config-file`): kapi's trace
//! pipeline (`kapi::otel`) pointed at an OTLP/gRPC collector written for the
//! test (the generated `TraceService` server of `opentelemetry-proto`) on a
//! loopback port. The spans must carry upstream's names and attributes and
//! `service.name=apiserver`; a privileged caller's sampled `traceparent`
//! must put the spans in its trace, an unprivileged caller's only links to
//! it; at rate 0 without a trace context nothing is exported.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use kapi::otel::{Pipeline, TracingConfiguration};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::harness::{self, TestServer};

/// One span as the collector received it, with its resource and scope.
#[derive(Debug, Clone)]
struct Got {
    resource: HashMap<String, String>,
    scope: String,
    span: Span,
}

impl Got {
    fn attr(&self, key: &str) -> Option<String> {
        attrs(&self.span.attributes).remove(key)
    }
}

fn attrs(kvs: &[KeyValue]) -> HashMap<String, String> {
    kvs.iter()
        .filter_map(|kv| {
            let v = match kv.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => s.clone(),
                AnyValue::IntValue(i) => i.to_string(),
                AnyValue::BoolValue(b) => b.to_string(),
                other => format!("{other:?}"),
            };
            Some((kv.key.clone(), v))
        })
        .collect()
}

#[derive(Clone, Default)]
struct Collector {
    got: Arc<Mutex<Vec<Got>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = self.got.lock().unwrap();
        for rs in request.into_inner().resource_spans {
            let resource = rs
                .resource
                .map(|r| attrs(&r.attributes))
                .unwrap_or_default();
            for ss in rs.scope_spans {
                let scope = ss.scope.map(|s| s.name).unwrap_or_default();
                for span in ss.spans {
                    got.push(Got {
                        resource: resource.clone(),
                        scope: scope.clone(),
                        span,
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// Start the collector on a loopback port.
async fn collector() -> (Collector, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let c = Collector::default();
    let service = TraceServiceServer::new(c.clone());
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    (c, addr)
}

/// A server tracing to `addr` at `rate` per million (the pipeline is built
/// from the file's text, as `kapi serve` reads it).
async fn traced_server(addr: SocketAddr, rate: u32) -> (TestServer, Arc<Pipeline>) {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: {addr}\nsamplingRatePerMillion: {rate}\n"
    );
    let config = TracingConfiguration::parse(&yaml).expect("config");
    let pipeline = Arc::new(Pipeline::start(&config, "apiserver-test").expect("pipeline"));
    let tracing = pipeline.tracing();
    let srv = harness::start_configured(|o| o.chain.tracing = Some(tracing)).await;
    (srv, pipeline)
}

/// Export what has ended (the batch processor would wait 5 s).
async fn flush(p: &Arc<Pipeline>) {
    let p = p.clone();
    tokio::task::spawn_blocking(move || p.flush())
        .await
        .unwrap()
        .expect("flush");
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn named<'a>(got: &'a [Got], name: &str) -> Vec<&'a Got> {
    got.iter().filter(|g| g.span.name == name).collect()
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn tracing_exports_request_and_handler_spans() {
    let (collected, addr) = collector().await;
    let (srv, pipeline) = traced_server(addr, 1_000_000).await;
    let ns = srv.namespace("traced").await;
    let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}"#;
    let req = http::Request::post(format!("/api/v1/namespaces/{ns}/configmaps"))
        .header("content-type", "application/json")
        .header("user-agent", "tracing-test/1.0")
        .body(cm.to_vec())
        .unwrap();
    assert_eq!(srv.raw(req).await.0, 201);
    let (code, _) = srv
        .get_json(&format!("/api/v1/namespaces/{ns}/configmaps/c"))
        .await;
    assert_eq!(code, 200);
    let (code, _) = srv.get_json("/version").await;
    assert_eq!(code, 200);
    flush(&pipeline).await;

    let got = collected.got.lock().unwrap().clone();
    let create = named(&got, "POST /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(create.len(), 1, "spans: {:?}", names(&got));
    let create = create[0];
    assert_eq!(
        create.resource.get("service.name").map(String::as_str),
        Some("apiserver")
    );
    assert_eq!(
        create
            .resource
            .get("service.instance.id")
            .map(String::as_str),
        Some("apiserver-test")
    );
    assert_eq!(
        create.scope,
        "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
    );
    assert_eq!(create.span.kind, 2, "a server span");
    assert_eq!(create.attr("http.method").as_deref(), Some("POST"));
    assert_eq!(create.attr("http.status_code").as_deref(), Some("201"));
    assert_eq!(
        create.attr("http.target"),
        Some(format!("/api/v1/namespaces/{ns}/configmaps"))
    );
    assert_eq!(
        create.attr("user_agent.original").as_deref(),
        Some("tracing-test/1.0")
    );
    assert_eq!(create.attr("http.scheme").as_deref(), Some("https"));
    assert!(create.attr("net.protocol.version").is_some());
    assert!(create.attr("net.sock.peer.addr").is_some());
    assert!(!create.attr("audit-id").unwrap_or_default().is_empty());
    assert!(create.attr("http.wrote_bytes").is_some());

    // The handler's span, a child of the request's.
    let handler = named(&got, "Create")
        .into_iter()
        .find(|g| g.span.trace_id == create.span.trace_id)
        .expect("a Create span in the request's trace");
    assert_eq!(handler.span.parent_span_id, create.span.span_id);
    assert_eq!(handler.scope, "k8s.io/component-base/tracing");
    assert_eq!(handler.attr("verb").as_deref(), Some("POST"));
    assert_eq!(handler.attr("resource").as_deref(), Some("configmaps"));
    assert_eq!(handler.attr("namespace").as_deref(), Some(ns.as_str()));
    assert_eq!(handler.attr("scope").as_deref(), Some("resource"));
    assert_eq!(
        handler
            .attr("protocol")
            .as_deref()
            .map(|p| p.starts_with("HTTP/")),
        Some(true)
    );
    assert_eq!(handler.attr("audit-id"), create.attr("audit-id"));

    let get = named(
        &got,
        "GET /api/v1/namespaces/{:namespace}/configmaps/{:name}",
    );
    assert_eq!(get.len(), 1, "spans: {:?}", names(&got));
    let get_handler = named(&got, "Get");
    assert!(get_handler
        .iter()
        .any(|g| g.span.parent_span_id == get[0].span.span_id
            && g.attr("name").as_deref() == Some("c")));
    assert_eq!(
        named(&got, "GET")
            .iter()
            .filter(|g| g.attr("http.target").as_deref() == Some("/version"))
            .count(),
        1
    );
}

fn names(got: &[Got]) -> Vec<&str> {
    got.iter().map(|g| g.span.name.as_str()).collect()
}

#[tokio::test]
async fn tracing_honours_a_privileged_traceparent_and_links_an_untrusted_one() {
    let (collected, addr) = collector().await;
    // Rate 0: only a sampled parent makes a span.
    let (srv, pipeline) = traced_server(addr, 0).await;
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    // The admin (system:masters): the request joins the caller's trace.
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("traceparent", &traceparent)
        .body(Vec::new())
        .unwrap();
    assert_eq!(srv.raw(req).await.0, 200);
    // No trace context: nothing at rate 0.
    let (code, _) = srv.get_json("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(code, 200);
    // An ordinary user's trace context is not trusted: at rate 0 a new
    // root is not sampled, so nothing from it either.
    let bob = srv.client_with_token("bob-token").await;
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("traceparent", &traceparent)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let _ = bob.send(req).await.expect("transport");
    flush(&pipeline).await;

    let got = collected.got.lock().unwrap().clone();
    let list = named(&got, "GET /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(list.len(), 1, "one traced request: {:?}", names(&got));
    assert_eq!(hex(&list[0].span.trace_id), TRACE);
    assert_eq!(hex(&list[0].span.parent_span_id), PARENT);
    let handler = named(&got, "List");
    assert_eq!(handler.len(), 1);
    assert_eq!(hex(&handler[0].span.trace_id), TRACE);
    assert_eq!(handler[0].attr("verb").as_deref(), Some("LIST"));
    drop(srv);

    // At a rate of one, the untrusted caller's request starts its own
    // trace, linked to the one it carried.
    let (collected, addr) = collector().await;
    let (srv, pipeline) = traced_server(addr, 1_000_000).await;
    let bob = srv.client_with_token("bob-token").await;
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("traceparent", &traceparent)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let _ = bob.send(req).await.expect("transport");
    flush(&pipeline).await;
    let got = collected.got.lock().unwrap().clone();
    let list = named(&got, "GET /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(list.len(), 1, "{:?}", names(&got));
    assert_ne!(hex(&list[0].span.trace_id), TRACE);
    assert!(list[0].span.parent_span_id.is_empty());
    assert_eq!(list[0].span.links.len(), 1);
    assert_eq!(hex(&list[0].span.links[0].trace_id), TRACE);
    assert_eq!(list[0].attr("http.status_code").as_deref(), Some("403"));
}

#[tokio::test]
async fn tracing_at_rate_zero_without_context_exports_nothing() {
    let (collected, addr) = collector().await;
    let (srv, pipeline) = traced_server(addr, 0).await;
    let ns = srv.namespace("quiet").await;
    let (code, _) = srv
        .get_json(&format!("/api/v1/namespaces/{ns}/configmaps"))
        .await;
    assert_eq!(code, 200);
    flush(&pipeline).await;
    assert!(collected.got.lock().unwrap().is_empty());
}

#[tokio::test]
async fn tracing_a_watch_span_ends_with_the_watch() {
    let (collected, addr) = collector().await;
    let (srv, pipeline) = traced_server(addr, 1_000_000).await;
    let req =
        http::Request::get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1")
            .body(Vec::new())
            .unwrap();
    let started = std::time::Instant::now();
    let (code, _) = srv.raw_text(req).await;
    assert_eq!(code, 200);
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));
    flush(&pipeline).await;
    let got = collected.got.lock().unwrap().clone();
    let watch = named(&got, "GET /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(watch.len(), 1, "{:?}", names(&got));
    let span = &watch[0].span;
    let lasted = span.end_time_unix_nano - span.start_time_unix_nano;
    assert!(lasted >= 900_000_000, "the span lasted {lasted} ns");
    let handler = named(&got, "List");
    assert_eq!(handler[0].attr("verb").as_deref(), Some("WATCH"));
}
