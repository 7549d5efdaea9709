//! kapi-admission — admission: the chain of plugins every write passes after authorization, as
//! upstream's `k8s.io/apiserver/pkg/admission`. A request's [`Attributes`]
//! (operation, object, old object, resource, namespace, name, user, dry-run,
//! options) go through every enabled plugin's mutating phase
//! ([`Plugin::admit`]) in upstream's order, then through every plugin's
//! validating phase ([`Plugin::validate`]) in the same order. The first error
//! stops the request; its Status is the client's answer.
//!
//! Where the chain runs (the handlers build one [`RequestAdmission`] per
//! request, `request.rs`):
//! - create: mutating phase in the handler, before the store; validating phase
//!   inside the store, after the strategy validated the object
//!   (`Store::create_admitted`);
//! - update, patch, apply: both phases inside the store's compare-and-swap
//!   loop (`Store::update_admitted`), on the object the update or patch made of
//!   the current one, with the current one as the old object;
//! - delete and each item of a delete-collection: both phases with the object
//!   being deleted as the old object, inside the store's delete loop
//!   (`Store::delete_admitted`), again on a newer object after a conflict;
//! - subresources: `status`, `finalize`, `approval`, `ephemeralcontainers` as
//!   updates of the full object (subresource set); `scale` as an update on
//!   `autoscaling/v1` Scale objects (`handlers/scale.rs`); `pods/eviction`,
//!   `pods/binding` (and `bindings`), `serviceaccounts/token` as creates of
//!   their own kinds named as the parent object
//!   ([`RequestAdmission::subresource_create`], then the validating phase
//!   where upstream's REST storage calls it). [`Attributes::kind`] is the
//!   subresource's kind.
//!
//! Plugins with side effects (ResourceQuota charging usage) skip them on
//! dry-run ([`Attributes::dry_run`]).
//!
//! Where the plugins are: `kapi-admission-plugins` (the built-in plugins,
//! admission webhooks and ValidatingAdmissionPolicy, by upstream name, and
//! the chain the flags select). This crate is the interface between them and
//! the handlers: [`Plugin`], [`Chain`] and the per-request
//! [`RequestAdmission`], so a change to a plugin does not rebuild the server.

mod chain;
mod request;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, GroupResource};
use serde_json::Value;

use kapi_http::user::UserInfo;

pub use chain::Chain;
pub use request::{RequestAdmission, Target};

/// The operation a request performs (upstream `admission.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The upstream spelling (`CREATE`, ...), as AdmissionReview carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The `kind` of the options object of this operation (`meta.k8s.io/v1`).
    pub fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
            Operation::Connect => "",
        }
    }
}

/// Warnings plugins add (PodSecurity `warn`); the handler sends them as
/// `Warning: 299 - "..."` headers.
#[derive(Debug, Default, Clone)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn add(&self, text: impl Into<String>) {
        let text = text.into();
        let mut w = self.0.lock().expect("warnings lock");
        if !w.contains(&text) {
            w.push(text);
        }
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("warnings lock"))
    }
}

/// What admission knows of one request (upstream `admission.Attributes`):
/// what each call on the request's objects has of its own, and the request's
/// resource and user, shared by every call (a store write calls the chain
/// twice, a delete-collection once per item) and read through `Deref`
/// (`a.resource`, `a.user`).
#[derive(Debug, Clone)]
pub struct Attributes {
    pub operation: Operation,
    /// `""` for a create whose name is generated (`metadata.generateName`).
    pub name: String,
    /// The request's `CreateOptions` / `UpdateOptions` / `PatchOptions` /
    /// `DeleteOptions`, as a `meta.k8s.io/v1` JSON object.
    pub options: Arc<Value>,
    /// The object to write: `None` for deletes (and connects).
    pub object: Option<Value>,
    /// The current object: `None` for creates.
    pub old_object: Option<Value>,
    pub request: Arc<RequestAttributes>,
}

/// The part of [`Attributes`] every admission call of one request shares.
#[derive(Debug)]
pub struct RequestAttributes {
    /// The resource's group and version as served on this URL.
    pub group: String,
    pub version: String,
    /// The kind of the objects this URL takes: the resource's own, or the
    /// subresource's (`autoscaling/v1 Scale`, `policy/v1 Eviction`, ...).
    pub kind_group: String,
    pub kind_version: String,
    pub kind: String,
    pub resource: String,
    /// `""` for the main resource; `status`, `scale`, ... otherwise.
    pub subresource: String,
    /// `""` for cluster-scoped resources.
    pub namespace: String,
    pub user: Option<UserInfo>,
    pub dry_run: bool,
    pub warnings: Warnings,
    /// The request's audit event: plugins' audit annotations go there.
    pub audit: Option<kapi_auth::audit::AuditHandle>,
}

impl std::ops::Deref for Attributes {
    type Target = RequestAttributes;

    fn deref(&self) -> &RequestAttributes {
        &self.request
    }
}

impl Attributes {
    /// Add an audit annotation (upstream `AddAnnotation`; see
    /// [`kapi_auth::audit::AuditHandle::annotate_admission`]).
    pub fn annotate(&self, key: &str, value: &str) {
        if let Some(a) = &self.audit {
            a.annotate_admission(key, value);
        }
    }
}

impl Attributes {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.resource)
    }

    /// Whether this is the main resource of `group`/`resource`.
    pub fn is(&self, group: &str, resource: &str) -> bool {
        self.group == group && self.resource == resource && self.subresource.is_empty()
    }

    /// The object's name as upstream's admission errors name it: the name, or
    /// the `generateName` prefix when it is still to be generated.
    pub fn error_name(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        let meta = self.object.as_ref().and_then(|o| o.get("metadata"));
        let get = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        get("name")
            .or_else(|| get("generateName"))
            .unwrap_or("Unknown")
            .to_owned()
    }

    /// Upstream `admission.NewForbidden`: 403 `<resource> "<name>" is forbidden: <msg>`.
    pub fn forbidden(&self, msg: impl std::fmt::Display) -> ApiError {
        ApiError::forbidden(self.group_resource(), &self.error_name(), msg)
    }
}

/// One admission plugin (upstream `admission.Interface` with
/// `MutationInterface` and/or `ValidationInterface`).
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The upstream name (`--enable-admission-plugins`).
    fn name(&self) -> &'static str;
    /// Whether the plugin looks at requests of this operation at all.
    fn handles(&self, op: Operation) -> bool;
    /// Whether the plugin may act on this request at all, from its resource:
    /// asked before either phase is started, so a plugin for other resources
    /// costs no call (each phase is a boxed future). A plugin that answers
    /// `false` does nothing for the request in either phase. `true` unless the
    /// plugin narrows it.
    fn concerns(&self, _a: &Attributes) -> bool {
        true
    }
    /// The mutating phase; may change `a.object`.
    async fn admit(&self, _a: &mut Attributes) -> Result<(), ApiError> {
        Ok(())
    }
    /// The validating phase; sees the finished object.
    async fn validate(&self, _a: &Attributes) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether [`Plugin::admit`] does anything (saves copying objects).
    fn mutating(&self) -> bool;
    /// Whether [`Plugin::validate`] does anything.
    fn validating(&self) -> bool;
}
