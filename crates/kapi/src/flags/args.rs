//! [`ServeArgs`]: what `kapi serve` runs with, read from the parsed flags.
//! Only flags marked `on` in the table are read here; the conversions check
//! what the table's types cannot (ranges, non-negative durations, enums).
//!
//! Invariant: a field is filled from the flag of the same name (`_` for `-`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::Flags;

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
    /// Whether `--authorization-mode` or an `--authorization-webhook-*` flag
    /// was given (neither may be with `--authorization-config`).
    pub authorization_legacy_given: bool,
    pub authorization_config: Option<PathBuf>,
    pub authorization_webhook_config_file: Option<PathBuf>,
    pub authorization_webhook_version: String,
    pub authorization_webhook_cache_authorized_ttl: Duration,
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    pub enable_admission_plugins: Vec<String>,
    pub disable_admission_plugins: Vec<String>,
    pub service_account_signing_key_file: Option<PathBuf>,
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
    pub audit_log_maxsize: u64,
    pub audit_log_maxbackup: usize,
    pub audit_log_maxage: u32,
    pub audit_log_batch_buffer_size: usize,
    pub audit_log_batch_max_size: usize,
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
            authorization_legacy_given: [
                "authorization-mode",
                "authorization-webhook-config-file",
                "authorization-webhook-version",
                "authorization-webhook-cache-authorized-ttl",
                "authorization-webhook-cache-unauthorized-ttl",
            ]
            .iter()
            .any(|n| f.given(n)),
            authorization_config: f.opt_path("authorization-config"),
            authorization_webhook_config_file: f.opt_path("authorization-webhook-config-file"),
            authorization_webhook_version: f.string("authorization-webhook-version"),
            authorization_webhook_cache_authorized_ttl: f
                .duration("authorization-webhook-cache-authorized-ttl")?,
            authorization_webhook_cache_unauthorized_ttl: f
                .duration("authorization-webhook-cache-unauthorized-ttl")?,
            enable_admission_plugins: f.list("enable-admission-plugins"),
            disable_admission_plugins: f.list("disable-admission-plugins"),
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
            audit_log_maxsize: f.int_in("audit-log-maxsize", 0, i64::MAX)? as u64,
            audit_log_maxbackup: f.int_in("audit-log-maxbackup", 0, i64::MAX)? as usize,
            audit_log_maxage: f.int_in("audit-log-maxage", 0, u32::MAX as i64)? as u32,
            audit_log_batch_buffer_size: f.int_in("audit-log-batch-buffer-size", 0, i64::MAX)?
                as usize,
            audit_log_batch_max_size: f.int_in("audit-log-batch-max-size", 1, i64::MAX)? as usize,
        })
    }
}

/// `lease` and `none` as kapi has them; upstream's deprecated `master-count`
/// keeps the endpoints too, so it works as `lease`.
fn endpoint_reconciler(f: &Flags) -> Result<String, String> {
    match f.string("endpoint-reconciler-type").as_str() {
        "lease" | "master-count" => Ok("lease".into()),
        "none" => Ok("none".into()),
        other => Err(format!(
            "--endpoint-reconciler-type: unknown type {other:?} (master-count, lease, none)"
        )),
    }
}
