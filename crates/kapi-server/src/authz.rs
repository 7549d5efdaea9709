//! The authorizer the access reviews ask: a small trait, so the RBAC issue
//! can plug in a real policy without touching the review handlers.
//!
//! Today's policy ([`AllowAuthenticated`]) is the filter chain's: every
//! authenticated user may do everything; anonymous users may only read the
//! health and version endpoints (`filters.rs` enforces the same on requests).

use crate::authn::{UserInfo, ALL_UNAUTHENTICATED, ANONYMOUS_USER};

/// What is being asked, as upstream's `authorizer.Attributes`.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    /// Resource requests: group, resource, subresource, namespace, name.
    pub resource: Option<ResourceAttrs>,
    /// Non-resource requests: the path.
    pub path: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ResourceAttrs {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// The answer, with upstream's `reason` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Rules a user holds in a namespace, as `SelfSubjectRulesReview` reports them
/// (JSON `ResourceRule` / `NonResourceRule` objects).
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub resource_rules: Vec<serde_json::Value>,
    pub non_resource_rules: Vec<serde_json::Value>,
    pub incomplete: bool,
}

pub trait Authorizer: Send + Sync {
    fn authorize(&self, attrs: &Attributes) -> Decision;
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet;
}

/// Every authenticated user may do everything.
pub struct AllowAuthenticated;

const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version"];

fn is_anonymous(user: &UserInfo) -> bool {
    user.name == ANONYMOUS_USER
        || user.groups.iter().any(|g| g == ALL_UNAUTHENTICATED)
        || (user.name.is_empty() && user.groups.is_empty())
}

impl Authorizer for AllowAuthenticated {
    fn authorize(&self, attrs: &Attributes) -> Decision {
        if !is_anonymous(&attrs.user) {
            return Decision {
                allowed: true,
                reason: "kapi: every authenticated user is allowed".into(),
            };
        }
        let public = attrs.verb == "get"
            && attrs.path.as_deref().is_some_and(|p| {
                PUBLIC_PATHS
                    .iter()
                    .any(|pp| p == *pp || p.starts_with(&format!("{pp}/")))
            });
        Decision {
            allowed: public,
            reason: if public {
                "kapi: health and version are public".into()
            } else {
                String::new()
            },
        }
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> RuleSet {
        use serde_json::json;
        if is_anonymous(user) {
            let urls: Vec<String> = PUBLIC_PATHS
                .iter()
                .flat_map(|p| [p.to_string(), format!("{p}/*")])
                .collect();
            return RuleSet {
                non_resource_rules: vec![json!({"verbs": ["get"], "nonResourceURLs": urls})],
                ..Default::default()
            };
        }
        RuleSet {
            resource_rules: vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            non_resource_rules: vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
            incomplete: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticated_users_may_do_anything() {
        let alice = UserInfo {
            name: "alice".into(),
            ..Default::default()
        };
        let attrs = Attributes {
            user: alice,
            verb: "delete".into(),
            resource: Some(ResourceAttrs::default()),
            path: None,
        };
        assert!(AllowAuthenticated.authorize(&attrs).allowed);
        let anon = Attributes {
            user: UserInfo::anonymous(),
            verb: "get".into(),
            resource: None,
            path: Some("/healthz".into()),
        };
        assert!(AllowAuthenticated.authorize(&anon).allowed);
        let anon_write = Attributes {
            verb: "create".into(),
            ..anon
        };
        assert!(!AllowAuthenticated.authorize(&anon_write).allowed);
    }
}
