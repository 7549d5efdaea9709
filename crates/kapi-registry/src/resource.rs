//! What a resource is to the server: its names, scope, the verbs its storage
//! supports, its subresources, and the strategy holding its policy.
//!
//! `ResourceDef` is the one declaration the handler installer and discovery both
//! read, so routes and discovery cannot disagree.

use std::sync::Arc;

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
        /// Where the replicas live, as JSON pointers.
        spec_replicas: &'static str,
        status_replicas: &'static str,
        label_selector: &'static str,
    },
}

impl Subresource {
    pub fn name(&self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Approval => "approval",
            Subresource::Scale { .. } => "scale",
        }
    }

    pub fn verbs(&self) -> &'static [Verb] {
        &[Verb::Get, Verb::Patch, Verb::Update]
    }
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
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResourceDef({})", self.gvr())
    }
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn gvr(&self) -> String {
        format!("{}/{}", self.api_version(), self.resource)
    }

    pub fn group_resource(&self) -> kapi_machinery::status::GroupResource {
        kapi_machinery::status::GroupResource::new(&self.group, &self.resource)
    }

    pub fn group_kind(&self) -> kapi_machinery::status::GroupKind {
        kapi_machinery::status::GroupKind::new(&self.group, &self.kind)
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
            Some(ns) if self.namespaced => format!("{}/{ns}/{name}", self.key_prefix),
            _ => format!("{}/{name}", self.key_prefix),
        }
    }

    /// The storage prefix of a list (all namespaces when `namespace` is `None`).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/", self.key_prefix),
            _ => format!("{}/", self.key_prefix),
        }
    }
}
