//! Which requests an admission configuration applies to, as upstream's
//! `webhook/predicates` and `policy/matching`: rules on operations, API groups,
//! versions, resources (`*`, `x/*`, `*/status`, `*/*`) and scope; the namespace
//! selector (the namespace's labels; for a namespace itself, the object's own);
//! the object selector (new or old object's labels); `matchPolicy: Equivalent`
//! (the same resource at another served version of its group).
//!
//! Requests on the admission configuration resources themselves are exempt, so
//! a broken webhook or policy can always be deleted.

use kapi_machinery::labels;
use kapi_machinery::status::ApiError;
use serde_json::Value;

use super::Attrs;
use crate::Context;

const GROUP: &str = "admissionregistration.k8s.io";
const EXEMPT: &[&str] = &[
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
];

/// Upstream's `IsExemptAdmissionConfigurationResource`.
pub fn exempt(a: &Attrs) -> bool {
    a.gvr.0 == GROUP && EXEMPT.contains(&a.gvr.2.as_str())
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == "*" || x == s)
}

/// A `RuleWithOperations` against the request at resource `gvr`
/// (group, version, resource).
pub fn rule_matches(rule: &Value, a: &Attrs, gvr: &(String, String, String)) -> bool {
    if !has(&strings(rule, "operations"), a.operation.as_str()) {
        return false;
    }
    if !has(&strings(rule, "apiGroups"), &gvr.0) || !has(&strings(rule, "apiVersions"), &gvr.1) {
        return false;
    }
    let resource_match = strings(rule, "resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == gvr.2) && (sub == "*" || sub == a.subresource)
    });
    if !resource_match {
        return false;
    }
    let is_namespace = gvr.0.is_empty() && gvr.2 == "namespaces";
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Namespaced" => !is_namespace && !a.namespace.is_empty(),
        "Cluster" => is_namespace || a.namespace.is_empty(),
        _ => true,
    }
}

/// A parsed label selector; `None` (absent or empty) selects everything.
fn selector(v: Option<&Value>) -> Result<Option<labels::LabelSelector>, ApiError> {
    let Some(v) = v.filter(|v| v.as_object().is_some_and(|m| !m.is_empty())) else {
        return Ok(None);
    };
    let s = labels::from_label_selector_json(v)
        .map_err(|e| ApiError::internal(format!("invalid label selector: {}", e.message())))?;
    Ok((!s.is_empty()).then_some(s))
}

fn labels_of(obj: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
    static EMPTY: std::sync::OnceLock<serde_json::Map<String, Value>> = std::sync::OnceLock::new();
    let obj = obj?;
    Some(
        obj.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or_else(|| EMPTY.get_or_init(Default::default)),
    )
}

/// The object selector: the new or the old object's labels match.
pub fn object_selector_matches(sel: Option<&Value>, a: &Attrs) -> Result<bool, ApiError> {
    let Some(s) = selector(sel)? else {
        return Ok(true);
    };
    let m = |o: Option<&Value>| labels_of(o).is_some_and(|l| s.matches(l));
    Ok(m(a.object.as_ref()) || m(a.old_object.as_ref()))
}

impl Context {
    /// The namespace selector. Cluster-scoped requests other than on namespaces
    /// always match; a missing namespace is a 404, as upstream.
    pub(crate) async fn namespace_selector_matches(
        &self,
        sel: Option<&Value>,
        a: &Attrs,
    ) -> Result<bool, ApiError> {
        let is_namespace = a.gvr.0.is_empty() && a.gvr.2 == "namespaces";
        if a.namespace.is_empty() && !is_namespace {
            return Ok(true);
        }
        let Some(s) = selector(sel)? else {
            return Ok(true);
        };
        if is_namespace && a.subresource.is_empty() {
            let obj = a.object.as_ref().or(a.old_object.as_ref());
            return Ok(labels_of(obj).is_some_and(|l| s.matches(l)));
        }
        let ns = self.namespace_object(&a.namespace).await?;
        Ok(labels_of(Some(&ns)).is_some_and(|l| s.matches(l)))
    }

    pub(crate) async fn namespace_object(&self, name: &str) -> Result<Value, ApiError> {
        let entry = self
            .apis
            .lookup("", "v1", "namespaces")
            .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
        entry.store.get(None, name, None).await
    }

    /// The resource the rules match the request at: its own, or with
    /// `Equivalent` the same resource at another served version of its group.
    pub(crate) fn matching_resource(
        &self,
        rules: &[Value],
        equivalent: bool,
        a: &Attrs,
    ) -> Option<(String, String, String)> {
        if rules.iter().any(|r| rule_matches(r, a, &a.gvr)) {
            return Some(a.gvr.clone());
        }
        if !equivalent {
            return None;
        }
        self.equivalents(a)
            .into_iter()
            .find(|gvr| rules.iter().any(|r| rule_matches(r, a, gvr)))
    }

    /// The other versions the request's resource is served at.
    pub(crate) fn equivalents(&self, a: &Attrs) -> Vec<(String, String, String)> {
        let (g, v, r) = &a.gvr;
        self.apis
            .all()
            .into_iter()
            .filter(|e| &e.def.group == g && &e.def.resource == r && &e.def.version != v)
            .map(|e| (g.clone(), e.def.version.clone(), r.clone()))
            .collect()
    }
}
