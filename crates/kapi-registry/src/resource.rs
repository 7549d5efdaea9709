//! What a resource is to the server: its names, scope, the verbs its storage
//! supports, its subresources, and the strategy holding its policy.
//!
//! `ResourceDef` is the one declaration the handler installer and discovery both
//! read, so routes and discovery cannot disagree.

use std::borrow::Cow;
use std::sync::Arc;

use kapi_machinery::status::ApiError;
use serde_json::Value;

use crate::codec::Origin;
use crate::strategy::Strategy;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Create,
    Delete,
    DeleteCollection,
    Get,
    List,
    Patch,
    Update,
    Watch,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Patch => "patch",
            Verb::Update => "update",
            Verb::Watch => "watch",
        }
    }

    /// Every verb of a normal read-write resource.
    pub const ALL: &'static [Verb] = &[
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];
}

/// A subresource served under `/{name}/{sub}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subresource {
    /// `status`: get, update and patch of the status only.
    Status,
    /// `approval`: get, update and patch of `status.conditions` only
    /// (certificatesigningrequests).
    Approval,
    /// `scale`: an autoscaling/v1 Scale view of `spec.replicas`.
    Scale {
        /// Where the replicas live, as JSON pointers (custom resources name
        /// them in their definition, hence not always static).
        spec_replicas: Cow<'static, str>,
        status_replicas: Cow<'static, str>,
        label_selector: Cow<'static, str>,
    },
    /// `finalize` (namespaces): an update that may change `spec.finalizers`.
    Finalize,
    /// `eviction` (pods): create a policy/v1 Eviction, which deletes the pod when
    /// its disruption budget allows.
    Eviction,
    /// `binding` (pods): create a v1 Binding, which assigns the pod to a node.
    Binding,
    /// `ephemeralcontainers` (pods): get, update and patch of
    /// `spec.ephemeralContainers` only.
    EphemeralContainers,
    /// `token` (serviceaccounts): create an authentication.k8s.io/v1
    /// TokenRequest, answered with a signed token for the account.
    Token,
    /// `log` (pods): the container's log, streamed from the kubelet.
    Log,
    /// `exec`, `attach`, `portforward` (pods): a stream upgrade proxied to
    /// the kubelet (`kapi-kubelet`).
    Exec,
    Attach,
    PortForward,
    /// `proxy` (pods, services, nodes): HTTP proxied to the object's
    /// address; `kind` names the options kind (`PodProxyOptions`, ...).
    Proxy {
        kind: &'static str,
    },
}

impl Subresource {
    pub fn name(&self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Approval => "approval",
            Subresource::Scale { .. } => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Eviction => "eviction",
            Subresource::Binding => "binding",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Token => "token",
            Subresource::Log => "log",
            Subresource::Exec => "exec",
            Subresource::Attach => "attach",
            Subresource::PortForward => "portforward",
            Subresource::Proxy { .. } => "proxy",
        }
    }

    pub fn verbs(&self) -> &'static [Verb] {
        match self {
            Subresource::Finalize => &[Verb::Update],
            Subresource::Eviction | Subresource::Binding | Subresource::Token => &[Verb::Create],
            Subresource::Log => &[Verb::Get],
            Subresource::Exec | Subresource::Attach | Subresource::PortForward => {
                &[Verb::Create, Verb::Get]
            }
            Subresource::Proxy { .. } => &[
                Verb::Create,
                Verb::Delete,
                Verb::Get,
                Verb::Patch,
                Verb::Update,
            ],
            _ => &[Verb::Get, Verb::Patch, Verb::Update],
        }
    }

    /// The (group, version, kind) the subresource answers with, when it is not the
    /// resource's own kind.
    pub fn response_kind(&self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            Subresource::Status
            | Subresource::Finalize
            | Subresource::Approval
            | Subresource::EphemeralContainers
            | Subresource::Log => None,
            Subresource::Exec => Some(("", "v1", "PodExecOptions")),
            Subresource::Attach => Some(("", "v1", "PodAttachOptions")),
            Subresource::PortForward => Some(("", "v1", "PodPortForwardOptions")),
            Subresource::Proxy { kind } => Some(("", "v1", kind)),
            Subresource::Scale { .. } => Some(("autoscaling", "v1", "Scale")),
            Subresource::Eviction => Some(("policy", "v1", "Eviction")),
            Subresource::Binding => Some(("", "v1", "Binding")),
            Subresource::Token => Some(("authentication.k8s.io", "v1", "TokenRequest")),
        }
    }
}

/// How the objects of a resource served at several versions (or groups) reach the
/// one representation kept in storage — upstream's conversion through the
/// internal version, with the storage version playing the internal one's part.
///
/// Every served `ResourceDef` of such a resource shares the key prefix and one
/// `Conversion`; the store converts to [`Conversion::storage_api_version`] when it
/// writes and to the served `apiVersion` when it reads, so strategies, handlers,
/// watches and tables only ever see the version the client asked for.
pub trait Conversion: Send + Sync + 'static {
    /// The `apiVersion` objects are stored at, e.g. `autoscaling/v2`.
    fn storage_api_version(&self) -> &str;

    /// `obj` (whose `apiVersion` names its version) as an object of `api_version`.
    fn convert(&self, obj: Value, api_version: &str) -> Value;

    /// What the store calls: `objs` (each naming its version; a list's items
    /// in one call) as objects of `api_version`, all or an error. Conversions
    /// that can fail (a custom resource's conversion webhook) override this;
    /// the default is [`Conversion::convert`] on each.
    fn try_convert(&self, objs: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError> {
        Ok(objs
            .into_iter()
            .map(|o| self.convert(o, api_version))
            .collect())
    }

    /// Applied to every object read from storage, at its stored version,
    /// before any conversion (custom resources: defaults of the stored
    /// version's schema, upstream's defaulting on read).
    fn on_read(&self, _obj: &mut Value) {}
}

/// One served resource at one group-version.
#[derive(Clone)]
pub struct ResourceDef {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// Plural, lower case: `configmaps`.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub verbs: Vec<Verb>,
    pub subresources: Vec<Subresource>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub strategy: Arc<dyn Strategy>,
    /// The storage key prefix, e.g. `/configmaps` (objects live at
    /// `{prefix}/{namespace}/{name}` or `{prefix}/{name}`).
    pub key_prefix: String,
    /// Set when the objects are stored at another version than this one.
    pub conversion: Option<Arc<dyn Conversion>>,
    /// Whether the kind may be served as protobuf: true for built-in kinds
    /// (those with a protobuf message), false for custom resources, which
    /// upstream never serves as protobuf (JSON instead, or 406).
    pub protobuf: bool,
    /// Which upstream server the kind belongs to, which decides how storage
    /// encodes its objects (`codec`): built-in kinds in the server's media
    /// type, the rest as JSON.
    pub origin: Origin,
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResourceDef({})", self.gvr())
    }
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            return self.version.clone();
        }
        // Joined by hand (`join`): this runs several times per request.
        join(&[&self.group, "/", &self.version])
    }

    pub fn gvr(&self) -> String {
        format!("{}/{}", self.api_version(), self.resource)
    }

    /// Whether objects get kube-apiserver's core `ObjectMeta` checks
    /// ([`crate::Strategy::core_object_meta`]): built-in kinds of its own
    /// server only.
    pub fn core_object_meta(&self) -> bool {
        self.origin == Origin::Builtin && self.strategy.core_object_meta()
    }

    /// Whether the items of this resource's `<Kind>List` carry their own
    /// `kind` and `apiVersion`. Upstream writes a built-in kind's list as a
    /// typed list, whose items have neither (only the list has them); a
    /// custom resource's list is unstructured and each item keeps both.
    pub fn list_items_carry_type(&self) -> bool {
        self.origin == Origin::Custom
    }

    /// `items` as this resource's `<Kind>List` holds them
    /// ([`Self::list_items_carry_type`]).
    pub fn as_list_items(&self, items: &mut [Value]) {
        if self.list_items_carry_type() {
            return;
        }
        items.iter_mut().for_each(crate::meta::remove_type_meta);
    }

    pub fn group_resource(&self) -> kapi_machinery::status::GroupResource {
        kapi_machinery::status::GroupResource::new(&self.group, &self.resource)
    }

    pub fn group_kind(&self) -> kapi_machinery::status::GroupKind {
        kapi_machinery::status::GroupKind::new(&self.group, &self.kind)
    }

    /// `obj` as this resource serves it (a no-op without a conversion).
    pub fn to_served(&self, obj: Value) -> Result<Value, ApiError> {
        let mut all = self.to_served_all(vec![obj])?;
        all.pop()
            .ok_or_else(|| ApiError::internal("conversion returned no object"))
    }

    /// Objects read from storage as this resource serves them, converted in
    /// one batch (a list, or the objects of one watch event).
    pub fn to_served_all(&self, mut objs: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        if let Some(c) = &self.conversion {
            for obj in &mut objs {
                c.on_read(obj);
            }
        }
        self.convert_all(objs, &self.api_version())
    }

    /// Whether [`ResourceDef::to_storage`] would leave `obj` as it is: no
    /// conversion, or `obj` already at the storage version.
    pub fn is_at_storage_version(&self, obj: &Value) -> bool {
        self.conversion
            .as_ref()
            .is_none_or(|c| is_at(obj, c.storage_api_version()))
    }

    /// `obj` as storage keeps it (a no-op without a conversion).
    pub fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        let Some(c) = &self.conversion else {
            return Ok(obj);
        };
        let target = c.storage_api_version().to_owned();
        let mut all = self.convert_all(vec![obj], &target)?;
        all.pop()
            .ok_or_else(|| ApiError::internal("conversion returned no object"))
    }

    /// Only the objects not at `api_version` go to the conversion, as upstream
    /// sends only those to a webhook.
    fn convert_all(&self, objs: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError> {
        let Some(c) = &self.conversion else {
            return Ok(objs);
        };
        let at = |o: &Value| is_at(o, api_version);
        if objs.iter().all(at) {
            return Ok(objs);
        }
        let (mut out, mut todo, mut slots) =
            (Vec::with_capacity(objs.len()), Vec::new(), Vec::new());
        for (i, o) in objs.into_iter().enumerate() {
            if at(&o) {
                out.push(o);
            } else {
                slots.push(i);
                out.push(Value::Null);
                todo.push(o);
            }
        }
        let converted = c.try_convert(todo, api_version)?;
        if converted.len() != slots.len() {
            return Err(ApiError::internal(format!(
                "conversion to {api_version} returned {} objects, expected {}",
                converted.len(),
                slots.len()
            )));
        }
        for (i, o) in slots.into_iter().zip(converted) {
            out[i] = o;
        }
        Ok(out)
    }

    pub fn supports(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }

    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name() == name)
    }

    pub fn has_status(&self) -> bool {
        self.subresource("status").is_some()
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => join(&[&self.key_prefix, "/", ns, "/", name]),
            _ => join(&[&self.key_prefix, "/", name]),
        }
    }

    /// The storage prefix of a list (all namespaces when `namespace` is `None`).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        // Joined by hand: `format!` took 800 instructions, and admission
        // lists a few prefixes on every write.
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => join(&[&self.key_prefix, "/", ns, "/"]),
            None => join(&[&self.key_prefix, "/"]),
        }
    }
}

/// `parts` joined into one string allocated once.
fn join(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// Whether `obj` names `api_version` as its `apiVersion`.
fn is_at(obj: &Value, api_version: &str) -> bool {
    obj.get("apiVersion").and_then(Value::as_str) == Some(api_version)
}
