//! PodSecurity (upstream `k8s.io/pod-security-admission`): the namespace labels
//! `pod-security.kubernetes.io/{enforce,audit,warn}` (levels `privileged`,
//! `baseline`, `restricted`) and their `-version` labels say which Pod Security
//! Standard the namespace's pods must meet. A pod that breaks the `enforce`
//! level is refused (403 `violates PodSecurity "restricted:latest": ...`);
//! one that breaks the `warn` level is let through with a `Warning` header
//! (`would violate PodSecurity ...`), as are workload resources' pod templates
//! (never enforced). Changing a namespace's `enforce` label warns about the
//! pods already there that break it. Invalid label values are refused (422).
//! The admission configuration file (`config.rs`) sets the level and version
//! of namespaces without labels and exempts user names, runtime classes and
//! namespaces (annotated `pod-security.kubernetes.io/exempt`); by default
//! nothing is exempt and unlabelled namespaces are privileged. A pod's audit event gets
//! `pod-security.kubernetes.io/enforce-policy` (`<level>:<version>`), and pods
//! and workloads that break the `audit` level get
//! `pod-security.kubernetes.io/audit-violations`, as upstream's.

mod checks;
pub mod config;

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

const PREFIX: &str = "pod-security.kubernetes.io/";
pub(crate) const LEVELS: &[&str] = &["privileged", "baseline", "restricted"];

pub struct PodSecurity {
    pub(crate) cx: Context,
    pub(crate) config: std::sync::Arc<config::PodSecurityConfig>,
}

/// A namespace's policy for one mode: `(level, version)`, the configured
/// defaults filling in what the labels leave out.
fn policy(
    labels: Option<&Value>,
    mode: &str,
    defaults: &config::PodSecurityConfig,
) -> (String, String) {
    let get = |k: String| {
        labels
            .and_then(|l| l.get(&k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (default_level, default_version) = defaults.default_of(mode);
    let level = get(format!("{PREFIX}{mode}"));
    let version = get(format!("{PREFIX}{mode}-version")).unwrap_or_else(|| default_version.clone());
    match level {
        None => (default_level.clone(), version),
        // Invalid levels fail closed, as upstream.
        Some(l) if !LEVELS.contains(&l.as_str()) => ("restricted".into(), "latest".into()),
        Some(l) => (l, version),
    }
}

pub(crate) fn valid_version(v: &str) -> bool {
    v == "latest"
        || v.strip_prefix("v1.")
            .is_some_and(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()))
}

/// The pod spec a resource carries, and whether the object is a pod.
fn pod_spec<'a>(a: &Attributes, obj: &'a Value) -> Option<(&'a Value, bool)> {
    let (spec, _) = crate::podspec::find(a, obj)?;
    Some((spec, a.group.is_empty() && a.resource == "pods"))
}

fn message(violations: &[(String, String)]) -> String {
    violations
        .iter()
        .map(|(r, d)| {
            if d.is_empty() {
                r.clone()
            } else {
                format!("{r} ({d})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn namespace_labels(cx: &Context, ns: &str) -> Result<Option<Value>, ApiError> {
    let Some(entry) = cx.apis.lookup("", "v1", "namespaces") else {
        return Ok(None);
    };
    match entry.store.get(None, ns, None).await {
        Ok(n) => Ok(n.pointer("/metadata/labels").cloned()),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

impl PodSecurity {
    fn validate_labels(a: &Attributes, labels: Option<&Value>) -> Result<(), ApiError> {
        let mut errs = Vec::new();
        let path = FieldPath::new("metadata").child("labels");
        for mode in ["enforce", "audit", "warn"] {
            let key = format!("{PREFIX}{mode}");
            if let Some(v) = labels.and_then(|l| l.get(&key)).and_then(Value::as_str) {
                if !LEVELS.contains(&v) {
                    errs.push(FieldError::invalid(
                        &path.key(&key),
                        v,
                        "must be one of privileged, baseline, restricted",
                    ));
                }
            }
            let key = format!("{key}-version");
            if let Some(v) = labels.and_then(|l| l.get(&key)).and_then(Value::as_str) {
                if !valid_version(v) {
                    errs.push(FieldError::invalid(
                        &path.key(&key),
                        v,
                        "must be \"latest\" or \"v1.x\"",
                    ));
                }
            }
        }
        if errs.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            GroupKind::new("", "Namespace"),
            &a.name,
            &errs,
        ))
    }

    /// A namespace whose enforce level changes: warn about the pods there that break it.
    async fn namespace(&self, cx: &Context, a: &Attributes) -> Result<(), ApiError> {
        let labels = a
            .object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/labels"));
        Self::validate_labels(a, labels)?;
        if a.operation != Operation::Update {
            return Ok(());
        }
        if self.config.exempt_namespaces.contains(&a.name) {
            return Ok(());
        }
        let (level, version) = policy(labels, "enforce", &self.config);
        let old = a
            .old_object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/labels"));
        if level == "privileged"
            || policy(old, "enforce", &self.config) == (level.clone(), version.clone())
        {
            return Ok(());
        }
        let Some(pods) = cx.apis.lookup("", "v1", "pods") else {
            return Ok(());
        };
        let list = pods
            .store
            .list(Some(&a.name), &ListOptions::default())
            .await?;
        let mut per_pod = Vec::new();
        for p in &list.items {
            let v = checks::check(&level, p.get("spec").unwrap_or(&Value::Null));
            if !v.is_empty() {
                let reasons: Vec<&str> = v.iter().map(|(r, _)| r.as_str()).collect();
                per_pod.push(format!(
                    "{}: {}",
                    kapi_registry::meta::name(p),
                    reasons.join(", ")
                ));
            }
        }
        if !per_pod.is_empty() {
            a.warnings.add(format!(
                "existing pods in namespace {:?} violate the new PodSecurity enforce level \"{level}:{version}\"",
                a.name
            ));
            for w in per_pod {
                a.warnings.add(w);
            }
        }
        Ok(())
    }

    /// Why this request (of a pod or a workload) is exempt, if it is: its
    /// namespace, the requesting user, or the pod's runtime class —
    /// upstream's order.
    fn exemption(&self, a: &Attributes, spec: &Value) -> Option<&'static str> {
        let c = &self.config;
        if c.exempt_namespaces.contains(&a.namespace) {
            return Some("namespace");
        }
        let user = a.user.as_ref().map(|u| u.name.as_str());
        if user.is_some_and(|u| c.exempt_usernames.iter().any(|e| e == u)) {
            return Some("user");
        }
        let class = spec.get("runtimeClassName").and_then(Value::as_str);
        if class.is_some_and(|r| c.exempt_runtime_classes.iter().any(|e| e == r)) {
            return Some("runtimeClass");
        }
        None
    }

    /// Whether a pod update changes what the standards look at.
    fn significant_update(a: &Attributes) -> bool {
        match (&a.object, &a.old_object) {
            (Some(new), Some(old)) => new.get("spec") != old.get("spec"),
            _ => true,
        }
    }
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "namespaces") || crate::podspec::path(a).is_some()
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if a.is("", "namespaces") {
            return self.namespace(cx, a).await;
        }
        let is_pod_sub =
            a.group.is_empty() && a.resource == "pods" && a.subresource == "ephemeralcontainers";
        if !a.subresource.is_empty() && !is_pod_sub {
            return Ok(());
        }
        let Some(obj) = &a.object else {
            return Ok(());
        };
        let Some((spec, is_pod)) = pod_spec(a, obj) else {
            return Ok(());
        };
        if is_pod && a.operation == Operation::Update && !is_pod_sub && !Self::significant_update(a)
        {
            return Ok(());
        }
        if let Some(why) = self.exemption(a, spec) {
            a.annotate("pod-security.kubernetes.io/exempt", why);
            return Ok(());
        }
        let labels = namespace_labels(cx, &a.namespace).await?;
        let (enforce, enforce_version) = policy(labels.as_ref(), "enforce", &self.config);
        let mut denied = None;
        if is_pod {
            let key = "pod-security.kubernetes.io/enforce-policy";
            a.annotate(key, &format!("{enforce}:{enforce_version}"));
            let v = checks::check(&enforce, spec);
            if enforce != "privileged" && !v.is_empty() {
                denied = Some(a.forbidden(format!(
                    "violates PodSecurity \"{enforce}:{enforce_version}\": {}",
                    message(&v)
                )));
            }
        }
        let (audit, audit_version) = policy(labels.as_ref(), "audit", &self.config);
        if audit != "privileged" {
            let v = checks::check(&audit, spec);
            if !v.is_empty() {
                a.annotate(
                    "pod-security.kubernetes.io/audit-violations",
                    &format!(
                        "would violate PodSecurity \"{audit}:{audit_version}\": {}",
                        message(&v)
                    ),
                );
            }
        }
        if let Some(e) = denied {
            return Err(e);
        }
        let (warn, warn_version) = policy(labels.as_ref(), "warn", &self.config);
        let mut levels = vec![(warn, warn_version)];
        if !is_pod {
            // Workloads are warned about at the enforce level too.
            levels.push((enforce, enforce_version));
        }
        for (level, version) in levels {
            if level == "privileged" {
                continue;
            }
            let v = checks::check(&level, spec);
            if !v.is_empty() {
                a.warnings.add(format!(
                    "would violate PodSecurity \"{level}:{version}\": {}",
                    message(&v)
                ));
                break;
            }
        }
        Ok(())
    }
}
