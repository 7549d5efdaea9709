//! Putting a server together: every part built from the parts below it, in
//! one place, from one complete [`Options`] — the storage with encryption at
//! rest when configured (below the watch cache: only the backend holds
//! ciphertext), the resource table over it, then authorization over the table, then the admission plugins
//! reading both, the aggregator in front, then the core server made of them
//! all ([`build`]); then the servers and controllers are started
//! ([`Built::start`]). `kapi serve` and the
//! end-to-end tests build servers only through [`build`], so what runs in a
//! test is what runs in production.

use std::sync::Arc;

use kapi_admission_plugins::Selection;
use kapi_aggregator::Aggregator;
use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authn::Authenticator;
use kapi_auth::authz::{self, Authorization, Authorizer, Mode};
use kapi_encryption::{EncryptedBackend, Encryption, KeyMap};
use kapi_machinery::status::ApiError;
use kapi_resources::openapi::{OpenApi, Published};
use kapi_server::health::{Check, Endpoint};
use kapi_server::{ChainOptions, RemoteApis, Server, ServerConfig, ServerParts};
use kapi_storage::slot::BackendSlot;

/// What one server is made of, as the flags say it.
pub struct Options {
    pub config: ServerConfig,
    /// Who requests are from: certificates, front proxy, static tokens, the
    /// JWT authenticators, the token webhook, anonymous. [`build`] adds what
    /// needs the resource table (service account and bootstrap tokens).
    pub authenticator: Authenticator,
    /// `--enable-bootstrap-token-auth`.
    pub bootstrap_tokens: bool,
    /// `--authorization-mode`, in order.
    pub authorization_modes: Vec<Mode>,
    /// The webhook of `--authorization-mode=...,Webhook`.
    pub authorization_webhook: Option<Arc<authz::webhook::Webhook>>,
    /// The policies of `--authorization-mode=...,ABAC` (`--authorization-policy-file`).
    pub authorization_abac: Option<Arc<authz::abac::Abac>>,
    /// `--authorization-config` (instead of the modes and their webhook).
    pub authorization_config: Option<authz::structured::ConfigFile>,
    /// `--enable-admission-plugins` / `--disable-admission-plugins`.
    pub admission: Selection,
    /// Signs and verifies service account tokens.
    pub service_accounts: Issuer,
    /// The aggregator's front-proxy identity and what it publishes.
    pub aggregator: kapi_aggregator::Settings,
    /// The filters every request passes (limits, audit, CORS, shutdown).
    pub chain: ChainOptions,
    /// How the resource table stores and serves the built-in resources.
    pub storage: kapi_registry::apis::StorageOptions,
    /// What of the built-in resources the flags set (`--event-ttl`).
    pub resources: kapi_resources::registry::Settings,
    /// `--encryption-provider-config`, loaded ([`Encryption::load`]).
    pub encryption: Option<Arc<Encryption>>,
    /// How kubelets and proxied addresses are reached (`--kubelet-*`; its
    /// dialer is the `cluster` egress selection's).
    pub kubelet: Arc<kapi_kubelet::Connector>,
    /// `--egress-selector-config-file`: how webhooks, extension servers and
    /// (through `kubelet`) nodes are reached.
    pub egress: kapi_egress::Egress,
    /// `--allow-privileged`: pod specs may ask for privileged containers.
    pub allow_privileged: bool,
    /// With the `WatchCacheInitializationPostStartHook` gate,
    /// `--storage-initialization-timeout`: the `poststarthook/storage-readiness`
    /// check of `/healthz`, `/livez` and `/readyz` fails until every watch
    /// cache is filled or this long has passed since the server was built.
    pub storage_readiness: Option<std::time::Duration>,
}

impl Options {
    /// kube-apiserver's defaults: RBAC, the default admission plugins, an
    /// ephemeral service account key, protobuf storage.
    pub fn new(config: ServerConfig) -> Options {
        Options {
            config,
            authenticator: Authenticator::new(None, true),
            bootstrap_tokens: false,
            authorization_modes: vec![Mode::Rbac],
            authorization_webhook: None,
            authorization_abac: None,
            authorization_config: None,
            admission: Selection::default(),
            service_accounts: Issuer::ephemeral(),
            aggregator: kapi_aggregator::Settings::default(),
            chain: ChainOptions::default(),
            storage: kapi_registry::apis::StorageOptions::default(),
            resources: kapi_resources::registry::Settings::default(),
            encryption: None,
            kubelet: Arc::new(
                kapi_kubelet::Connector::new(kapi_kubelet::KubeletConfig::default())
                    .expect("the default kubelet connection reads no files"),
            ),
            allow_privileged: false,
            storage_readiness: None,
            egress: kapi_egress::Egress::default(),
        }
    }
}

/// The servers of the chain, built and not yet started.
pub struct Built {
    /// The core server (with the apiextensions server's resources in its
    /// table); its router is the whole HTTP application.
    pub server: Arc<Server>,
    /// The aggregator in front of it.
    pub aggregator: Arc<Aggregator>,
    /// The filter settings [`Built::router`] builds the chain with.
    pub chain: ChainOptions,
    /// Encryption at rest, whose file is watched once started (automatic reload).
    pub encryption: Option<Arc<Encryption>>,
    /// Who requests are from, as [`Built::router`] authenticates them.
    pub authenticator: Arc<Authenticator>,
    /// How conversion webhooks are reached.
    pub egress: kapi_egress::Egress,
}

/// The servers `options` describe, serving the built-in API over `slot`.
pub fn build(mut options: Options, slot: BackendSlot) -> Built {
    let slot = match &options.encryption {
        Some(enc) => {
            // The backends of `--etcd-servers-overrides` hold resources too:
            // their values are encrypted by the same configuration.
            for (_, backend) in &mut options.storage.overrides {
                let keys = encrypted_keys();
                *backend = Arc::new(EncryptedBackend::new(backend.clone(), enc.clone(), keys));
            }
            slot.layered({
                let enc = enc.clone();
                move |backend| Arc::new(EncryptedBackend::new(backend, enc, encrypted_keys()))
            })
        }
        None => slot,
    };
    let mut checks = encryption_checks(options.encryption.as_ref());
    let apis = kapi_server::builtin_apis(&slot, &options.resources, &options.storage);
    if let Some(timeout) = options.storage_readiness {
        checks.push(storage_readiness(&apis, timeout));
    }
    let source = match options.authorization_config {
        Some(file) => authz::Source::File(file),
        None => authz::Source::Modes(
            options.authorization_modes,
            options.authorization_webhook,
            options.authorization_abac,
        ),
    };
    let authz = Arc::new(Authorization::from_source(source, &apis));
    let mut authenticator = options.authenticator;
    if options.bootstrap_tokens {
        authenticator = authenticator.with_bootstrap_tokens(apis.clone());
    }
    let plugins = kapi_admission_plugins::Context {
        apis: apis.clone(),
        authz: authz.clone() as Arc<dyn Authorizer>,
        routing: options.aggregator.routing,
        egress: options.egress.clone(),
    };
    let admission = Arc::new(
        options
            .admission
            .build_with(&plugins, options.allow_privileged),
    );
    let openapi = Arc::new(Published::new(OpenApi::build(&apis.defs())));
    options.aggregator.egress = options.egress.clone();
    let aggregator = Arc::new(Aggregator::new(options.aggregator, apis.clone()));
    let server = Server::new(ServerParts {
        config: options.config,
        slot,
        apis,
        authz,
        service_accounts: Arc::new(options.service_accounts),
        admission,
        openapi,
        remote: Some(aggregator.clone() as Arc<dyn RemoteApis>),
        checks,
        kubelet: options.kubelet,
    });
    Built {
        server,
        aggregator,
        chain: options.chain,
        encryption: options.encryption,
        authenticator: Arc::new(authenticator),
        egress: options.egress,
    }
}

/// The keys encryption at rest applies to: those of every built-in resource
/// and of custom resources, each mapped to its resource.
fn encrypted_keys() -> KeyMap {
    let mut keys = KeyMap::default();
    let definitions = kapi_apiextensions::crd::definitions_resource();
    for def in kapi_resources::registry::builtin_resources()
        .iter()
        .chain([&definitions])
    {
        keys.resource(&def.list_prefix(None), &def.group, &def.resource);
    }
    // Custom resources, at upstream's `/<group>/<plural>/`.
    keys.tree("/");
    keys
}

/// The `kms-providers` check on `/healthz` and `/readyz`, when upstream has it.
fn encryption_checks(encryption: Option<&Arc<Encryption>>) -> Vec<Check> {
    let Some((enc, name)) = encryption.and_then(|e| Some((e.clone(), e.health_check_name()?)))
    else {
        return Vec::new();
    };
    vec![Check {
        name: name.to_owned(),
        endpoints: vec![Endpoint::Healthz, Endpoint::Readyz],
        run: Arc::new(move || {
            let enc = enc.clone();
            Box::pin(async move { enc.check().await })
        }),
    }]
}

/// Upstream's `storage-readiness` start-up hook as a check: it waits for every
/// watch cache to be filled, at most `timeout` (then it logs and gives up
/// waiting, and the check passes), and once done it stays done.
fn storage_readiness(apis: &Arc<kapi_registry::apis::Apis>, timeout: std::time::Duration) -> Check {
    let apis = apis.clone();
    let since = std::time::Instant::now();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    Check {
        name: "poststarthook/storage-readiness".into(),
        endpoints: vec![Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz],
        run: Arc::new(move || {
            use std::sync::atomic::Ordering;
            let finished = done.load(Ordering::Relaxed)
                || apis.caches_ready()
                || since.elapsed() >= timeout && {
                    tracing::warn!(
                        ?timeout,
                        "deadline exceeded while waiting for storage readiness, ignoring"
                    );
                    true
                };
            done.store(finished, Ordering::Relaxed);
            Box::pin(async move {
                if finished {
                    Ok(())
                } else {
                    Err("not finished".into())
                }
            })
        }),
    }
}

impl Built {
    /// The whole HTTP application: the filter chain the options describe in
    /// front of the servers, authenticating with [`Built::authenticator`].
    pub fn router(&self) -> Result<axum::Router, String> {
        self.server
            .router_with(self.authenticator.clone(), &self.chain)
    }

    /// Bring the servers to life once storage is ready: the objects
    /// kube-apiserver creates at start, the custom resources already defined
    /// (installed before this returns), then the in-process controllers
    /// `controllers` selects and the aggregator's.
    pub async fn start(&self, controllers: &kapi_controllers::Options) -> Result<(), ApiError> {
        let server = &self.server;
        server.bootstrap().await?;
        let apiextensions = kapi_apiextensions_server::Context {
            apis: server.apis.clone(),
            slot: server.slot.clone(),
            schema: server.schema.clone(),
            openapi: server.openapi.clone(),
            routing: self.aggregator.routing(),
            egress: self.egress.clone(),
        };
        kapi_apiextensions_server::start(&Arc::new(apiextensions)).await;
        let cx = Arc::new(kapi_controllers::Context {
            apis: server.apis.clone(),
            slot: server.slot.clone(),
            service_accounts: server.service_accounts.clone(),
            advertise_address: server.config.advertise_address.clone(),
            port: server.config.port,
            kubernetes_service_ip: server.config.service_cidr.nth(1).to_string(),
            kubernetes_service_node_port: server.config.kubernetes_service_node_port,
        });
        kapi_controllers::bootstrap(&cx).await?;
        server.repair_services().await?;
        kapi_controllers::spawn(&cx, controllers);
        kapi_aggregator::spawn(&self.aggregator);
        if let Some(encryption) = &self.encryption {
            encryption.spawn_reload();
        }
        Ok(())
    }
}

/// The built-in resources `--runtime-config` turns off, as
/// `(group, version, resource)`.
pub fn runtime_config_off(
    pairs: &[(String, String)],
) -> Result<Vec<(String, String, String)>, String> {
    let defs = kapi_server::builtin_defs(&Default::default());
    let rc = kapi_resources::enablement::RuntimeConfig::parse(pairs, &defs)?;
    for key in &rc.unknown {
        tracing::warn!("--runtime-config {key}: kapi does not serve this group-version; ignored");
    }
    Ok(defs
        .iter()
        .filter(|d| !rc.enabled(d))
        .map(|d| (d.group.clone(), d.version.clone(), d.resource.clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
    use kapi_storage::Backend;

    use super::*;

    async fn run(check: &Check) -> Result<(), String> {
        (check.run)().await
    }

    /// The check fails while a watch cache is unfilled (an empty store: the
    /// caches wait for a first write), passes once they are filled, and
    /// stays passed; with a timeout already over it passes at once.
    #[tokio::test]
    async fn storage_readiness_waits_for_the_watch_caches_or_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(EmbeddedBackend::open(EmbeddedConfig::new(dir.path())).unwrap());
        let slot = BackendSlot::ready("test".into(), backend.clone());
        let apis = kapi_server::builtin_apis(
            &slot,
            &Default::default(),
            &kapi_registry::apis::StorageOptions::default(),
        );
        let waiting = storage_readiness(&apis, Duration::from_secs(3600));
        assert_eq!(waiting.name, "poststarthook/storage-readiness");
        assert_eq!(run(&waiting).await, Err("not finished".into()));
        let timed_out = storage_readiness(&apis, Duration::ZERO);
        assert_eq!(run(&timed_out).await, Ok(()));

        backend
            .create("/registry/configmaps/default/a", "{}".into())
            .await
            .unwrap();
        let mut ready = false;
        for _ in 0..100 {
            if run(&waiting).await.is_ok() {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ready, "the caches filled after the first write");
        assert!(apis.caches_ready());
        assert_eq!(run(&waiting).await, Ok(()));
    }
}
