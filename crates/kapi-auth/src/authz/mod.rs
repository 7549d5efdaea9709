//! Authorization: who may do what, as kube-apiserver decides it.
//!
//! Owns [`Attributes`] (upstream's `authorizer.Attributes`), [`Decision`], the
//! [`Authorizer`] trait and the chain of authorizers ([`Chain`]), which
//! `--authorization-mode` or `--authorization-config` builds: members of
//! `system:masters` are always allowed (upstream's privileged-group
//! authorizer, which runs before every other), then the authorizers in order —
//! `Node` ([`node::Node`]), `RBAC` ([`rbac::Rbac`]), `AlwaysAllow`,
//! `AlwaysDeny`, webhooks ([`webhook::Webhook`]); the first one with an
//! opinion (allow or deny) decides, and no opinion at all means "forbidden",
//! with the reasons of every authorizer joined. Like upstream, RBAC and
//! AlwaysDeny never deny outright; they only have no opinion. A decision may
//! carry an error (a webhook that could not be asked); a request no
//! authorizer allows that met one is answered 500 (`filter.rs`).
//!
//! Where to look next: `filter.rs` (the filter that asks the chain for every
//! request and writes upstream's 403), `impersonation.rs`, `rbac.rs` (rule
//! resolution from the watch-cached RBAC objects), `escalation.rs` (writes of
//! roles and bindings), `policy.rs` (the bootstrap roles and bindings),
//! `config.rs` and `structured.rs` (`--authorization-config` and its reload).

pub mod abac;
pub mod config;
mod controller_roles;
pub mod escalation;
pub mod filter;
pub mod impersonation;
pub mod node;
mod node_refs;
pub mod policy;
pub mod rbac;
pub mod roles;
pub mod structured;
pub mod webhook;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use kapi_http::user::UserInfo;
use kapi_registry::apis::Apis;

/// The group whose members may do anything (`user.SystemPrivilegedGroup`).
pub const PRIVILEGED_GROUP: &str = "system:masters";

/// What is being asked, as upstream's `authorizer.Attributes`.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    /// Resource requests: group, version, resource, subresource, namespace, name.
    pub resource: Option<ResourceAttrs>,
    /// Non-resource requests: the path.
    pub path: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttrs {
    pub group: String,
    /// The API version asked for (`*` or empty when any: reviews, checks
    /// made by the server itself).
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(user: &UserInfo, verb: &str, r: ResourceAttrs) -> Attributes {
        Attributes {
            user: user.clone(),
            verb: verb.into(),
            resource: Some(r),
            path: None,
        }
    }

    /// The message upstream's `responsewriters.Forbidden` writes, with the
    /// authorizer's reason appended when there is one.
    pub fn forbidden_message(&self, reason: &str) -> String {
        let user = &self.user.name;
        let verb = &self.verb;
        let base = match &self.resource {
            None => format!(
                "User {user:?} cannot {verb} path {:?}",
                self.path.as_deref().unwrap_or("")
            ),
            Some(r) => {
                let mut res = r.resource.clone();
                if !r.subresource.is_empty() {
                    res = format!("{res}/{}", r.subresource);
                }
                let scope = if r.namespace.is_empty() {
                    "at the cluster scope".to_string()
                } else {
                    format!("in the namespace {:?}", r.namespace)
                };
                format!(
                    "User {user:?} cannot {verb} resource {res:?} in API group {:?} {scope}",
                    r.group
                )
            }
        };
        if reason.is_empty() {
            base
        } else {
            format!("{base}: {reason}")
        }
    }
}

/// An authorizer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
    /// Let the next authorizer decide (RBAC never denies, it only fails to allow).
    NoOpinion,
}

/// The answer, with upstream's `reason` text and the error met on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub reason: String,
    /// Why an authorizer could not decide (a webhook failure): for the log,
    /// and a 500 when nothing allows the request.
    pub error: Option<String>,
}

impl Decision {
    pub fn allow(reason: impl Into<String>) -> Decision {
        Decision {
            verdict: Verdict::Allow,
            reason: reason.into(),
            error: None,
        }
    }

    pub fn no_opinion(reason: impl Into<String>) -> Decision {
        Decision {
            verdict: Verdict::NoOpinion,
            reason: reason.into(),
            error: None,
        }
    }

    pub fn deny(reason: impl Into<String>) -> Decision {
        Decision {
            verdict: Verdict::Deny,
            reason: reason.into(),
            error: None,
        }
    }

    pub fn allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

/// Rules a user holds in a namespace, as `SelfSubjectRulesReview` reports them
/// (JSON `ResourceRule` / `NonResourceRule` objects).
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub resource_rules: Vec<Value>,
    pub non_resource_rules: Vec<Value>,
    pub incomplete: bool,
    /// Why the list may be incomplete (upstream's `evaluationError`).
    pub errors: Vec<String>,
}

#[async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, attrs: &Attributes) -> Decision;
    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet;
}

/// One `--authorization-mode` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    Rbac,
    Node,
    /// `--authorization-webhook-config-file`.
    Webhook,
    /// `--authorization-policy-file`.
    Abac,
}

impl Mode {
    /// Parse `--authorization-mode` (comma-separated, in order, no repeats).
    pub fn parse_list(s: &str) -> Result<Vec<Mode>, String> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let mode = match item {
                "AlwaysAllow" => Mode::AlwaysAllow,
                "AlwaysDeny" => Mode::AlwaysDeny,
                "RBAC" => Mode::Rbac,
                "Node" => Mode::Node,
                "Webhook" => Mode::Webhook,
                "ABAC" => Mode::Abac,
                other => {
                    return Err(format!(
                        "authorization-mode {other:?} is not a valid mode (supported: ABAC, AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook)"
                    ))
                }
            };
            if out.contains(&mode) {
                return Err(format!(
                    "authorization-mode {item:?} has mode specified more than once"
                ));
            }
            out.push(mode);
        }
        if out.is_empty() {
            return Err("at least one authorization-mode must be passed".into());
        }
        Ok(out)
    }
}

/// `AlwaysAllow`.
pub struct AlwaysAllow;

#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::allow("")
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RuleSet {
        RuleSet {
            resource_rules: vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            non_resource_rules: vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
            ..Default::default()
        }
    }
}

/// `AlwaysDeny`: as upstream, no opinion (a later mode may still allow) with
/// the reason "Everything is forbidden.".
pub struct AlwaysDeny;

#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::no_opinion("Everything is forbidden.")
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RuleSet {
        RuleSet::default()
    }
}

/// The privileged-group authorizer, then the configured authorizers in order.
pub struct Chain {
    modes: Vec<Arc<dyn Authorizer>>,
}

/// `Mode::Webhook` without a webhook (refused before a server is built).
struct NoWebhook;

#[async_trait]
impl Authorizer for NoWebhook {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision {
            error: Some("authorization-mode Webhook's authorization config file not passed".into()),
            ..Decision::no_opinion("")
        }
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RuleSet {
        RuleSet::default()
    }
}

impl Chain {
    /// `modes` in order; `Webhook` is `webhook`, `ABAC` is `abac`.
    pub fn new(
        modes: &[Mode],
        rbac: Arc<rbac::Rbac>,
        node: Arc<node::Node>,
        webhook: Option<Arc<webhook::Webhook>>,
        abac: Option<Arc<abac::Abac>>,
    ) -> Chain {
        let modes = modes
            .iter()
            .map(|m| -> Arc<dyn Authorizer> {
                match m {
                    Mode::AlwaysAllow => Arc::new(AlwaysAllow),
                    Mode::AlwaysDeny => Arc::new(AlwaysDeny),
                    Mode::Rbac => rbac.clone(),
                    Mode::Node => node.clone(),
                    Mode::Webhook => match &webhook {
                        Some(w) => w.clone(),
                        None => Arc::new(NoWebhook),
                    },
                    // Refused before a server is built without its file.
                    Mode::Abac => match &abac {
                        Some(a) => a.clone(),
                        None => Arc::new(abac::Abac::default()),
                    },
                }
            })
            .collect();
        Chain { modes }
    }

    /// A chain of these authorizers, in order.
    pub fn of(authorizers: Vec<Arc<dyn Authorizer>>) -> Chain {
        Chain { modes: authorizers }
    }
}

#[async_trait]
impl Authorizer for Chain {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Decision::allow("");
        }
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for m in &self.modes {
            let d = m.authorize(attrs).await;
            if d.verdict != Verdict::NoOpinion {
                return d;
            }
            if !d.reason.is_empty() {
                reasons.push(d.reason);
            }
            errors.extend(d.error);
        }
        Decision {
            verdict: Verdict::NoOpinion,
            reason: reasons.join("\n"),
            error: kapi_machinery::validation::aggregate_messages(&errors),
        }
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let mut out = RuleSet::default();
        for m in &self.modes {
            let r = m.rules_for(user, namespace).await;
            out.resource_rules.extend(r.resource_rules);
            out.non_resource_rules.extend(r.non_resource_rules);
            out.incomplete |= r.incomplete;
            out.errors.extend(r.errors);
        }
        out
    }
}

/// Where the authorizers of a server come from.
pub enum Source {
    /// `--authorization-mode`, with the webhook of
    /// `--authorization-webhook-config-file` when it names `Webhook` and the
    /// policies of `--authorization-policy-file` when it names `ABAC`.
    Modes(
        Vec<Mode>,
        Option<Arc<webhook::Webhook>>,
        Option<Arc<abac::Abac>>,
    ),
    /// `--authorization-config`, read and validated, reloaded when it changes.
    File(structured::ConfigFile),
}

/// Authorization as one server has it, built once from `--authorization-mode`
/// or `--authorization-config`: the chain every request and access review
/// asks, and RBAC's compiled view of the watch-cached RBAC objects, which
/// escalation checks use in every mode (as upstream's RBAC storage does).
pub struct Authorization {
    chain: Arc<dyn Authorizer>,
    rbac: Arc<rbac::Rbac>,
}

impl Authorization {
    /// The modes in order over the resources of `apis`.
    pub fn new(modes: &[Mode], apis: &Apis) -> Authorization {
        Authorization::from_source(Source::Modes(modes.to_vec(), None, None), apis)
    }

    /// The authorizers `source` describes over the resources of `apis`; a
    /// configuration file's reloading starts here.
    pub fn from_source(source: Source, apis: &Apis) -> Authorization {
        let rbac = Arc::new(rbac::Rbac::new(apis));
        let node = Arc::new(node::Node::new(apis));
        let chain: Arc<dyn Authorizer> = match source {
            Source::Modes(modes, webhook, abac) => {
                Arc::new(Chain::new(&modes, rbac.clone(), node, webhook, abac))
            }
            Source::File(file) => structured::Reloading::start(file, rbac.clone(), node),
        };
        Authorization { chain, rbac }
    }

    /// RBAC's view of the RBAC objects, whatever the modes.
    pub fn rbac(&self) -> &Arc<rbac::Rbac> {
        &self.rbac
    }
}

#[async_trait]
impl Authorizer for Authorization {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        self.chain.authorize(attrs).await
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        self.chain.rules_for(user, namespace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::named(name, groups)
    }

    #[test]
    fn modes_parse_in_order() {
        assert_eq!(
            Mode::parse_list("RBAC,AlwaysDeny").unwrap(),
            vec![Mode::Rbac, Mode::AlwaysDeny]
        );
        assert_eq!(
            Mode::parse_list("Node,RBAC").unwrap(),
            vec![Mode::Node, Mode::Rbac]
        );
        assert_eq!(Mode::parse_list("Webhook").unwrap(), vec![Mode::Webhook]);
        assert_eq!(
            Mode::parse_list("ABAC,RBAC").unwrap(),
            vec![Mode::Abac, Mode::Rbac]
        );
        assert!(Mode::parse_list("abac").is_err());
        assert!(Mode::parse_list("Node,Node").is_err());
        assert!(Mode::parse_list("RBAC,RBAC").is_err());
        assert!(Mode::parse_list("").is_err());
    }

    #[test]
    fn forbidden_messages_have_upstream_shape() {
        let bob = user("bob", &[]);
        let ns = Attributes::resource(
            &bob,
            "list",
            ResourceAttrs {
                resource: "configmaps".into(),
                namespace: "default".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            ns.forbidden_message(""),
            r#"User "bob" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let cluster = Attributes::resource(
            &bob,
            "get",
            ResourceAttrs {
                group: "apps".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            cluster.forbidden_message("RBAC: x"),
            r#"User "bob" cannot get resource "deployments/scale" in API group "apps" at the cluster scope: RBAC: x"#
        );
        let path = Attributes {
            user: bob,
            verb: "get".into(),
            resource: None,
            path: Some("/foo".into()),
        };
        assert_eq!(
            path.forbidden_message(""),
            r#"User "bob" cannot get path "/foo""#
        );
    }

    #[tokio::test]
    async fn first_opinion_wins_and_masters_always_pass() {
        let attrs = Attributes {
            user: user("alice", &[]),
            verb: "get".into(),
            path: Some("/x".into()),
            resource: None,
        };
        let deny = Chain {
            modes: vec![Arc::new(AlwaysDeny)],
        };
        let d = deny.authorize(&attrs).await;
        assert_eq!(
            (d.verdict, d.reason.as_str()),
            (Verdict::NoOpinion, "Everything is forbidden.")
        );
        let admin = Attributes {
            user: user("root", &[PRIVILEGED_GROUP]),
            ..attrs.clone()
        };
        assert!(deny.authorize(&admin).await.allowed());
        // AlwaysDeny has no opinion, so a later mode still decides (upstream).
        let deny_then_allow = Chain {
            modes: vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)],
        };
        assert!(deny_then_allow.authorize(&attrs).await.allowed());
        let none = Chain { modes: vec![] };
        assert_eq!(none.authorize(&attrs).await.verdict, Verdict::NoOpinion);
    }
}
