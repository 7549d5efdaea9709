//! `kapi serve`: open storage (embedded by default, etcd with `--etcd-servers`),
//! wait for it within `--storage-ready-timeout`, bootstrap, write the admin
//! kubeconfig, and serve HTTPS until SIGINT/SIGTERM, then terminate gracefully
//! (`serving.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use kapi_auth::authn::requestheader::{CertVerifier, RequestHeader, RequestHeaderConfig};
use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authn::{Authenticator, TokenFile};
use kapi_client::service_resolver::Routing;
use kapi_egress::Egress;
use kapi_http::lifecycle::Lifecycle;
use kapi_server::{tls, ChainOptions, Cidr, ServerConfig};

use crate::auth_options;
pub use crate::flags::ServeArgs;
use crate::serving::TerminationSettings;

/// The filter settings the flags ask for.
fn chain_options(a: &ServeArgs, egress: &Egress) -> Result<ChainOptions, String> {
    let audit = match &a.audit_policy_file {
        Some(policy) if a.audit_log_path.is_some() || a.audit_webhook_config_file.is_some() => {
            let policy = kapi_auth::audit::policy::Policy::load(policy)
                .map_err(|e| format!("--audit-policy-file: {e}"))?;
            let log = a.audit_log_path.as_ref().map(|path| {
                let mut log = kapi_auth::audit::sink::LogOptions::new(path);
                log.rotation = a.audit.log_rotation.clone();
                log.format = a.audit.log_format;
                log.delivery = a.audit.log_delivery.clone();
                log
            });
            let webhook = match &a.audit_webhook_config_file {
                Some(path) => Some(kapi_auth::audit::sink::WebhookOptions {
                    connection: kapi_client::kubeconfig::load(path)
                        .map_err(|e| format!("initializing audit webhook: {e}"))?
                        .via(egress.control_plane()),
                    initial_backoff: a.audit.webhook_initial_backoff,
                    delivery: a.audit.webhook_delivery.clone(),
                }),
                None => None,
            };
            Some(kapi_auth::audit::AuditConfig {
                policy,
                log,
                webhook,
            })
        }
        _ => None,
    };
    Ok(ChainOptions {
        max_requests_inflight: a.max_requests_inflight,
        max_mutating_requests_inflight: a.max_mutating_requests_inflight,
        enable_priority_and_fairness: a.enable_priority_and_fairness,
        request_timeout: a.request_timeout,
        audit,
        cors: a.cors.clone(),
        hsts: a.hsts.clone(),
        metrics: a.metrics.clone(),
        lifecycle: Some(Lifecycle::new(a.shutdown_send_retry_after)),
        // Set by `run` from `--tracing-config-file` (`trace_pipeline`).
        tracing: None,
    })
}

/// The server's address and handler settings.
fn server_config(a: &ServeArgs, advertise: &str, port: u16, service_cidr: Cidr) -> ServerConfig {
    let mut config = ServerConfig::new(format!("{advertise}:{port}"), port, service_cidr);
    config.node_ports = a.service_node_port_range;
    config.kubernetes_service_node_port = a.kubernetes_service_node_port;
    config.min_request_timeout = a.min_request_timeout;
    config.external_address = a.external_hostname.as_ref().map(|h| format!("{h}:{port}"));
    config.etcd_healthcheck_timeout = a.etcd_healthcheck_timeout;
    config.etcd_readycheck_timeout = a.etcd_readycheck_timeout;
    config.delete_collection_workers = a.delete_collection_workers;
    config.discovery_v2beta1 = !a.feature_gates.enabled("AggregatedDiscoveryRemoveBetaType");
    config.watch_list = a.feature_gates.enabled("WatchList");
    config.emulation = (a.emulation.minor, a.emulation.min_compatibility_minor());
    config
}

/// `--encryption-provider-config`, loaded (a bad file stops the start with
/// upstream's message); KMS plugins are asked for their first DEK here.
async fn encryption(a: &ServeArgs) -> Result<Option<Arc<kapi_encryption::Encryption>>, String> {
    let reload = a.encryption_provider_config_automatic_reload;
    let Some(path) = &a.encryption_provider_config else {
        if reload {
            return Err("--encryption-provider-config-automatic-reload must be set with --encryption-provider-config".into());
        }
        return Ok(None);
    };
    let mut settings = kapi_encryption::Settings::new(path, reload);
    settings.key_prefix = a.etcd_prefix.clone();
    kapi_encryption::Encryption::load(settings).await.map(Some)
}

/// `--egress-selector-config-file`, loaded (a bad file stops the start with
/// upstream's message, naming the file). The `etcd` selection reaches the
/// etcd client through `storage.rs`.
fn egress(a: &ServeArgs) -> Result<Egress, String> {
    let Some(path) = &a.egress_selector_config_file else {
        return Ok(Egress::default());
    };
    let flag = format!("--egress-selector-config-file {}", path.display());
    let egress = Egress::load(path).map_err(|e| format!("{flag}: {e}"))?;
    let etcd_used = !a.etcd_servers.is_empty() || !a.etcd_servers_overrides.is_empty();
    if egress.etcd_protocol() != kapi_egress::Protocol::Direct && !etcd_used {
        tracing::warn!("{flag}: the etcd egress selection has no effect without --etcd-servers");
    }
    Ok(egress)
}

fn read(path: &PathBuf) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Name the feature gates set that change nothing in kapi, and upstream's
/// warnings for GA and deprecated gates set.
fn report_gates(a: &ServeArgs) {
    for w in &a.feature_gates.warnings {
        tracing::warn!("{w}");
    }
    for name in a.feature_gates.without_effect() {
        tracing::info!("feature gate {name} (--feature-gates) has no effect in kapi");
    }
}

pub async fn run(a: ServeArgs) -> Result<(), String> {
    let started = std::time::Instant::now();
    report_gates(&a);
    let service_cidr = Cidr::parse(&a.service_cluster_ip_range)
        .map_err(|e| format!("--service-cluster-ip-range: {e}"))?;
    std::fs::create_dir_all(&a.data_dir)
        .map_err(|e| format!("creating {}: {e}", a.data_dir.display()))?;
    let egress = egress(&a)?;
    let encryption = encryption(&a).await?;
    let traces = trace_pipeline(&a)?;
    let slot = crate::storage::open_main(&a, &egress).await?;
    let storage = crate::storage::options(&a, &egress).await?;

    let advertise = a
        .advertise_address
        .clone()
        .unwrap_or_else(|| "127.0.0.1".into());
    let listener = crate::serving::bind(&a)
        .await
        .map_err(|e| format!("binding {}:{}: {e}", a.bind_address, a.secure_port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();

    let extra = vec![
        service_cidr.nth(1).to_string(),
        a.bind_address.clone(),
        advertise.clone(),
    ];
    let pki = tls::load_or_generate(&a.data_dir, &extra).map_err(|e| e.to_string())?;
    let (cert, key) = match (&a.tls_cert_file, &a.tls_private_key_file) {
        (Some(c), Some(k)) => (read(c)?, read(k)?),
        (None, None) => match &a.cert_dir {
            Some(dir) => {
                crate::certdir::serving_pair(dir, (&pki.serving_cert_pem, &pki.serving_key_pem))?
            }
            None => (pki.serving_cert_pem.clone(), pki.serving_key_pem.clone()),
        },
        _ => return Err("--tls-cert-file and --tls-private-key-file go together".into()),
    };
    let mut client_cas = vec![pki.ca_cert_pem.clone()];
    if let Some(ca) = &a.client_ca_file {
        client_cas.push(read(ca)?);
    }
    let x509_cas = client_cas.clone();
    let request_header = match &a.requestheader_client_ca_file {
        Some(path) => {
            let ca = read(path)?;
            client_cas.push(ca.clone());
            Some(RequestHeaderConfig {
                client_ca: ca,
                allowed_names: a.requestheader_allowed_names.clone(),
                username_headers: a.requestheader_username_headers.clone(),
                uid_headers: a.requestheader_uid_headers.clone(),
                group_headers: a.requestheader_group_headers.clone(),
                extra_headers_prefix: a.requestheader_extra_headers_prefix.clone(),
            })
        }
        None => None,
    };
    let tls_configs = crate::serving::tls_configs(&a, &cert, &key, &client_cas)?;
    let tokens = match &a.token_auth_file {
        Some(p) => Some(TokenFile::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let mut authenticator =
        Authenticator::new(tokens, a.anonymous_auth).with_client_cas(CertVerifier::new(&x509_cas)?);
    if let Some(config) = request_header.clone() {
        let rh = RequestHeader::new(config)?;
        authenticator = authenticator.with_request_header(rh, CertVerifier::new(&x509_cas)?);
    }
    let issuer = service_account_issuer(&a).await?;
    let sa_issuers = match a.service_account_issuer.as_slice() {
        [] => vec![issuer.issuer().to_string()],
        given => given.to_vec(),
    };
    let authenticator =
        auth_options::authentication(&a, authenticator, &sa_issuers, issuer.audiences(), &egress)?;
    let authorizers = auth_options::authorization(&a, &egress)?;
    let mut chain = chain_options(&a, &egress)?;
    chain.tracing = traces.as_ref().map(kapi::otel::Pipeline::tracing);

    let config = server_config(&a, &advertise, port, service_cidr);
    let mut selected = a.controllers.clone();
    if !a.enable_garbage_collector {
        // kube-apiserver's flag must match kube-controller-manager's; kapi
        // runs that controller itself.
        selected.push("-garbagecollector".into());
    }
    let controllers = kapi_controllers::Options {
        controllers: kapi_controllers::Selection::parse(&selected)
            .map_err(|e| format!("--controllers: {e}"))?,
        endpoint_reconciler: a.endpoint_reconciler_type == "lease",
        root_ca: Some(pki.ca_cert_pem.clone()),
        identity_lease: a.feature_gates.enabled("APIServerIdentity"),
    };
    let admission = a.admission.clone();
    let proxy_client = match (&a.proxy_client_cert_file, &a.proxy_client_key_file) {
        (Some(c), Some(k)) => Some((read(c)?, read(k)?)),
        (None, None) => None,
        _ => return Err("--proxy-client-cert-file and --proxy-client-key-file go together".into()),
    };
    let auth_info = kapi_aggregator::authinfo::Info {
        client_ca: x509_cas
            .iter()
            .map(|pem| format!("{}\n", pem.trim_end()))
            .collect(),
        request_header,
    };
    let options = kapi::Options {
        config,
        authenticator,
        bootstrap_tokens: a.enable_bootstrap_token_auth,
        authorization_modes: authorizers.modes,
        authorization_webhook: authorizers.webhook,
        authorization_abac: authorizers.abac,
        authorization_config: authorizers.config,
        admission,
        service_accounts: issuer,
        aggregator: kapi_aggregator::Settings {
            proxy_client,
            auth_info: Some(auth_info),
            reject_forwarding_redirect: a.aggregator_reject_forwarding_redirect,
            routing: if a.enable_aggregator_routing {
                Routing::Endpoints
            } else {
                Routing::ClusterIp
            },
            ..Default::default()
        },
        chain,
        storage,
        resources: kapi_resources::registry::Settings {
            event_ttl: a.event_ttl,
        },
        encryption,
        kubelet: Arc::new(kubelet_connector(&a, &egress)?),
        allow_privileged: a.allow_privileged,
        storage_readiness: a
            .feature_gates
            .enabled("WatchCacheInitializationPostStartHook")
            .then_some(a.storage_initialization_timeout),
        egress,
    };
    let built = kapi::build(options, slot);
    let server = built.server.clone();
    built
        .start(&controllers)
        .await
        .map_err(|e| format!("bootstrap: {e}"))?;

    let kubeconfig = a.data_dir.join("admin.kubeconfig");
    let url = format!(
        "https://{}",
        SocketAddr::new(
            advertise
                .parse()
                .map_err(|e| format!("--advertise-address: {e}"))?,
            port
        )
    );
    tls::write_kubeconfig(
        &kubeconfig,
        &url,
        &pki.ca_cert_pem,
        &pki.admin_cert_pem,
        &pki.admin_key_pem,
    )
    .map_err(|e| format!("writing {}: {e}", kubeconfig.display()))?;
    let kubeconfig_abs = std::fs::canonicalize(&kubeconfig).unwrap_or(kubeconfig);
    eprintln!(
        "kapi {} serving on {url} (storage: {}); ready in {} ms\nadmin kubeconfig: {}",
        kapi_server::health::GIT_VERSION,
        server.slot.target(),
        started.elapsed().as_millis(),
        kubeconfig_abs.display()
    );
    let app = built.router()?;
    let lifecycle = built
        .chain
        .lifecycle
        .clone()
        .expect("kapi serve has a lifecycle");
    let closes = crate::serving::listener_closes(lifecycle, TerminationSettings::of(&a));
    let settings = crate::serving::connection_settings(&a);
    tls::serve_tls_with(listener, tls_configs, app, closes, settings)
        .await
        .map_err(|e| format!("serving: {e}"))?;
    tracing::info!("[graceful-termination] all connections closed; exiting");
    if let Some(traces) = traces {
        // The last batch of spans goes out before the process ends.
        let done = tokio::task::spawn_blocking(move || traces.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!("failed to shut down tracer provider: {e}");
        }
    }
    Ok(())
}

/// `--tracing-config-file`: the trace pipeline it describes (a bad file, or
/// the APIServerTracing gate off, stops the start with upstream's message).
fn trace_pipeline(a: &ServeArgs) -> Result<Option<kapi::otel::Pipeline>, String> {
    let Some(path) = &a.tracing_config_file else {
        return Ok(None);
    };
    let config = kapi::otel::read(path, a.feature_gates.enabled("APIServerTracing"))?;
    let pipeline = kapi::otel::Pipeline::start(&config, &kapi::otel::apiserver_id())?;
    tracing::info!(
        endpoint = config.endpoint.as_deref().unwrap_or("localhost:4317"),
        sampling_rate_per_million = config.sampling_rate_per_million.unwrap_or(0),
        "tracing requests (APIServerTracing)"
    );
    Ok(Some(pipeline))
}

/// The service account token issuer: an external signer
/// (`--service-account-signing-endpoint`, whose longest token lifetime becomes
/// the default `--service-account-max-token-expiration` and caps it), or keys
/// of ours.
async fn service_account_issuer(a: &ServeArgs) -> Result<Issuer, String> {
    let max_given = a
        .service_account_max_token_expiration
        .map(|d| d.as_secs() as i64);
    if let Some(endpoint) = &a.service_account_signing_endpoint {
        let setup = |e: String| format!("while setting up external-jwt-signer: {e}");
        let signer = kapi_auth::authn::external_signer::ExternalSigner::connect(endpoint)
            .await
            .map_err(setup)?;
        let max = signer.max_token_expiration().await.map_err(setup)?;
        if max < MIN_TOKEN_AGE {
            return Err(format!("max token life supported by external-jwt-signer ({max}s) is less than acceptable (min {MIN_TOKEN_AGE}s)"));
        }
        if let Some(given) = max_given.filter(|g| *g > max) {
            return Err(format!("service-account-max-token-expiration cannot be set longer than the token expiration supported by service-account-signing-endpoint: {} > {}",
                go_secs(given), go_secs(max)));
        }
        let issuer = Issuer::external(
            signer,
            a.service_account_issuer.clone(),
            a.api_audiences.clone(),
            a.service_account_legacy_tokens,
            max,
        );
        return Ok(issuer
            .with_lookup(a.service_account_lookup)
            .with_jwks_uri(a.service_account_jwks_uri.clone())
            .with_expiration(
                Some(max_given.unwrap_or(max)),
                a.service_account_extend_token_expiration,
            ));
    }
    let signing = match &a.service_account_signing_key_file {
        Some(p) => read(p)?,
        None => Issuer::load_or_generate_key(&a.data_dir.join("sa.key"))?,
    };
    let verify = a
        .service_account_key_file
        .iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()?;
    Issuer::new(
        &signing,
        &verify,
        a.service_account_issuer.clone(),
        a.api_audiences.clone(),
        a.service_account_legacy_tokens,
    )
    .map_err(|e| format!("service account keys: {e}"))
    .map(|i| {
        i.with_lookup(a.service_account_lookup)
            .with_jwks_uri(a.service_account_jwks_uri.clone())
            .with_expiration(
                a.service_account_max_token_expiration
                    .map(|d| d.as_secs() as i64),
                a.service_account_extend_token_expiration,
            )
    })
}

/// `secs` as Go prints a `time.Duration`.
fn go_secs(secs: i64) -> String {
    crate::flags::value::format_duration(i128::from(secs) * 1_000_000_000)
}

/// The shortest token lifetime an external signer must support (upstream's
/// `MinTokenAgeSec`).
const MIN_TOKEN_AGE: i64 = 600;

/// The kubelet connection the `--kubelet-*` flags describe, dialled (as
/// the proxies to pods, services and nodes) through the `cluster` selection.
fn kubelet_connector(a: &ServeArgs, egress: &Egress) -> Result<kapi_kubelet::Connector, String> {
    let config = kapi_kubelet::KubeletConfig {
        client_certificate: a.kubelet_client_certificate.clone(),
        client_key: a.kubelet_client_key.clone(),
        certificate_authority: a.kubelet_certificate_authority.clone(),
        preferred_address_types: a.kubelet_preferred_address_types.clone(),
        timeout: a.kubelet_timeout,
        max_bytes_per_sec: a.max_connection_bytes_per_sec,
        dialer: egress.cluster(),
    };
    kapi_kubelet::Connector::new(config).map_err(|e| format!("kubelet client: {e}"))
}
