//! APIServerTracing: `--tracing-config-file`, read and validated as
//! kube-apiserver 1.33 does (`apiserver/pkg/server/options/tracing.go`,
//! `component-base/tracing/api/v1/config.go`), and the OpenTelemetry
//! pipeline it asks for (`component-base/tracing/utils.go` `NewProvider`): an
//! OTLP/gRPC exporter over plaintext to `endpoint` (default `localhost:4317`),
//! a batch span processor, the sampler `ParentBased(TraceIDRatioBased(rate /
//! 1e6))` (`ParentBased(NeverSample)` at rate 0: only requests that carry a
//! sampled, trusted trace context are traced), and the resource
//! `service.name=apiserver`, `service.instance.id=<the server's ID>`.
//!
//! The spans themselves are opened by the filter chain
//! (`kapi-server/src/filters/trace.rs`) and the handlers
//! (`kapi-server/src/handlers/traced.rs`), which see only the OpenTelemetry API;
//! this module is the one place that knows the SDK and the exporter.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kapi_server::filters::trace::Tracing;
use opentelemetry::global::BoxedTracer;
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use opentelemetry_sdk::Resource;
use serde::Deserialize;

/// The kind and the versions kube-apiserver 1.33 decodes it at (`v1` came
/// with the feature's GA in 1.34).
const KIND: &str = "TracingConfiguration";
const VERSIONS: &[&str] = &["v1alpha1", "v1beta1"];

/// The OTLP gRPC default, upstream's default endpoint.
const DEFAULT_ENDPOINT: &str = "localhost:4317";

/// `TracingConfiguration` (component-base `tracing/api/v1`): both fields optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TracingConfiguration {
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub sampling_rate_per_million: Option<i32>,
}

impl TracingConfiguration {
    /// Decode a file's contents (YAML or JSON, strictly, as upstream's
    /// decoder) and validate it; the error is upstream's.
    pub fn parse(data: &str) -> Result<TracingConfiguration, String> {
        let config: TracingConfiguration = kapi_auth::config_file::decode(data, KIND, VERSIONS)
            .map_err(|e| format!("unable to decode tracing configuration data: {e}"))?;
        let errs = config.validate();
        if !errs.is_empty() {
            return Err(format!(
                "failed to validate tracing configuration: {}",
                aggregate(&errs)
            ));
        }
        Ok(config)
    }

    /// Upstream's `ValidateTracingConfiguration`: field errors.
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Vec::new();
        if let Some(rate) = self.sampling_rate_per_million {
            if rate < 0 {
                errs.push(format!(
                    "samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive"
                ));
            }
            if rate > 1_000_000 {
                errs.push(format!("samplingRatePerMillion: Invalid value: {rate}: sampling rate per million must be less than or equal to one million"));
            }
        }
        if let Some(endpoint) = &self.endpoint {
            if let Err(e) = grpc_target(endpoint) {
                errs.push(e);
            }
        }
        errs
    }

    /// The sampling ratio: 0 to 1.
    pub fn ratio(&self) -> f64 {
        f64::from(self.sampling_rate_per_million.unwrap_or(0).max(0)) / 1e6
    }
}

/// What a gRPC target names, after upstream's check: `host:port` (a `dns`
/// target, the default), `dns:[//authority/]host:port`, `unix:…`,
/// `unix-abstract:…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Tcp(String),
    Unix(String),
}

/// Upstream's `validateEndpoint`: a target without `//` is read as
/// `dns://<target>`; the scheme must be `dns`, `unix` or `unix-abstract`.
fn grpc_target(endpoint: &str) -> Result<Target, String> {
    let url = if endpoint.contains("//") {
        endpoint.to_owned()
    } else {
        format!("dns://{endpoint}")
    };
    let invalid = |detail: String| format!("endpoint: Invalid value: {url:?}: {detail}");
    if url.chars().any(|c| c.is_ascii_control()) {
        return Err(invalid(format!(
            "parse {url:?}: net/url: invalid control character in URL"
        )));
    }
    let (scheme, rest) = match url.split_once(':') {
        Some((s, rest))
            if !s.is_empty()
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (s.to_ascii_lowercase(), rest)
        }
        _ if url.starts_with(':') => {
            return Err(invalid(format!("parse {url:?}: missing protocol scheme")));
        }
        _ => (String::new(), url.as_str()),
    };
    match scheme.as_str() {
        "dns" => {
            // `dns://authority/host:port` or `dns:///host:port`: the target
            // is the path; `dns://host:port` (upstream's own prefixing) the
            // authority.
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let host = match rest.split_once('/') {
                Some((_, path)) if !path.is_empty() => path,
                Some((authority, _)) => authority,
                None => rest,
            };
            Ok(Target::Tcp(host.to_owned()))
        }
        "unix" | "unix-abstract" => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            Ok(Target::Unix(path.to_owned()))
        }
        other => Err(invalid(format!("unsupported scheme: {other}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"))),
    }
}

/// `field.ErrorList.ToAggregate()`'s text: one error as itself, more in brackets.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Read `--tracing-config-file` as upstream's `TracingOptions` does: the
/// file must exist (its flag validation), then the feature gate must be on,
/// then the file is read (the error names it), decoded and validated.
pub fn read(path: &Path, gate_enabled: bool) -> Result<TracingConfiguration, String> {
    if !path.exists() {
        return Err(format!(
            "tracing-config-file {} does not exist",
            path.display()
        ));
    }
    if !gate_enabled {
        return Err(
            "APIServerTracing feature is not enabled, but tracing config file was provided".into(),
        );
    }
    let data = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "failed to read tracing config: unable to read tracing configuration from {:?}: {e}",
            path.display().to_string()
        )
    })?;
    TracingConfiguration::parse(&data).map_err(|e| format!("failed to read tracing config: {e}"))
}

/// A running trace pipeline: the tracers the server uses, and the provider
/// to flush and shut down (the batch processor exports every 5 s, as Go's).
pub struct Pipeline {
    provider: SdkTracerProvider,
}

impl Pipeline {
    /// Build the exporter and the provider (inside a Tokio runtime: the
    /// gRPC channel's connection task runs on it; it connects lazily, so a
    /// collector that is not up yet only loses spans).
    pub fn start(config: &TracingConfiguration, instance_id: &str) -> Result<Pipeline, String> {
        let endpoint = config.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT);
        let channel = match grpc_target(endpoint)? {
            Target::Tcp(host) => tonic_channel(&host)?,
            Target::Unix(path) => {
                return Err(format!(
                    "tracing endpoint {endpoint:?}: unix socket endpoints ({path}) are not supported by kapi yet"
                ))
            }
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_channel(channel)
            .with_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("tracing exporter: {e}"))?;
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(BatchConfigBuilder::default().build())
            .build();
        let sampler = match config.ratio() {
            r if r > 0.0 => Sampler::TraceIdRatioBased(r),
            _ => Sampler::AlwaysOff,
        };
        let resource = Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", "apiserver"),
                KeyValue::new("service.instance.id", instance_id.to_owned()),
            ])
            .build();
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(sampler)))
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        Ok(Pipeline { provider })
    }

    /// The tracers and propagators the filter chain takes.
    pub fn tracing(&self) -> Tracing {
        let tracer = |name: &'static str| {
            let scope = InstrumentationScope::builder(name).build();
            BoxedTracer::new(Box::new(self.provider.tracer_with_scope(scope)))
        };
        let propagator = TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]);
        Tracing::new(
            tracer("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"),
            tracer("k8s.io/component-base/tracing"),
            Arc::new(propagator),
        )
    }

    /// Export every span ended so far (blocks: call off the runtime's
    /// threads, e.g. in `spawn_blocking`).
    pub fn flush(&self) -> Result<(), String> {
        self.provider.force_flush().map_err(|e| e.to_string())
    }

    /// Flush and stop the exporter (blocks, as [`Pipeline::flush`]).
    pub fn shutdown(&self) -> Result<(), String> {
        self.provider.shutdown().map_err(|e| e.to_string())
    }
}

/// A plaintext gRPC channel to `host:port`, connected lazily.
fn tonic_channel(host: &str) -> Result<tonic::transport::Channel, String> {
    let uri = format!("http://{host}");
    let endpoint = tonic::transport::Endpoint::from_shared(uri.clone())
        .map_err(|e| format!("tracing endpoint {host:?}: {e}"))?;
    Ok(endpoint.timeout(Duration::from_secs(10)).connect_lazy())
}

/// Upstream's `APIServerID` (the tracing resource's `service.instance.id`):
/// the identity Lease's name, from the host name.
pub fn apiserver_id() -> String {
    kapi_controllers::apiserver_id(&kapi_controllers::hostname())
}

#[cfg(test)]
#[path = "otel_tests.rs"]
mod tests;
