//! The core server as a value: [`ServerConfig`] (where it is reached),
//! [`ServerParts`] (what it is made of, each part built from those below it),
//! and [`Server`], made once from them and not changed afterwards; plus the
//! resource table of the built-in API ([`builtin_apis`]) and the schema
//! helpers the handlers use for unknown fields.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use kapi_auth::authn::serviceaccount::Issuer;
use kapi_auth::authz::Authorization;
use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_machinery::status::ApiError;
use kapi_registry::apis;
use kapi_registry::ResourceDef;
use kapi_resources::openapi::{OpenApi, Published};
use kapi_storage::slot::BackendSlot;
use serde_json::Value;

use crate::remote::RemoteApis;
use crate::services::{Cidr, ServiceAllocator};

/// Where this server is reached, what it allocates from, and the settings of
/// its handlers (each named after its kube-apiserver flag).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address clients reach us at (discovery's serverAddressByClientCIDRs).
    pub advertise_address: String,
    pub port: u16,
    pub service_cidr: Cidr,
    /// `--service-node-port-range`, inclusive.
    pub node_ports: (u16, u16),
    /// `--kubernetes-service-node-port`: the `kubernetes` Service is of type
    /// NodePort on this port (0: ClusterIP).
    pub kubernetes_service_node_port: u16,
    /// `--min-request-timeout`: a watch without `timeoutSeconds` lasts a
    /// random time between this and twice this.
    pub min_request_timeout: Duration,
    /// `--external-hostname` with the port: the host in externally visible
    /// URLs (the issuer discovery document's key set); the advertise address
    /// when `None`.
    pub external_address: Option<String>,
    /// `--etcd-healthcheck-timeout` (the `etcd` check of `/healthz`, `/livez`,
    /// `/readyz`) and `--etcd-readycheck-timeout` (`/readyz`'s `etcd-readiness`).
    pub etcd_healthcheck_timeout: Duration,
    pub etcd_readycheck_timeout: Duration,
    /// `--delete-collection-workers`: deletes a DELETE of a collection runs at once.
    pub delete_collection_workers: usize,
    /// Serve aggregated discovery `v2beta1` too (the
    /// `AggregatedDiscoveryRemoveBetaType` feature gate off).
    pub discovery_v2beta1: bool,
    /// Watches may ask for `sendInitialEvents` (the `WatchList` feature gate).
    pub watch_list: bool,
    /// `--emulated-version`: the kube minor emulated and the minimum
    /// compatibility minor (`/version` reports both).
    pub emulation: (u32, u32),
}

impl ServerConfig {
    /// A server reached at `advertise_address` (`host:port`) with
    /// kube-apiserver's defaults for the rest.
    pub fn new(advertise_address: String, port: u16, service_cidr: Cidr) -> ServerConfig {
        ServerConfig {
            advertise_address,
            port,
            service_cidr,
            node_ports: crate::services::DEFAULT_NODE_PORTS,
            kubernetes_service_node_port: 0,
            min_request_timeout: Duration::from_secs(1800),
            external_address: None,
            etcd_healthcheck_timeout: Duration::from_secs(2),
            etcd_readycheck_timeout: Duration::from_secs(2),
            delete_collection_workers: 1,
            discovery_v2beta1: false,
            watch_list: false,
            emulation: (33, 32),
        }
    }

    /// The host and port of externally visible URLs.
    pub fn external_address(&self) -> &str {
        self.external_address
            .as_deref()
            .unwrap_or(&self.advertise_address)
    }
}

/// Everything a server is made of, each part built from the parts below it
/// (the resource table first, then what reads it); [`Server::new`] puts them
/// together into a server that does not change afterwards.
pub struct ServerParts {
    pub config: ServerConfig,
    pub slot: BackendSlot,
    /// The served resources ([`builtin_apis`]).
    pub apis: Arc<apis::Apis>,
    /// The `--authorization-mode` chain over `apis`.
    pub authz: Arc<Authorization>,
    /// Signs and verifies service account tokens.
    pub service_accounts: Arc<Issuer>,
    /// The admission chain every write passes.
    pub admission: Arc<kapi_admission::Chain>,
    /// The OpenAPI documents of `apis`, which the apiextensions server
    /// republishes as custom resources come and go.
    pub openapi: Arc<Published>,
    /// The group-versions served elsewhere (the aggregator in front of this
    /// server in the chain), when there is one.
    pub remote: Option<Arc<dyn RemoteApis>>,
    /// Health checks of other parts (the KMS providers'), after the built-in ones.
    pub checks: Vec<crate::health::Check>,
    /// The way to kubelets and proxied addresses (`--kubelet-*`).
    pub kubelet: Arc<kapi_kubelet::Connector>,
}

/// Every built-in resource declaration, as `settings` make them: those
/// `kapi-resources` declares and CustomResourceDefinitions.
pub fn builtin_defs(settings: &kapi_resources::registry::Settings) -> Vec<ResourceDef> {
    let mut defs = kapi_resources::registry::builtin_resources_with(settings);
    defs.push(kapi_apiextensions::crd::definitions_resource());
    defs
}

/// The resource table of the built-in API ([`builtin_defs`]) over `slot`,
/// stored as `storage` says (the storage flags and the resources
/// `--runtime-config` turns off), with its watch cache, objects read and
/// written by the storage codec `storage` names the media type of (older
/// storage versions brought to 1.33's on read); custom resources are
/// installed into it as their definitions come.
pub fn builtin_apis(
    slot: &BackendSlot,
    settings: &kapi_resources::registry::Settings,
    storage: &apis::StorageOptions,
) -> Arc<apis::Apis> {
    let defs = builtin_defs(settings);
    let backend: Arc<dyn kapi_storage::Backend> = Arc::new(slot.clone());
    let schema: Arc<dyn SchemaNav> = kapi_resources::patchmeta::BuiltinSchema::shared();
    let root_of = |d: &ResourceDef| {
        kapi_resources::patchmeta::root_type(&d.group, &d.version, &d.kind)
            .unwrap_or(TypeRef::UNKNOWN)
    };
    let storage = apis::StorageOptions {
        codec: kapi_registry::StorageCodec::new(storage.codec.media_type())
            .with_on_read(kapi_resources::storage_versions::on_read()),
        ..storage.clone()
    };
    Arc::new(apis::Apis::with_options(
        defs,
        backend,
        schema,
        root_of,
        std::iter::empty(),
        &storage,
    ))
}

pub struct Server {
    pub config: ServerConfig,
    pub apis: Arc<apis::Apis>,
    pub slot: BackendSlot,
    pub schema: Arc<dyn SchemaNav>,
    /// The OpenAPI documents, republished when custom resources come or go
    /// (by the apiextensions server).
    pub openapi: Arc<Published>,
    /// The `--authorization-mode` chain every request and access review asks,
    /// with RBAC's view (escalation checks use it in every mode).
    pub authz: Arc<Authorization>,
    /// Signs and verifies service account tokens.
    pub service_accounts: Arc<Issuer>,
    /// Services' ClusterIPs and node ports.
    pub(crate) services: Arc<ServiceAllocator>,
    /// The group-versions served elsewhere (`RemoteApis`).
    pub remote: Option<Arc<dyn RemoteApis>>,
    /// The admission chain.
    pub admission: Arc<kapi_admission::Chain>,
    /// Health checks beyond the built-in ones (`health.rs`).
    pub checks: Vec<crate::health::Check>,
    /// The connect subresources' way to kubelets and proxied addresses.
    pub kubelet: Arc<kapi_kubelet::Connector>,
}

impl Server {
    /// The server made of `parts`.
    pub fn new(parts: ServerParts) -> Arc<Server> {
        let backend: Arc<dyn kapi_storage::Backend> = Arc::new(parts.slot.clone());
        let services = Arc::new(ServiceAllocator::new(
            backend,
            parts.config.service_cidr,
            parts.config.node_ports,
        ));
        parts.apis.set_hooks("", "v1", "services", services.clone());
        Arc::new(Server {
            config: parts.config,
            schema: kapi_resources::patchmeta::BuiltinSchema::shared(),
            openapi: parts.openapi,
            apis: parts.apis,
            slot: parts.slot,
            authz: parts.authz,
            service_accounts: parts.service_accounts,
            services,
            remote: parts.remote,
            admission: parts.admission,
            checks: parts.checks,
            kubelet: parts.kubelet,
        })
    }

    /// Record in the service allocations what the existing services hold
    /// (the `kubernetes` Service too, so run it once that exists), then keep
    /// repairing them in the background, as upstream's repair controllers.
    pub async fn repair_services(&self) -> Result<(), ApiError> {
        let services = self
            .apis
            .lookup("", "v1", "services")
            .expect("services served");
        let existing = services
            .store
            .list(None, &kapi_registry::store::options::ListOptions::default())
            .await?;
        self.services.repair(&existing.items).await?;
        self.services.spawn_repair(services.store.clone());
        Ok(())
    }

    /// The OpenAPI documents of what is served now.
    pub fn openapi(&self) -> OpenApi {
        self.openapi.current()
    }

    /// The schema type of a resource's objects (for patches).
    pub fn schema_root(&self, def: &ResourceDef) -> TypeRef {
        kapi_resources::patchmeta::root_type(&def.group, &def.version, &def.kind)
            .unwrap_or(TypeRef::UNKNOWN)
    }

    /// Fields of `obj` its schema does not know, as dotted paths.
    pub fn unknown_fields(&self, def: &ResourceDef, obj: &Value) -> Vec<String> {
        match def.strategy.unknown_fields(obj) {
            Some(fields) => fields,
            None => self.schema_unknown_fields(def, obj),
        }
    }

    /// [`Server::unknown_fields`] from the built-in schema's walk, the one
    /// [`Server::prune_unknown`] takes (for a strategy without its own list).
    pub fn schema_unknown_fields(&self, def: &ResourceDef, obj: &Value) -> Vec<String> {
        let root = self.schema_root(def);
        let mut out = Vec::new();
        if !root.is_unknown() {
            collect_unknown(
                self.schema.as_ref(),
                &root,
                obj,
                &mut String::new(),
                &mut out,
            );
        }
        out
    }

    /// Drop the fields of `obj` its schema does not know, as upstream's decoding
    /// into typed objects does (under `fieldValidation` Warn and Ignore).
    pub fn prune_unknown(&self, def: &ResourceDef, obj: &mut Value) {
        let root = self.schema_root(def);
        if !root.is_unknown() {
            prune_unknown(self.schema.as_ref(), &root, obj);
        }
    }

    /// Create what kube-apiserver creates at start (namespaces, the
    /// `kubernetes` Service, system priority classes, the flow control and RBAC
    /// bootstrap objects); call once storage is ready.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        crate::bootstrap::run(&self.apis).await
    }
}

/// Walk `obj` along its schema, noting fields the schema does not have.
fn prune_unknown(schema: &dyn SchemaNav, ty: &TypeRef, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if !schema.is_struct(ty) {
        return;
    }
    map.retain(|k, _| schema.field(ty, k).is_some());
    for (k, v) in map.iter_mut() {
        let Some(info) = schema.field(ty, k) else {
            continue;
        };
        if info.elem.is_unknown() {
            continue;
        }
        match v {
            Value::Array(items) => {
                for item in items {
                    prune_unknown(schema, &info.elem, item);
                }
            }
            Value::Object(_) => prune_unknown(schema, &info.elem, v),
            _ => {}
        }
    }
}

fn collect_unknown(
    schema: &dyn SchemaNav,
    ty: &TypeRef,
    obj: &Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let Some(map) = obj.as_object() else {
        return;
    };
    if !schema.is_struct(ty) {
        return;
    }
    for (k, v) in map {
        // `path` grows by this key and is cut back after: one buffer for the
        // whole walk, a string only for what is reported.
        let at = path.len();
        if at > 0 {
            path.push('.');
        }
        path.push_str(k);
        match schema.field(ty, k) {
            None => out.push(path.clone()),
            Some(info) if info.elem.is_unknown() => {}
            Some(info) => match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let here = path.len();
                        let _ = write!(path, "[{i}]");
                        collect_unknown(schema, &info.elem, item, path, out);
                        path.truncate(here);
                    }
                }
                Value::Object(_) => collect_unknown(schema, &info.elem, v, path, out),
                _ => {}
            },
        }
        path.truncate(at);
    }
}
