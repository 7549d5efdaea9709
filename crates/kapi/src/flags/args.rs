//! [`ServeArgs`]: what `kapi serve` runs with, read from the parsed flags.
//! Only flags marked `on` in the table are read here; the conversions check
//! what the table's types cannot (ranges, non-negative durations, enums).
//!
//! Invariant: a field is filled from the flag of the same name (`_` for `-`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::Flags;

mod convert;
use convert::{
    admission, check_peer_flags, endpoint_reconciler, etcd_servers_overrides, goaway_chance,
    kubernetes_service_node_port, node_port_range, pairs, signing_endpoint, sni,
    storage_media_type, watch_cache_sizes,
};

/// The settings of `kapi serve` (see the flag table for each one's meaning).
#[derive(Debug)]
pub struct ServeArgs {
    pub secure_port: u16,
    pub bind_address: String,
    pub data_dir: PathBuf,
    /// Where `apiserver.crt`/`apiserver.key` are taken from or written to;
    /// `None` keeps the serving certificate under `data_dir/pki`.
    pub cert_dir: Option<PathBuf>,
    pub etcd_servers: Vec<String>,
    pub etcd_prefix: String,
    pub etcd_cafile: Option<String>,
    pub etcd_certfile: Option<String>,
    pub etcd_keyfile: Option<String>,
    pub etcd_compaction_interval: Duration,
    pub storage_media_type: kapi_registry::MediaType,
    /// How long a lease granted for a TTL is reused on etcd.
    pub lease_reuse_duration: Duration,
    /// How long events live after each write (0: until deleted).
    pub event_ttl: Duration,
    pub encryption_provider_config: Option<PathBuf>,
    /// `--egress-selector-config-file`: an `EgressSelectorConfiguration`.
    pub egress_selector_config_file: Option<PathBuf>,
    pub encryption_provider_config_automatic_reload: bool,
    /// `--tracing-config-file` (APIServerTracing), read at start (`otel.rs`).
    pub tracing_config_file: Option<PathBuf>,
    pub storage_ready_timeout: Duration,
    pub service_cluster_ip_range: String,
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    pub client_ca_file: Option<PathBuf>,
    pub proxy_client_cert_file: Option<PathBuf>,
    pub proxy_client_key_file: Option<PathBuf>,
    pub requestheader_client_ca_file: Option<PathBuf>,
    pub requestheader_allowed_names: Vec<String>,
    pub requestheader_username_headers: Vec<String>,
    pub requestheader_uid_headers: Vec<String>,
    pub requestheader_group_headers: Vec<String>,
    pub requestheader_extra_headers_prefix: Vec<String>,
    pub token_auth_file: Option<PathBuf>,
    pub anonymous_auth: bool,
    /// Whether `--anonymous-auth` was given (it may not be with an
    /// `anonymous` section in `--authentication-config`).
    pub anonymous_auth_given: bool,
    pub authentication_config: Option<PathBuf>,
    pub oidc: Oidc,
    pub authentication_token_webhook_config_file: Option<PathBuf>,
    pub authentication_token_webhook_version: String,
    pub authentication_token_webhook_cache_ttl: Duration,
    pub enable_bootstrap_token_auth: bool,
    pub service_account_lookup: bool,
    pub authorization_mode: String,
    /// The admission chain `--enable-admission-plugins`,
    /// `--disable-admission-plugins` or `--admission-control` select, with
    /// `--admission-control-config-file`'s settings.
    pub admission: kapi_admission_plugins::Selection,
    pub allow_privileged: bool,
    /// Whether `--authorization-mode` or an `--authorization-webhook-*` flag
    /// was given (neither may be with `--authorization-config`).
    pub authorization_legacy_given: bool,
    pub authorization_config: Option<PathBuf>,
    pub authorization_policy_file: Option<PathBuf>,
    pub authorization_webhook_config_file: Option<PathBuf>,
    pub authorization_webhook_version: String,
    pub authorization_webhook_cache_authorized_ttl: Duration,
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    pub service_account_signing_key_file: Option<PathBuf>,
    /// `--service-account-signing-endpoint` (checked as upstream checks it).
    pub service_account_signing_endpoint: Option<String>,
    pub service_account_key_file: Vec<PathBuf>,
    pub service_account_issuer: Vec<String>,
    pub api_audiences: Vec<String>,
    pub service_account_jwks_uri: Option<String>,
    pub service_account_max_token_expiration: Option<Duration>,
    pub service_account_extend_token_expiration: bool,
    pub service_account_legacy_tokens: bool,
    pub advertise_address: Option<String>,
    pub controllers: Vec<String>,
    pub endpoint_reconciler_type: String,
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    pub enable_priority_and_fairness: bool,
    pub request_timeout: Duration,
    pub audit_policy_file: Option<PathBuf>,
    pub audit_log_path: Option<PathBuf>,
    pub audit_webhook_config_file: Option<PathBuf>,
    /// The rest of the `--audit-log-*` and `--audit-webhook-*` families.
    pub audit: super::audit::AuditFlags,
    /// `--tls-min-version` and `--tls-cipher-suites`, checked.
    pub tls: kapi_http::tls::TlsSettings,
    /// `--tls-sni-cert-key`: (certificate file, key file, names).
    pub tls_sni_cert_key: Vec<(PathBuf, PathBuf, Vec<String>)>,
    pub http2_max_streams_per_connection: u32,
    pub disable_http2_serving: bool,
    pub goaway_chance: f64,
    /// `--cors-allowed-origins`, compiled (`None`: CORS off).
    pub cors: Option<kapi_http::cors::Cors>,
    pub permit_port_sharing: bool,
    /// The metrics flags (`--disabled-metrics`, `--allow-metric-labels[-manifest]`,
    /// `--show-hidden-metrics-for-version`).
    pub metrics: kapi_http::metrics::Policy,
    /// `--strict-transport-security-directives`, validated and joined.
    pub hsts: Option<axum::http::HeaderValue>,
    pub external_hostname: Option<String>,
    pub min_request_timeout: Duration,
    pub shutdown_delay_duration: Duration,
    pub shutdown_send_retry_after: bool,
    pub shutdown_watch_termination_grace_period: Duration,
    /// `--service-node-port-range`, inclusive.
    pub service_node_port_range: (u16, u16),
    /// `--kubernetes-service-node-port` (0: the `kubernetes` Service is ClusterIP).
    pub kubernetes_service_node_port: u16,
    pub etcd_healthcheck_timeout: Duration,
    pub etcd_readycheck_timeout: Duration,
    /// `--storage-initialization-timeout` (used with the
    /// `WatchCacheInitializationPostStartHook` gate).
    pub storage_initialization_timeout: Duration,
    /// The built-in `(group, version, resource)`s `--runtime-config` turns off.
    pub runtime_config_off: Vec<(String, String, String)>,
    pub feature_gates: super::gates::FeatureGates,
    /// `--emulated-version` and its companions.
    pub emulation: super::emulation::Emulation,
    pub watch_cache: bool,
    /// `--watch-cache-sizes`: `(group, resource)` with size 0.
    pub watch_cache_off: Vec<(String, String)>,
    /// `--etcd-servers-overrides`: `(group, resource)` and its servers.
    pub etcd_servers_overrides: Vec<Override>,
    pub delete_collection_workers: usize,
    pub enable_garbage_collector: bool,
    pub kubelet_client_certificate: Option<PathBuf>,
    pub kubelet_client_key: Option<PathBuf>,
    pub kubelet_certificate_authority: Option<PathBuf>,
    pub kubelet_preferred_address_types: Vec<String>,
    pub kubelet_timeout: Duration,
    /// `--max-connection-bytes-per-sec` (0: unlimited).
    pub max_connection_bytes_per_sec: u64,
    /// `--enable-aggregator-routing`: services dialled at their endpoints.
    pub enable_aggregator_routing: bool,
    pub aggregator_reject_forwarding_redirect: bool,
}

/// The `--oidc-*` flags.
#[derive(Debug, Default)]
pub struct Oidc {
    /// Whether any `--oidc-*` flag was given.
    pub given: bool,
    pub issuer_url: String,
    pub client_id: String,
    pub ca_file: Option<PathBuf>,
    pub username_claim: String,
    pub username_prefix: String,
    pub groups_claim: String,
    pub groups_prefix: String,
    pub required_claims: BTreeMap<String, String>,
    pub signing_algs: Vec<String>,
}

impl Oidc {
    fn from_flags(f: &Flags) -> Oidc {
        const FLAGS: [&str; 9] = [
            "oidc-issuer-url",
            "oidc-client-id",
            "oidc-ca-file",
            "oidc-username-claim",
            "oidc-username-prefix",
            "oidc-groups-claim",
            "oidc-groups-prefix",
            "oidc-signing-algs",
            "oidc-required-claim",
        ];
        Oidc {
            given: FLAGS.iter().any(|n| f.given(n)),
            issuer_url: f.string("oidc-issuer-url"),
            client_id: f.string("oidc-client-id"),
            ca_file: f.opt_path("oidc-ca-file"),
            username_claim: f.string("oidc-username-claim"),
            username_prefix: f.string("oidc-username-prefix"),
            groups_claim: f.string("oidc-groups-claim"),
            groups_prefix: f.string("oidc-groups-prefix"),
            required_claims: f.map("oidc-required-claim"),
            signing_algs: f.list_nonempty("oidc-signing-algs"),
        }
    }
}

impl ServeArgs {
    /// Read the settings; `as_kube_apiserver` selects upstream's defaults where
    /// kapi's differ (`--cert-dir` always applies, the data dir lives in it).
    pub fn from_flags(f: &Flags, as_kube_apiserver: bool) -> Result<ServeArgs, String> {
        let cert_dir = (as_kube_apiserver || f.given("cert-dir")).then(|| f.path("cert-dir"));
        let data_dir = match &cert_dir {
            Some(dir) if as_kube_apiserver && !f.given("data-dir") => dir.join("kapi-data"),
            _ => f.path("data-dir"),
        };
        let emulation = super::emulation::Emulation::parse(
            &f.list_nonempty("emulated-version"),
            f.bool("emulation-forward-compatible"),
            f.bool("runtime-config-emulation-forward-compatible"),
        )?;
        let feature_gates = super::gates::FeatureGates::parse_at(
            &f.list_nonempty("feature-gates"),
            emulation.minor,
        )?;
        let service_account_signing_endpoint = signing_endpoint(f, &feature_gates)?;
        check_peer_flags(f, &feature_gates)?;
        Ok(ServeArgs {
            secure_port: f.int_in("secure-port", 0, 65535)? as u16,
            bind_address: f.string("bind-address"),
            data_dir,
            cert_dir,
            etcd_servers: f.list("etcd-servers"),
            etcd_prefix: f.string("etcd-prefix"),
            etcd_cafile: f.opt_string("etcd-cafile"),
            etcd_certfile: f.opt_string("etcd-certfile"),
            etcd_keyfile: f.opt_string("etcd-keyfile"),
            etcd_compaction_interval: f.duration("etcd-compaction-interval")?,
            storage_media_type: storage_media_type(f)?,
            lease_reuse_duration: Duration::from_secs(f.int_in(
                "lease-reuse-duration-seconds",
                1,
                i64::MAX,
            )? as u64),
            event_ttl: f.duration("event-ttl")?,
            encryption_provider_config: f.opt_path("encryption-provider-config"),
            egress_selector_config_file: f.opt_path("egress-selector-config-file"),
            tracing_config_file: f.opt_path("tracing-config-file"),
            encryption_provider_config_automatic_reload: f
                .bool("encryption-provider-config-automatic-reload"),
            storage_ready_timeout: f.duration("storage-ready-timeout")?,
            service_cluster_ip_range: f.string("service-cluster-ip-range"),
            tls_cert_file: f.opt_path("tls-cert-file"),
            tls_private_key_file: f.opt_path("tls-private-key-file"),
            client_ca_file: f.opt_path("client-ca-file"),
            proxy_client_cert_file: f.opt_path("proxy-client-cert-file"),
            proxy_client_key_file: f.opt_path("proxy-client-key-file"),
            requestheader_client_ca_file: f.opt_path("requestheader-client-ca-file"),
            requestheader_allowed_names: f.list("requestheader-allowed-names"),
            requestheader_username_headers: f.list("requestheader-username-headers"),
            requestheader_uid_headers: f.list_nonempty("requestheader-uid-headers"),
            requestheader_group_headers: f.list("requestheader-group-headers"),
            requestheader_extra_headers_prefix: f.list("requestheader-extra-headers-prefix"),
            token_auth_file: f.opt_path("token-auth-file"),
            anonymous_auth: f.bool("anonymous-auth"),
            anonymous_auth_given: f.given("anonymous-auth"),
            authentication_config: f.opt_path("authentication-config"),
            oidc: Oidc::from_flags(f),
            authentication_token_webhook_config_file: f
                .opt_path("authentication-token-webhook-config-file"),
            authentication_token_webhook_version: f.string("authentication-token-webhook-version"),
            authentication_token_webhook_cache_ttl: f
                .duration("authentication-token-webhook-cache-ttl")?,
            enable_bootstrap_token_auth: f.bool("enable-bootstrap-token-auth"),
            service_account_lookup: f.bool("service-account-lookup"),
            authorization_mode: f.list("authorization-mode").join(","),
            admission: admission(f)?,
            allow_privileged: f.bool("allow-privileged"),
            authorization_legacy_given: [
                "authorization-mode",
                "authorization-policy-file",
                "authorization-webhook-config-file",
                "authorization-webhook-version",
                "authorization-webhook-cache-authorized-ttl",
                "authorization-webhook-cache-unauthorized-ttl",
            ]
            .iter()
            .any(|n| f.given(n)),
            authorization_config: f.opt_path("authorization-config"),
            authorization_policy_file: f.opt_path("authorization-policy-file"),
            authorization_webhook_config_file: f.opt_path("authorization-webhook-config-file"),
            authorization_webhook_version: f.string("authorization-webhook-version"),
            authorization_webhook_cache_authorized_ttl: f
                .duration("authorization-webhook-cache-authorized-ttl")?,
            authorization_webhook_cache_unauthorized_ttl: f
                .duration("authorization-webhook-cache-unauthorized-ttl")?,
            service_account_signing_key_file: f.opt_path("service-account-signing-key-file"),
            service_account_key_file: f
                .list_nonempty("service-account-key-file")
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            service_account_issuer: f.list_nonempty("service-account-issuer"),
            api_audiences: f.list("api-audiences"),
            service_account_jwks_uri: f.opt_string("service-account-jwks-uri"),
            service_account_max_token_expiration: Some(
                f.duration("service-account-max-token-expiration")?,
            )
            .filter(|d| !d.is_zero()),
            service_account_extend_token_expiration: f
                .bool("service-account-extend-token-expiration"),
            service_account_legacy_tokens: f.bool("service-account-legacy-tokens"),
            advertise_address: f.opt_string("advertise-address"),
            controllers: f.list("controllers"),
            endpoint_reconciler_type: endpoint_reconciler(f)?,
            max_requests_inflight: f.int_in("max-requests-inflight", 0, i64::MAX)? as usize,
            max_mutating_requests_inflight: f.int_in(
                "max-mutating-requests-inflight",
                0,
                i64::MAX,
            )? as usize,
            enable_priority_and_fairness: f.bool("enable-priority-and-fairness"),
            request_timeout: f.duration("request-timeout")?,
            audit_policy_file: f.opt_path("audit-policy-file"),
            audit_log_path: f.opt_path("audit-log-path"),
            audit_webhook_config_file: f.opt_path("audit-webhook-config-file"),
            audit: super::audit::AuditFlags::read(f)?,
            tls: kapi_http::tls::TlsSettings::parse(
                &f.string("tls-min-version"),
                &f.list_nonempty("tls-cipher-suites"),
            )?,
            tls_sni_cert_key: f.list_nonempty("tls-sni-cert-key").iter().map(|v| sni(v)).collect(),
            http2_max_streams_per_connection: f.int_in(
                "http2-max-streams-per-connection",
                0,
                u32::MAX.into(),
            )? as u32,
            disable_http2_serving: f.bool("disable-http2-serving"),
            goaway_chance: goaway_chance(f)?,
            cors: kapi_http::cors::Cors::new(&f.list("cors-allowed-origins"))?,
            permit_port_sharing: f.bool("permit-port-sharing"),
            metrics: super::metrics::policy(f)?,
            hsts: kapi_server::filters::hsts_value(
                &Some(f.list("strict-transport-security-directives"))
                    .filter(|d| d.iter().any(|x| !x.is_empty()))
                    .unwrap_or_default(),
            )?,
            external_hostname: f.opt_string("external-hostname"),
            min_request_timeout: std::time::Duration::from_secs(
                f.int_in("min-request-timeout", 0, i64::MAX)
                    .map_err(|_| "--min-request-timeout can not be negative value".to_string())?
                    as u64,
            ),
            shutdown_delay_duration: f
                .duration("shutdown-delay-duration")
                .map_err(|_| "--shutdown-delay-duration can not be negative value".to_string())?,
            shutdown_send_retry_after: f.bool("shutdown-send-retry-after"),
            shutdown_watch_termination_grace_period: f
                .duration("shutdown-watch-termination-grace-period")
                .map_err(|_| {
                    "shutdown-watch-termination-grace-period, if provided, can not be a negative value"
                        .to_string()
                })?,
            service_node_port_range: node_port_range(f)?,
            kubernetes_service_node_port: kubernetes_service_node_port(f)?,
            etcd_healthcheck_timeout: f.duration("etcd-healthcheck-timeout")?,
            etcd_readycheck_timeout: f.duration("etcd-readycheck-timeout")?,
            storage_initialization_timeout: f.duration("storage-initialization-timeout")?,
            runtime_config_off: kapi::runtime_config_off(&pairs(
                &f.list_nonempty("runtime-config"),
            ))?,
            feature_gates,
            emulation,
            service_account_signing_endpoint,
            watch_cache: f.bool("watch-cache"),
            watch_cache_off: watch_cache_sizes(&f.list_nonempty("watch-cache-sizes"))?,
            etcd_servers_overrides: etcd_servers_overrides(&f.list_nonempty("etcd-servers-overrides"))?,
            delete_collection_workers: f.int_in("delete-collection-workers", 1, 1 << 16)
                .map_err(|_| "--delete-collection-workers must be a positive number".to_string())?
                as usize,
            enable_garbage_collector: f.bool("enable-garbage-collector"),
            kubelet_client_certificate: f.opt_path("kubelet-client-certificate"),
            kubelet_client_key: f.opt_path("kubelet-client-key"),
            kubelet_certificate_authority: f.opt_path("kubelet-certificate-authority"),
            kubelet_preferred_address_types: f.list_nonempty("kubelet-preferred-address-types"),
            max_connection_bytes_per_sec: f
                .int_in("max-connection-bytes-per-sec", i64::MIN, i64::MAX)?
                .max(0) as u64,
            kubelet_timeout: f.duration("kubelet-timeout")?,
            enable_aggregator_routing: f.bool("enable-aggregator-routing"),
            aggregator_reject_forwarding_redirect: f.bool("aggregator-reject-forwarding-redirect"),
        })
    }
}

/// One `--etcd-servers-overrides` entry: `(group, resource)` and its servers.
pub type Override = ((String, String), Vec<String>);
