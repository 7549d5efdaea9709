//! The audit policy (`--audit-policy-file`, audit.k8s.io/v1 `Policy`) and its
//! evaluation, as upstream's `pkg/audit/policy` (reader and checker): the first
//! rule that matches a request decides its level and omitted stages; no match
//! means level `None`.

use std::path::Path;

use serde::Deserialize;

use kapi_http::user::UserInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

pub const STAGES: &[&str] = &[
    "RequestReceived",
    "ResponseStarted",
    "ResponseComplete",
    "Panic",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Rule {
    level: String,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Document {
    api_version: String,
    kind: String,
    rules: Vec<Rule>,
    omit_stages: Vec<String>,
    omit_managed_fields: bool,
}

/// A loaded, validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    doc: Document,
    levels: Vec<Level>,
}

/// The request attributes a policy looks at.
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    /// `Some` for resource requests: group, resource, subresource, namespace, name.
    pub resource: Option<ResourceAttrs<'a>>,
    pub path: &'a str,
}

pub struct ResourceAttrs<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// What the policy decided for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<String>,
    pub omit_managed_fields: bool,
}

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("failed to read file path {:?}: {e}", path.display()))?;
        Policy::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Policy, String> {
        let doc: Document =
            serde_saphyr::from_str(text).map_err(|e| format!("failed decoding: {e}"))?;
        if doc.kind != "Policy" || doc.api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "unknown group version field {:?} {:?} in policy (expected audit.k8s.io/v1 Policy)",
                doc.api_version, doc.kind
            ));
        }
        if doc.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        let mut levels = Vec::new();
        for (i, r) in doc.rules.iter().enumerate() {
            let level = Level::parse(&r.level)
                .ok_or_else(|| format!("rules[{i}].level: Unsupported value: {:?}", r.level))?;
            levels.push(level);
            if !r.non_resource_urls.is_empty()
                && (!r.resources.is_empty() || !r.namespaces.is_empty())
            {
                return Err(format!(
                    "rules[{i}].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
                ));
            }
            for s in r.omit_stages.iter().chain(&doc.omit_stages) {
                if !STAGES.contains(&s.as_str()) {
                    return Err(format!("omitStages: Unsupported value: {s:?}"));
                }
            }
        }
        Ok(Policy { doc, levels })
    }

    /// The first matching rule's decision; `None` level when nothing matches.
    pub fn evaluate(&self, a: &Attributes) -> Decision {
        for (rule, level) in self.doc.rules.iter().zip(&self.levels) {
            if rule_matches(rule, a) {
                let mut omit = self.doc.omit_stages.clone();
                omit.extend(rule.omit_stages.iter().cloned());
                return Decision {
                    level: *level,
                    omit_stages: omit,
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.doc.omit_managed_fields),
                };
            }
        }
        Decision {
            level: Level::None,
            omit_stages: Vec::new(),
            omit_managed_fields: false,
        }
    }
}

fn has(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == v)
}

fn rule_matches(r: &Rule, a: &Attributes) -> bool {
    if !r.users.is_empty() && !has(&r.users, &a.user.name) {
        return false;
    }
    if !r.user_groups.is_empty() && !a.user.groups.iter().any(|g| has(&r.user_groups, g)) {
        return false;
    }
    if !r.verbs.is_empty() && !has(&r.verbs, a.verb) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return resource_matches(r, a);
    }
    if !r.non_resource_urls.is_empty() {
        return a.resource.is_none()
            && r.non_resource_urls.iter().any(|u| {
                u == a.path || u.strip_suffix('*').is_some_and(|p| a.path.starts_with(p))
            });
    }
    true
}

fn resource_matches(r: &Rule, a: &Attributes) -> bool {
    let Some(res) = &a.resource else {
        return false;
    };
    if !r.namespaces.is_empty() && !has(&r.namespaces, res.namespace) {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let combined = if res.subresource.is_empty() {
        res.resource.to_owned()
    } else {
        format!("{}/{}", res.resource, res.subresource)
    };
    r.resources
        .iter()
        .filter(|gr| gr.group == res.group)
        .any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, res.name) {
                return false;
            }
            gr.resources.iter().any(|want| {
                want == &combined
                    || want == "*"
                    || (!res.subresource.is_empty()
                        && want.strip_prefix("*/") == Some(res.subresource))
                    || want.strip_suffix("/*") == Some(res.resource)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_http::user::UserDetails;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: RequestResponse
    resources: [{group: "", resources: ["pods/log", "configmaps"], resourceNames: ["keep"]}]
  - level: Metadata
    resources: [{group: "", resources: ["secrets"]}]
    omitManagedFields: true
  - level: Request
    verbs: ["create"]
    namespaces: ["team-a"]
  - level: Metadata
    nonResourceURLs: ["/healthz*"]
"#;

    fn user(name: &str) -> UserInfo {
        UserInfo::from(UserDetails {
            name: name.into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        })
    }

    fn res<'a>(
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Option<ResourceAttrs<'a>> {
        Some(ResourceAttrs {
            group: "",
            resource,
            subresource: sub,
            namespace: ns,
            name,
        })
    }

    #[test]
    fn first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let bob = user("bob");
        let eval = |u: &UserInfo, verb: &str, r, path: &str| {
            p.evaluate(&Attributes {
                user: u,
                verb,
                resource: r,
                path,
            })
            .level
        };
        assert_eq!(
            eval(
                &user("system:kube-proxy"),
                "get",
                res("secrets", "", "a", "x"),
                ""
            ),
            Level::None
        );
        assert_eq!(
            eval(&bob, "get", res("pods", "log", "a", "keep"), ""),
            Level::RequestResponse
        );
        assert_eq!(
            eval(&bob, "get", res("pods", "log", "a", "other"), ""),
            Level::None
        );
        assert_eq!(
            eval(&bob, "get", res("configmaps", "", "a", "keep"), ""),
            Level::RequestResponse
        );
        assert_eq!(
            eval(&bob, "list", res("secrets", "", "a", ""), ""),
            Level::Metadata
        );
        assert_eq!(
            eval(&bob, "create", res("pods", "", "team-a", "p"), ""),
            Level::Request
        );
        assert_eq!(
            eval(&bob, "create", res("pods", "", "team-b", "p"), ""),
            Level::None
        );
        assert_eq!(eval(&bob, "get", None, "/healthz/etcd"), Level::Metadata);
        assert_eq!(eval(&bob, "get", None, "/version"), Level::None);
        let d = p.evaluate(&Attributes {
            user: &bob,
            verb: "get",
            resource: res("secrets", "", "a", "s"),
            path: "",
        });
        assert!(d.omit_managed_fields);
        assert_eq!(d.omit_stages, vec!["RequestReceived".to_string()]);
    }

    #[test]
    fn bad_policies_are_refused() {
        assert!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
                .unwrap_err()
                .contains("0 rules")
        );
        let bad = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n";
        assert!(Policy::parse(bad)
            .unwrap_err()
            .contains("Unsupported value"));
        let both = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata, namespaces: [a], nonResourceURLs: [/x]}]\n";
        assert!(Policy::parse(both).is_err());
    }
}
