//! The `ABAC` authorization mode (`--authorization-policy-file`), as upstream's
//! `pkg/auth/authorizer/abac`: a file of one JSON policy per line —
//! `abac.authorization.kubernetes.io/v1beta1` `Policy` objects, or the
//! unversioned v0 form — blank lines and `#` comments skipped. A request is
//! allowed when some policy matches its subject (user or group, `*` for every
//! authenticated one), its verb (read-only policies allow get, list and watch
//! only) and either its resource (namespace, resource, API group, each exact
//! or `*`) or its non-resource path (exact, `*`, or a `prefix*`); otherwise
//! no opinion ("No policy matched.").

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Attributes, Authorizer, Decision, RuleSet};
use kapi_http::user::UserInfo;

const ALL_AUTHENTICATED: &str = "system:authenticated";
const V1BETA1: &str = "abac.authorization.kubernetes.io/v1beta1";

/// One policy, as the internal version holds it (after conversion).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Spec {
    pub user: String,
    pub group: String,
    pub readonly: bool,
    pub api_group: String,
    pub resource: String,
    pub namespace: String,
    pub non_resource_path: String,
}

/// The policies of a file, in order.
#[derive(Debug, Clone, Default)]
pub struct Abac {
    policies: Vec<Spec>,
}

#[derive(Deserialize)]
struct Versioned {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    spec: Spec,
}

/// The v0 (unversioned) form: no apiVersion, fields at the top.
#[derive(Deserialize, Default)]
#[serde(default)]
struct V0 {
    user: String,
    group: String,
    readonly: bool,
    resource: String,
    namespace: String,
}

impl Abac {
    /// Read the policy file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Abac, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("error reading policy file {}: {e}", path.display()))?;
        Abac::parse(&text).map_err(|(line, data, e)| {
            format!(
                "error reading policy file {}, line {line}: {data}: {e}",
                path.display()
            )
        })
    }

    /// The policies of `text`; errors name the line (1-based), its text and why.
    pub fn parse(text: &str) -> Result<Abac, (usize, String, String)> {
        let mut policies = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let spec = policy(trimmed).map_err(|e| (i + 1, trimmed.to_owned(), e))?;
            policies.push(spec);
        }
        Ok(Abac { policies })
    }

    fn matching<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a Spec> {
        self.policies
            .iter()
            .filter(move |p| subject_matches(p, user))
    }
}

/// One line, converted to the internal form.
fn policy(line: &str) -> Result<Spec, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if v.get("apiVersion").is_none() && v.get("kind").is_none() {
        let v0: V0 = serde_json::from_value(v).map_err(|e| e.to_string())?;
        return Ok(from_v0(v0));
    }
    let p: Versioned = serde_json::from_value(v).map_err(|e| e.to_string())?;
    if p.api_version != V1BETA1 || p.kind != "Policy" {
        return Err(format!(
            "no kind \"{}\" is registered for version \"{}\"",
            p.kind, p.api_version
        ));
    }
    let mut spec = p.spec;
    // In v1beta1 a `*` user or group means every authenticated subject.
    if spec.user == "*" || spec.group == "*" {
        spec.group = ALL_AUTHENTICATED.into();
        spec.user.clear();
    }
    Ok(spec)
}

/// v0's defaults: no subject or `*` is every authenticated subject, no
/// namespace or resource is all of them (and then non-resource paths too),
/// any API group.
fn from_v0(v: V0) -> Spec {
    let mut out = Spec {
        user: v.user.clone(),
        group: v.group.clone(),
        readonly: v.readonly,
        api_group: "*".into(),
        resource: if v.resource.is_empty() {
            "*".into()
        } else {
            v.resource.clone()
        },
        namespace: if v.namespace.is_empty() {
            "*".into()
        } else {
            v.namespace.clone()
        },
        non_resource_path: String::new(),
    };
    if v.user.is_empty() && v.group.is_empty() {
        out.group = ALL_AUTHENTICATED.into();
    }
    if v.user == "*" || v.group == "*" {
        out.group = ALL_AUTHENTICATED.into();
        out.user.clear();
    }
    if v.namespace.is_empty() && v.resource.is_empty() {
        out.non_resource_path = "*".into();
    }
    out
}

fn subject_matches(p: &Spec, u: &UserInfo) -> bool {
    let mut matched = false;
    if !p.user.is_empty() {
        if p.user != "*" && p.user != u.name {
            return false;
        }
        matched = true;
    }
    if !p.group.is_empty() {
        if p.group != "*" && !u.groups.contains(&p.group) {
            return false;
        }
        matched = true;
    }
    matched
}

fn read_only(verb: &str) -> bool {
    matches!(verb, "get" | "list" | "watch")
}

fn matches(p: &Spec, a: &Attributes) -> bool {
    if !subject_matches(p, &a.user) || (p.readonly && !read_only(&a.verb)) {
        return false;
    }
    match (&a.resource, &a.path) {
        (Some(r), _) => {
            (p.namespace == "*" || p.namespace == r.namespace)
                && (p.resource == "*" || p.resource == r.resource)
                && (p.api_group == "*" || p.api_group == r.group)
        }
        (None, Some(path)) => {
            let np = &p.non_resource_path;
            np == "*"
                || np == path
                || (np.ends_with('*') && path.starts_with(np.trim_end_matches('*')))
        }
        (None, None) => false,
    }
}

fn verbs(readonly: bool) -> Value {
    if readonly {
        json!(["get", "list", "watch"])
    } else {
        json!(["*"])
    }
}

#[async_trait]
impl Authorizer for Abac {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        if self.policies.iter().any(|p| matches(p, attrs)) {
            return Decision::allow("");
        }
        Decision::no_opinion("No policy matched.")
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let mut rules = RuleSet::default();
        for p in self.matching(user) {
            if p.namespace != "*" && p.namespace != namespace {
                continue;
            }
            if !p.resource.is_empty() {
                rules.resource_rules.push(json!({"verbs": verbs(p.readonly),
                    "apiGroups": [p.api_group], "resources": [p.resource]}));
            }
            if !p.non_resource_path.is_empty() {
                rules
                    .non_resource_rules
                    .push(json!({"verbs": verbs(p.readonly),
                    "nonResourceURLs": [p.non_resource_path]}));
            }
        }
        rules
    }
}

#[cfg(test)]
#[path = "abac_tests.rs"]
mod tests;
