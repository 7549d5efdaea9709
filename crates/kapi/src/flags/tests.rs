//! The flag layer against kube-apiserver's behaviour: every 1.33 flag name
//! (listed here independently of the table) parses with a valid value, bad
//! values are refused naming the flag, pflag's syntax rules, removed flags
//! refused, Go durations, and the defaults of both invocations.

use super::table::{specs, Section};
use super::{parse, value, Outcome, ServeArgs};

/// kube-apiserver 1.33's flags: the visible ones and the deprecated ones it
/// still accepts. (1.33 removed --cloud-provider and --cloud-config and differs from 1.28 by the structured authn/authz
/// configs, emulation versions, coordinated leadership, text log streams,
/// storage initialization, HTTP/2 off switch, external signer and UID headers.)
const UPSTREAM: &str = "admission-control admission-control-config-file advertise-address \
aggregator-reject-forwarding-redirect allow-metric-labels allow-metric-labels-manifest allow-privileged \
anonymous-auth api-audiences apiserver-count audit-log-batch-buffer-size audit-log-batch-max-size \
audit-log-batch-max-wait audit-log-batch-throttle-burst audit-log-batch-throttle-enable \
audit-log-batch-throttle-qps audit-log-compress audit-log-format audit-log-maxage audit-log-maxbackup \
audit-log-maxsize audit-log-mode audit-log-path audit-log-truncate-enabled audit-log-truncate-max-batch-size \
audit-log-truncate-max-event-size audit-log-version audit-policy-file audit-webhook-batch-buffer-size \
audit-webhook-batch-max-size audit-webhook-batch-max-wait audit-webhook-batch-throttle-burst \
audit-webhook-batch-throttle-enable audit-webhook-batch-throttle-qps audit-webhook-config-file \
audit-webhook-initial-backoff audit-webhook-mode audit-webhook-truncate-enabled \
audit-webhook-truncate-max-batch-size audit-webhook-truncate-max-event-size audit-webhook-version \
authentication-config authentication-token-webhook-cache-ttl authentication-token-webhook-config-file \
authentication-token-webhook-version authorization-config authorization-mode authorization-policy-file \
authorization-webhook-cache-authorized-ttl authorization-webhook-cache-unauthorized-ttl \
authorization-webhook-config-file authorization-webhook-version bind-address cert-dir client-ca-file \
contention-profiling coordinated-leadership-lease-duration \
coordinated-leadership-renew-deadline coordinated-leadership-retry-period cors-allowed-origins \
debug-socket-path default-not-ready-toleration-seconds default-unreachable-toleration-seconds \
default-watch-cache-size delete-collection-workers disable-admission-plugins disable-http2-serving \
disabled-metrics egress-selector-config-file emulated-version emulation-forward-compatible \
enable-admission-plugins enable-aggregator-routing enable-bootstrap-token-auth enable-garbage-collector \
enable-logs-handler enable-priority-and-fairness encryption-provider-config \
encryption-provider-config-automatic-reload endpoint-reconciler-type etcd-cafile etcd-certfile \
etcd-compaction-interval etcd-count-metric-poll-period etcd-db-metric-poll-interval \
etcd-healthcheck-timeout etcd-keyfile etcd-prefix etcd-readycheck-timeout etcd-servers \
etcd-servers-overrides event-ttl external-hostname feature-gates goaway-chance help \
http2-max-streams-per-connection kubelet-certificate-authority kubelet-client-certificate \
kubelet-client-key kubelet-port kubelet-preferred-address-types kubelet-read-only-port kubelet-timeout \
kubernetes-service-node-port lease-reuse-duration-seconds livez-grace-period log-flush-frequency \
log-json-info-buffer-size log-json-split-stream log-text-info-buffer-size log-text-split-stream \
logging-format max-connection-bytes-per-sec max-mutating-requests-inflight max-requests-inflight \
min-request-timeout oidc-ca-file oidc-client-id oidc-groups-claim oidc-groups-prefix oidc-issuer-url \
oidc-required-claim oidc-signing-algs oidc-username-claim oidc-username-prefix peer-advertise-ip \
peer-advertise-port peer-ca-file permit-address-sharing permit-port-sharing profiling \
proxy-client-cert-file proxy-client-key-file request-timeout requestheader-allowed-names \
requestheader-client-ca-file requestheader-extra-headers-prefix requestheader-group-headers \
requestheader-uid-headers requestheader-username-headers runtime-config \
runtime-config-emulation-forward-compatible secure-port service-account-extend-token-expiration \
service-account-issuer service-account-jwks-uri service-account-key-file service-account-lookup \
service-account-max-token-expiration service-account-signing-endpoint service-account-signing-key-file \
service-cluster-ip-range service-node-port-range show-hidden-metrics-for-version shutdown-delay-duration \
shutdown-send-retry-after shutdown-watch-termination-grace-period storage-backend \
storage-initialization-timeout storage-media-type strict-transport-security-directives tls-cert-file \
tls-cipher-suites tls-min-version tls-private-key-file tls-sni-cert-key token-auth-file \
tracing-config-file v version vmodule watch-cache watch-cache-sizes";

/// Flags older releases had and 1.33 refuses.
const REMOVED: &[&str] = &[
    "insecure-port",
    "insecure-bind-address",
    "port",
    "address",
    "kubelet-https",
    "ssh-user",
    "ssh-keyfile",
    "target-ram-mb",
    "deserialization-cache-size",
    "master-service-namespace",
    "service-account-api-audiences",
    "experimental-encryption-provider-config",
    "cloud-provider-gce-lb-src-cidrs",
    "log-dir",
    "logtostderr",
    "alsologtostderr",
    "basic-auth-file",
    "enable-swagger-ui",
    "repair-malformed-updates",
    "storage-versions",
    "tls-ca-file",
    "cloud-provider",
    "cloud-config",
];

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn run(v: &[&str]) -> Result<super::Flags, String> {
    match parse("kube-apiserver", &args(v))? {
        Outcome::Run(f) => Ok(f),
        Outcome::Help => Err("help".into()),
        Outcome::Version(v) => Err(format!("version {v}")),
    }
}

/// A valid value of each type.
fn sample(ty: &str) -> &'static str {
    match ty {
        "bool" => "true",
        "int" | "uint" | "Level" => "3",
        "float" | "float32" => "0.001",
        "string" | "stringArray" => "/tmp/x",
        "strings" => "a,b",
        "duration" => "1m30s",
        "ip" => "10.1.2.3",
        "mapStringString" | "stringToString" => "a=b",
        "colonSeparatedMultimapStringString" => "kube:AllAlpha=false",
        "portRange" => "30000-32767",
        "namedCertKey" => "c.crt,k.key:example.com",
        "quantity" => "1Ki",
        "pattern=N,..." => "foo=2",
        "version" => "raw",
        other => panic!("no sample for {other}"),
    }
}

#[test]
fn table_rows_are_unique_and_defaults_valid() {
    let mut names: Vec<&str> = specs().iter().map(|s| s.name).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate flag names");
    for s in specs() {
        if !s.default.is_empty() {
            value::check(s.ty, s.default).unwrap_or_else(|e| panic!("--{}: {e}", s.name));
        }
        assert!(!s.help.is_empty(), "--{} has no help", s.name);
    }
    for section in Section::ALL {
        assert!(
            specs().iter().any(|s| s.section == section),
            "{section:?} is empty"
        );
    }
}

#[test]
fn every_upstream_flag_is_in_the_table_and_nothing_else_but_kapis() {
    let upstream: Vec<&str> = UPSTREAM.split_whitespace().collect();
    for name in &upstream {
        assert!(super::table::lookup(name).is_some(), "--{name} missing");
    }
    for s in specs() {
        assert!(
            upstream.contains(&s.name) || s.section == Section::Kapi,
            "--{} is not a kube-apiserver flag",
            s.name
        );
    }
    assert_eq!(upstream.len(), 174);
}

#[test]
fn every_flag_accepts_a_valid_value_in_both_forms() {
    for s in specs()
        .iter()
        .filter(|s| !matches!(s.name, "help" | "version"))
    {
        let v = sample(s.ty);
        let f = run(&[&format!("--{}={v}", s.name)])
            .unwrap_or_else(|e| panic!("--{}={v}: {e}", s.name));
        assert!(f.given(s.name));
        assert_eq!(f.string(s.name), v);
        if !value::is_boolish(s.ty) {
            let f = run(&[&format!("--{}", s.name), v]).unwrap();
            assert_eq!(f.string(s.name), v, "--{} {v}", s.name);
        }
    }
}

#[test]
fn bad_values_are_refused_naming_the_flag() {
    let cases = [
        ("--secure-port=x", "invalid argument \"x\" for \"--secure-port\" flag: strconv.ParseInt: parsing \"x\": invalid syntax"),
        ("--anonymous-auth=maybe", "invalid argument \"maybe\" for \"--anonymous-auth\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax"),
        ("--advertise-address=foo", "invalid argument \"foo\" for \"--advertise-address\" flag: failed to parse IP: \"foo\""),
        ("--etcd-count-metric-poll-period=1", "invalid argument \"1\" for \"--etcd-count-metric-poll-period\" flag: time: missing unit in duration \"1\""),
        ("--request-timeout=1d", "invalid argument \"1d\" for \"--request-timeout\" flag: time: unknown unit \"d\" in duration \"1d\""),
        ("--service-node-port-range=abc", "invalid argument \"abc\" for \"--service-node-port-range\" flag: strconv.Atoi: parsing \"abc\": invalid syntax"),
        ("--oidc-required-claim=a", "invalid argument \"a\" for \"--oidc-required-claim\" flag: malformed pair, expect string=string"),
        ("--goaway-chance=x", "invalid argument \"x\" for \"--goaway-chance\" flag: strconv.ParseFloat: parsing \"x\": invalid syntax"),
        ("-v=x", "invalid argument \"x\" for \"-v, --v\" flag: strconv.ParseUint: parsing \"x\": invalid syntax"),
        ("--tls-sni-cert-key=a", "invalid argument \"a\" for \"--tls-sni-cert-key\" flag: expected comma separated certificate and key file paths"),
        ("--vmodule=x", "invalid argument \"x\" for \"--vmodule\" flag: \"x\" does not have the pattern=N format"),
        ("--allow-metric-labels=x", "invalid argument \"x\" for \"--allow-metric-labels\" flag: x must be formatted as key=value"),
        ("--kubelet-port=-1", "invalid argument \"-1\" for \"--kubelet-port\" flag: strconv.ParseUint: parsing \"-1\": invalid syntax"),
        ("--feature-gates=AllAlpha=maybe", "invalid argument \"AllAlpha=maybe\" for \"--feature-gates\" flag: invalid value of AllAlpha=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax"),
        ("--help=x", "invalid argument \"x\" for \"-h, --help\" flag: strconv.ParseBool: parsing \"x\": invalid syntax"),
        ("--log-json-info-buffer-size=x", "invalid argument \"x\" for \"--log-json-info-buffer-size\" flag: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ];
    for (arg, want) in cases {
        assert_eq!(run(&[arg]).unwrap_err(), want, "{arg}");
    }
}

#[test]
fn pflag_syntax() {
    let e = |v: &[&str]| run(v).unwrap_err();
    assert_eq!(e(&["--foo"]), "unknown flag: --foo");
    assert_eq!(e(&["--Secure-port=1"]), "unknown flag: --Secure-port");
    assert_eq!(e(&["-x"]), "unknown shorthand flag: 'x' in -x");
    assert_eq!(e(&["---foo"]), "bad flag syntax: ---foo");
    assert_eq!(e(&["--=x"]), "bad flag syntax: --=x");
    assert_eq!(
        e(&["--secure-port"]),
        "flag needs an argument: --secure-port"
    );
    assert_eq!(e(&["-v"]), "flag needs an argument: 'v' in -v");
    // A boolean never takes the next word: it is an argument, which is refused.
    assert_eq!(
        e(&["--anonymous-auth", "false"]),
        "\"kube-apiserver\" does not take any arguments, got [\"false\"]"
    );
    // The next word is the value whatever it looks like.
    assert!(e(&["--secure-port", "--version"]).starts_with("invalid argument \"--version\""));
    let f = run(&[
        "--anonymous-auth",
        "--watch-cache=false",
        "",
        "-v=4",
        "--secure_port",
        "8443",
    ])
    .unwrap();
    assert!(f.bool("anonymous-auth") && !f.bool("watch-cache"));
    assert_eq!(
        (f.string("v"), f.string("secure-port")),
        ("4".into(), "8443".into())
    );
    assert_eq!(run(&["-v5"]).unwrap().verbosity(), Some(5));
    assert_eq!(run(&["-v", "2"]).unwrap().verbosity(), Some(2));
    assert_eq!(run(&["--", ""]).unwrap().verbosity(), None);
    assert!(e(&["--", "--secure-port=1"]).contains("does not take any arguments"));
}

#[test]
fn lists_append_arrays_do_not_split_scalars_take_the_last() {
    let f = run(&[
        "--etcd-servers=http://a:1,http://b:2",
        "--etcd-servers=http://c:3",
        "--service-account-issuer=https://x,y",
        "--service-account-issuer=z",
        "--secure-port=1",
        "--secure-port=2",
    ])
    .unwrap();
    assert_eq!(
        f.list("etcd-servers"),
        ["http://a:1", "http://b:2", "http://c:3"]
    );
    assert_eq!(f.list("service-account-issuer"), ["https://x,y", "z"]);
    assert_eq!(f.string("secure-port"), "2");
    assert_eq!(run(&[]).unwrap().list("controllers"), ["*"]);
    assert!(run(&["--etcd-servers="])
        .unwrap()
        .list("etcd-servers")
        .is_empty());
    assert_eq!(value::csv_fields("\"a,b\",c").unwrap(), ["a,b", "c"]);
}

#[test]
fn removed_flags_are_refused() {
    for name in REMOVED {
        assert_eq!(
            run(&[&format!("--{name}=1")]).unwrap_err(),
            format!("unknown flag: --{name}")
        );
    }
}

#[test]
fn deprecated_flags_warn_when_used() {
    let f = run(&[
        "--apiserver-count=3",
        "--admission-control=NamespaceLifecycle",
    ])
    .unwrap();
    assert_eq!(f.warnings().len(), 2);
    assert!(f.warnings()[0].starts_with("Flag --apiserver-count has been deprecated, "));
    let (noop, todo) = f.report();
    // --admission-control is implemented: deprecated, but neither.
    assert_eq!((noop, todo), (vec!["apiserver-count"], Vec::<&str>::new()));
}

#[test]
fn help_and_version() {
    assert!(matches!(parse("k", &args(&["-h"])), Ok(Outcome::Help)));
    assert!(matches!(parse("k", &args(&["--version"])), Ok(Outcome::Version(v)) if v == "true"));
    assert!(matches!(parse("k", &args(&["--version=raw"])), Ok(Outcome::Version(v)) if v == "raw"));
    assert!(matches!(
        parse("k", &args(&["--version=false"])),
        Ok(Outcome::Run(_))
    ));
    let help = super::help::render("kube-apiserver");
    for section in Section::ALL {
        assert!(
            help.contains(&format!("{}:\n", section.title())),
            "{section:?}"
        );
    }
    assert!(help.contains("      --profiling "));
    assert!(help.contains("  -v, --v Level"));
    // Flags accepted but not implemented yet say so.
    for spec in super::table::specs()
        .iter()
        .filter(|s| s.status == super::table::Status::NotYet)
    {
        let flag = format!("--{} ", spec.name);
        let line = help.lines().find(|l| l.contains(&flag)).unwrap();
        assert!(line.ends_with("[not implemented yet]"), "{line}");
    }
    let event_ttl = help.lines().find(|l| l.contains("--event-ttl")).unwrap();
    assert!(!event_ttl.contains("[not implemented yet]"), "{event_ttl}");
    // envtest looks for this flag in the help to decide whether to pass it.
    assert!(!help
        .lines()
        .any(|l| l.trim_start().starts_with("--insecure-port")));
}

#[test]
fn go_durations() {
    for (text, ns) in [
        ("0", 0i128),
        ("1h0m0s", 3_600_000_000_000),
        ("300ms", 300_000_000),
        ("2m30s", 150_000_000_000),
        ("1.5s", 1_500_000_000),
        ("-2s", -2_000_000_000),
        ("1h2m3.5s", 3_723_500_000_000),
        ("10us", 10_000),
    ] {
        assert_eq!(value::parse_duration(text), Ok(ns), "{text}");
    }
    for (ns, text) in [
        (0, "0s"),
        (3_600_000_000_000, "1h0m0s"),
        (300_000_000, "300ms"),
        (150_000_000_000, "2m30s"),
        (1_500_000_000, "1.5s"),
        (5_000_000_000, "5s"),
    ] {
        assert_eq!(value::format_duration(ns), text);
    }
    assert_eq!(
        value::parse_duration(""),
        Err("time: invalid duration \"\"".into())
    );
    assert_eq!(value::parse_duration("1.s"), Ok(1_000_000_000));
    assert!(value::parse_duration(".s").is_err());
}

#[test]
fn serve_args_defaults_of_both_invocations() {
    let kapi = ServeArgs::from_flags(&run(&[]).unwrap(), false).unwrap();
    assert_eq!(kapi.data_dir, std::path::PathBuf::from("./kapi-data"));
    assert_eq!(kapi.cert_dir, None);
    assert_eq!(
        (kapi.secure_port, kapi.bind_address.as_str()),
        (6443, "0.0.0.0")
    );
    assert_eq!(kapi.request_timeout, std::time::Duration::from_secs(60));
    assert_eq!(kapi.authorization_mode, "RBAC");
    let kas = ServeArgs::from_flags(&run(&["--cert-dir=/c"]).unwrap(), true).unwrap();
    assert_eq!(kas.cert_dir.as_deref(), Some(std::path::Path::new("/c")));
    assert_eq!(kas.data_dir, std::path::PathBuf::from("/c/kapi-data"));
    let kas = ServeArgs::from_flags(&run(&[]).unwrap(), true).unwrap();
    assert_eq!(
        kas.cert_dir.as_deref(),
        Some(std::path::Path::new("/var/run/kubernetes"))
    );
    let a = ServeArgs::from_flags(
        &run(&[
            "--authorization-mode=Node",
            "--authorization-mode=RBAC",
            "--endpoint-reconciler-type=master-count",
            "--service-account-max-token-expiration=1h",
        ])
        .unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(
        (
            a.authorization_mode.as_str(),
            a.endpoint_reconciler_type.as_str()
        ),
        ("Node,RBAC", "lease")
    );
    assert_eq!(
        a.service_account_max_token_expiration,
        Some(std::time::Duration::from_secs(3600))
    );
    let bad = |v: &[&str]| ServeArgs::from_flags(&run(v).unwrap(), false).unwrap_err();
    assert_eq!(
        bad(&["--secure-port=70000"]),
        "--secure-port 70000 must be between 0 and 65535, inclusive"
    );
    assert_eq!(
        bad(&["--request-timeout=-1s"]),
        "--request-timeout must not be negative"
    );
}

#[test]
fn storage_media_type_is_one_of_upstreams_three() {
    use kapi_registry::MediaType;
    let media = |v: &[&str]| ServeArgs::from_flags(&run(v).unwrap(), false);
    assert_eq!(media(&[]).unwrap().storage_media_type, MediaType::Protobuf);
    assert_eq!(
        media(&["--storage-media-type="])
            .unwrap()
            .storage_media_type,
        MediaType::Protobuf
    );
    for (flag, want) in [
        ("application/json", MediaType::Json),
        ("application/yaml", MediaType::Yaml),
        ("application/vnd.kubernetes.protobuf", MediaType::Protobuf),
    ] {
        let arg = format!("--storage-media-type={flag}");
        assert_eq!(media(&[&arg]).unwrap().storage_media_type, want);
    }
    assert_eq!(
        media(&["--storage-media-type=application/xml"]).unwrap_err(),
        "--storage-media-type \"application/xml\" invalid, allowed values: \
         application/json, application/vnd.kubernetes.protobuf, application/yaml"
    );
}
