//! `--tracing-config-file` decoding and validation, with upstream's messages
//! (`component-base/tracing/api/v1/config_test.go`, `options/tracing_test.go`).

use super::*;

fn parse(text: &str) -> Result<TracingConfiguration, String> {
    TracingConfiguration::parse(text)
}

#[test]
fn yaml_and_json_at_both_versions() {
    let yaml = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: localhost:4318\nsamplingRatePerMillion: 100\n";
    let c = parse(yaml).unwrap();
    assert_eq!(c.endpoint.as_deref(), Some("localhost:4318"));
    assert_eq!(c.sampling_rate_per_million, Some(100));
    assert_eq!(c.ratio(), 0.0001);
    let json = r#"{"apiVersion":"apiserver.config.k8s.io/v1alpha1","kind":"TracingConfiguration","samplingRatePerMillion":1000000}"#;
    let c = parse(json).unwrap();
    assert_eq!(c.endpoint, None);
    assert_eq!(c.ratio(), 1.0);
}

#[test]
fn defaults_sample_nothing_at_localhost_4317() {
    let c =
        parse("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n").unwrap();
    assert_eq!(c, TracingConfiguration::default());
    assert_eq!(c.ratio(), 0.0);
    assert_eq!(
        grpc_target(DEFAULT_ENDPOINT).unwrap(),
        Target::Tcp("localhost:4317".into())
    );
}

#[test]
fn v1_is_not_a_version_of_1_33() {
    let e =
        parse("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n").unwrap_err();
    assert!(
        e.starts_with("unable to decode tracing configuration data: no kind \"TracingConfiguration\" is registered for version \"apiserver.config.k8s.io/v1\""),
        "{e}"
    );
}

#[test]
fn kind_and_unknown_fields_are_checked_strictly() {
    let e = parse("apiVersion: apiserver.config.k8s.io/v1beta1\nendpoint: x:1\n").unwrap_err();
    assert_eq!(
        e,
        "unable to decode tracing configuration data: Object 'Kind' is missing"
    );
    let e = parse(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRate: 5\n",
    )
    .unwrap_err();
    assert_eq!(
        e,
        "unable to decode tracing configuration data: strict decoding error: unknown field \"samplingRate\""
    );
}

#[test]
fn sampling_rate_range() {
    let head = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n";
    let e = parse(&format!("{head}samplingRatePerMillion: -1\n")).unwrap_err();
    assert_eq!(
        e,
        "failed to validate tracing configuration: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive"
    );
    let e = parse(&format!("{head}samplingRatePerMillion: 1000001\n")).unwrap_err();
    assert_eq!(
        e,
        "failed to validate tracing configuration: samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million"
    );
    assert!(parse(&format!("{head}samplingRatePerMillion: 0\n")).is_ok());
}

#[test]
fn endpoints_as_grpc_targets() {
    assert_eq!(
        grpc_target("collector:4317").unwrap(),
        Target::Tcp("collector:4317".into())
    );
    assert_eq!(
        grpc_target("dns:///collector:4317").unwrap(),
        Target::Tcp("collector:4317".into())
    );
    assert_eq!(
        grpc_target("dns://8.8.8.8/collector:4317").unwrap(),
        Target::Tcp("collector:4317".into())
    );
    assert_eq!(
        grpc_target("unix:///run/otel.sock").unwrap(),
        Target::Unix("/run/otel.sock".into())
    );
    let head = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n";
    let e = parse(&format!("{head}endpoint: http://collector:4317\n")).unwrap_err();
    assert_eq!(
        e,
        "failed to validate tracing configuration: endpoint: Invalid value: \"http://collector:4317\": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"
    );
}

#[test]
fn two_errors_are_listed_together() {
    let c = TracingConfiguration {
        endpoint: Some("https://x:1".into()),
        sampling_rate_per_million: Some(-5),
    };
    let errs = c.validate();
    assert_eq!(errs.len(), 2);
    assert!(aggregate(&errs).starts_with("[samplingRatePerMillion: Invalid value: -5"));
}

#[test]
fn the_file_is_named_and_the_gate_checked() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let e = read(&missing, true).unwrap_err();
    assert_eq!(
        e,
        format!("tracing-config-file {} does not exist", missing.display())
    );
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n").unwrap();
    let e = read(&bad, true).unwrap_err();
    assert!(
        e.starts_with("failed to read tracing config: failed to validate"),
        "{e}"
    );
    let e = read(&bad, false).unwrap_err();
    assert_eq!(
        e,
        "APIServerTracing feature is not enabled, but tracing config file was provided"
    );
}

#[test]
fn the_server_id_is_the_identity_lease_name() {
    let id = apiserver_id();
    assert_eq!(id, apiserver_id());
    let hash = id.strip_prefix("apiserver-").unwrap();
    assert_eq!(hash.len(), 26);
    assert!(hash
        .chars()
        .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c)));
}
