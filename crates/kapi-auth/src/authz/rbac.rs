//! The RBAC authorizer (upstream `plugin/pkg/auth/authorizer/rbac`): a user
//! may do what some rule of a role bound to them allows — ClusterRoleBindings
//! everywhere, RoleBindings in their namespace (to a Role of that namespace or
//! a ClusterRole).
//!
//! The four RBAC resources are read from the watch cache, never the backend,
//! and compiled into a [`Policy`] that is kept until the cache holds other
//! objects (detected by count and highest `mod_revision` per resource, which
//! any write changes; not even looked at while the cache's revision stands
//! still). One exception keeps "grant, then use" deterministic: a
//! request no rule allows is checked once more against a policy read at the
//! backend's current revision before it is refused (the cache may be one event
//! behind the write that granted it). Revocation is, as upstream, eventually
//! consistent.
//!
//! Subject matching is upstream's `appliesToUser`: User by name, Group by
//! membership, ServiceAccount by `system:serviceaccount:<ns>:<name>` (the
//! binding's namespace when the subject has none).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kapi_registry::store::options::ListOptions;
use kapi_resources::rbac::rules;
use serde_json::{json, Value};

use super::{Attributes, Authorizer, Decision, RuleSet};
use kapi_http::user::UserInfo;
use kapi_registry::apis::{Apis, Entry};

const GROUP: &str = "rbac.authorization.k8s.io";
const RESOURCES: [&str; 4] = [
    "clusterroles",
    "roles",
    "clusterrolebindings",
    "rolebindings",
];

/// One subject of a binding.
#[derive(Debug, Clone)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone)]
struct Binding {
    name: String,
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

/// The RBAC objects, compiled for lookups.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Vec<Value>>,
    roles: HashMap<(String, String), Vec<Value>>,
    cluster_bindings: Vec<Binding>,
    bindings: HashMap<String, Vec<Binding>>,
}

fn s(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn rules_of(obj: &Value) -> Vec<Value> {
    obj.get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn binding(obj: &Value) -> Binding {
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|sub| Subject {
            kind: s(sub, "/kind"),
            name: s(sub, "/name"),
            namespace: s(sub, "/namespace"),
        })
        .collect();
    Binding {
        name: s(obj, "/metadata/name"),
        namespace: s(obj, "/metadata/namespace"),
        role_kind: s(obj, "/roleRef/kind"),
        role_name: s(obj, "/roleRef/name"),
        subjects,
    }
}

/// Upstream `appliesToUser`.
fn applies_to(user: &UserInfo, sub: &Subject, namespace: &str) -> bool {
    match sub.kind.as_str() {
        "User" => user.name == sub.name,
        "Group" => user.groups.contains(&sub.name),
        "ServiceAccount" => {
            let ns = if sub.namespace.is_empty() {
                namespace
            } else {
                &sub.namespace
            };
            !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", sub.name)
        }
        _ => false,
    }
}

fn describe_subject(sub: &Subject, binding_ns: &str) -> String {
    match sub.kind.as_str() {
        "ServiceAccount" => {
            let ns = if sub.namespace.is_empty() {
                binding_ns
            } else {
                &sub.namespace
            };
            format!("ServiceAccount {:?}", format!("{}/{ns}", sub.name))
        }
        kind => format!("{kind} {:?}", sub.name),
    }
}

/// Where a rule came from, for an allow's reason.
struct Source<'a> {
    binding: &'a Binding,
    subject: &'a Subject,
}

impl Source<'_> {
    fn describe(&self) -> String {
        let b = self.binding;
        let subject = describe_subject(self.subject, &b.namespace);
        if b.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {:?} of {} {:?} to {subject}",
                b.name, b.role_kind, b.role_name
            )
        } else {
            format!(
                "RoleBinding {:?} of {} {:?} to {subject}",
                format!("{}/{}", b.name, b.namespace),
                b.role_kind,
                b.role_name
            )
        }
    }
}

impl Policy {
    /// The rules a role reference names; `Err` with upstream's NotFound text.
    pub fn role_rules(&self, kind: &str, name: &str, namespace: &str) -> Result<&[Value], String> {
        let found = match kind {
            "ClusterRole" => self.cluster_roles.get(name),
            "Role" => self.roles.get(&(namespace.to_owned(), name.to_owned())),
            other => return Err(format!("unsupported role reference kind: {other:?}")),
        };
        found.map(Vec::as_slice).ok_or_else(|| {
            let res = if kind == "Role" {
                "role"
            } else {
                "clusterrole"
            };
            format!("{res}.{GROUP} {name:?} not found")
        })
    }

    /// Visit every rule bound to `user` in `namespace` (cluster bindings first),
    /// as upstream's `VisitRulesFor`; `visit` returns false to stop. Missing
    /// roles are collected as errors.
    fn visit<'a>(
        &'a self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&Source<'a>, &'a Value) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let ns_bindings = (!namespace.is_empty())
            .then(|| self.bindings.get(namespace))
            .flatten();
        let all = self
            .cluster_bindings
            .iter()
            .chain(ns_bindings.into_iter().flatten());
        for b in all {
            let Some(subject) = b
                .subjects
                .iter()
                .find(|sub| applies_to(user, sub, &b.namespace))
            else {
                continue;
            };
            let role_ns = b.namespace.as_str();
            match self.role_rules(&b.role_kind, &b.role_name, role_ns) {
                Ok(rules) => {
                    let src = Source {
                        binding: b,
                        subject,
                    };
                    for r in rules {
                        if !visit(&src, r) {
                            return errors;
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// Every rule `user` holds in `namespace` (upstream `RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<String>) {
        let mut out = Vec::new();
        let errors = self.visit(user, namespace, |_, r| {
            out.push(r.clone());
            true
        });
        (out, errors)
    }

    /// Upstream `RBACAuthorizer.Authorize` over this policy.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        let namespace = attrs.resource.as_ref().map_or("", |r| r.namespace.as_str());
        let mut reason = None;
        let errors = self.visit(&attrs.user, namespace, |src, rule| {
            if rule_allows(attrs, rule) {
                reason = Some(format!("RBAC: allowed by {}", src.describe()));
                return false;
            }
            true
        });
        match reason {
            Some(r) => Decision::allow(r),
            None if errors.is_empty() => Decision::no_opinion(""),
            None if errors.len() == 1 => Decision::no_opinion(format!("RBAC: {}", errors[0])),
            None => Decision::no_opinion(format!("RBAC: [{}]", errors.join(", "))),
        }
    }
}

/// Upstream `RuleAllows`.
pub fn rule_allows(attrs: &Attributes, rule: &Value) -> bool {
    match (&attrs.resource, &attrs.path) {
        (Some(r), _) => rules::allows_resource(
            rule,
            &attrs.verb,
            &r.group,
            &r.resource,
            &r.subresource,
            &r.name,
        ),
        (None, Some(path)) => rules::allows_non_resource(rule, &attrs.verb, path),
        (None, None) => false,
    }
}

/// What a compiled policy was built from, per resource: (objects, highest mod revision).
type Fingerprint = [(usize, kapi_storage::Revision); 4];

/// The RBAC authorizer over the watch-cached RBAC objects.
pub struct Rbac {
    entries: Vec<Arc<Entry>>,
    compiled: Mutex<Option<(Fingerprint, Arc<Policy>)>>,
    /// The cache revision the compiled policy was last confirmed at: while the
    /// cache has not moved, not even the fingerprint needs computing.
    confirmed_at: Mutex<Option<kapi_storage::Revision>>,
}

impl Rbac {
    pub fn new(apis: &Apis) -> Rbac {
        let entries = RESOURCES
            .iter()
            .filter_map(|r| apis.lookup(GROUP, "v1", r))
            .collect();
        Rbac {
            entries,
            compiled: Mutex::new(None),
            confirmed_at: Mutex::new(None),
        }
    }

    /// The current policy; `fresh` reads at the backend's current revision.
    pub async fn policy(&self, fresh: bool) -> Arc<Policy> {
        match self.load(fresh).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "RBAC objects unreadable; nothing is allowed by RBAC");
                Arc::new(Policy::default())
            }
        }
    }

    /// The revision the watch cache has reached (all RBAC prefixes share it).
    fn cache_revision(&self) -> Option<kapi_storage::Revision> {
        let e = self.entries.first()?;
        e.store.cache()?.revision(&e.def.list_prefix(None))
    }

    async fn load(&self, fresh: bool) -> Result<Arc<Policy>, kapi_machinery::status::ApiError> {
        let revision = self.cache_revision();
        if !fresh && revision.is_some() && *self.confirmed_at.lock().expect("rbac lock") == revision
        {
            if let Some((_, p)) = self.compiled.lock().expect("rbac lock").as_ref() {
                return Ok(p.clone());
            }
        }
        let opts = ListOptions {
            resource_version: (!fresh).then(|| "0".to_string()),
            ..Default::default()
        };
        let mut lists = Vec::with_capacity(4);
        let mut fingerprint: Fingerprint = [(0, 0); 4];
        for (i, e) in self.entries.iter().enumerate() {
            match e.store.list_cached(None, &opts).await? {
                Some(list) => {
                    let max = list
                        .items
                        .iter()
                        .map(|o| o.kv.mod_revision)
                        .max()
                        .unwrap_or(0);
                    fingerprint[i] = (list.items.len(), max);
                    lists.push(Items::Cached(list.items));
                }
                None => {
                    let list = e.store.list(None, &opts).await?;
                    fingerprint[i] = (usize::MAX, 0);
                    lists.push(Items::Decoded(list.items));
                }
            }
        }
        let cacheable = fingerprint.iter().all(|(n, _)| *n != usize::MAX);
        if cacheable && !fresh {
            *self.confirmed_at.lock().expect("rbac lock") = revision;
        }
        if let Some((fp, p)) = self.compiled.lock().expect("rbac lock").as_ref() {
            if *fp == fingerprint && cacheable {
                return Ok(p.clone());
            }
        }
        let mut policy = Policy::default();
        for (e, items) in self.entries.iter().zip(lists) {
            let objs = items.decode(e);
            match e.def.resource.as_str() {
                "clusterroles" => {
                    for o in objs {
                        policy
                            .cluster_roles
                            .insert(s(&o, "/metadata/name"), rules_of(&o));
                    }
                }
                "roles" => {
                    for o in objs {
                        let key = (s(&o, "/metadata/namespace"), s(&o, "/metadata/name"));
                        policy.roles.insert(key, rules_of(&o));
                    }
                }
                "clusterrolebindings" => {
                    policy.cluster_bindings = objs.iter().map(binding).collect();
                }
                _ => {
                    for o in &objs {
                        let b = binding(o);
                        policy
                            .bindings
                            .entry(b.namespace.clone())
                            .or_default()
                            .push(b);
                    }
                }
            }
        }
        let policy = Arc::new(policy);
        *self.compiled.lock().expect("rbac lock") = Some((fingerprint, policy.clone()));
        Ok(policy)
    }
}

enum Items {
    Cached(kapi_registry::cache::Items),
    Decoded(Vec<Value>),
}

impl Items {
    fn decode(self, e: &Entry) -> Vec<Value> {
        match self {
            Items::Decoded(v) => v,
            Items::Cached(objs) => objs
                .iter()
                .filter_map(|o| e.store.decode_value(&o.kv).ok())
                .collect(),
        }
    }
}

#[async_trait]
impl Authorizer for Rbac {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let d = self.policy(false).await.authorize(attrs);
        if d.allowed() {
            return d;
        }
        self.policy(true).await.authorize(attrs)
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let (rules, errors) = self.policy(true).await.rules_for(user, namespace);
        let mut out = RuleSet {
            incomplete: !errors.is_empty(),
            errors,
            ..Default::default()
        };
        for r in rules {
            let list = |k: &str| r.get(k).cloned().unwrap_or_else(|| json!([]));
            if r.get("nonResourceURLs")
                .is_some_and(|u| u.as_array().is_some_and(|a| !a.is_empty()))
            {
                out.non_resource_rules.push(
                    json!({"verbs": list("verbs"), "nonResourceURLs": list("nonResourceURLs")}),
                );
            } else {
                let mut rr = json!({"verbs": list("verbs"), "apiGroups": list("apiGroups"),
                    "resources": list("resources")});
                if r.get("resourceNames")
                    .is_some_and(|n| n.as_array().is_some_and(|a| !a.is_empty()))
                {
                    rr["resourceNames"] = list("resourceNames");
                }
                out.resource_rules.push(rr);
            }
        }
        out
    }
}
