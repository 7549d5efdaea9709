//! The APF configuration as data: FlowSchemas and PriorityLevelConfigurations
//! (flowcontrol.apiserver.k8s.io/v1) read into [`Schema`] and [`LevelSpec`], and
//! classification of a request by them, as upstream's
//! `util/flowcontrol/apf_filter.go` and `rule.go`.
//!
//! Invariants: schemas are ordered by `matchingPrecedence`, then name; a schema
//! whose priority level does not exist (dangling) never matches; a request that
//! no schema matches falls to the mandatory `catch-all`.

use serde_json::Value;

use kapi_http::user::UserInfo;

/// What classification needs to know about a request.
pub struct Digest<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    /// `Some` for resource requests: (group, resource, namespace).
    pub resource: Option<(&'a str, &'a str, Option<&'a str>)>,
    pub path: &'a str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LevelKind {
    Exempt,
    /// Limited with queues (`queues`, `hand_size`, `queue_length_limit`).
    Queue {
        queues: usize,
        hand_size: usize,
        queue_length_limit: usize,
    },
    /// Limited, rejecting what does not fit.
    Reject,
}

/// One PriorityLevelConfiguration.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelSpec {
    pub name: String,
    pub uid: String,
    pub kind: LevelKind,
    pub shares: u64,
    /// `lendablePercent`.
    pub lendable: Option<u64>,
    /// `borrowingLimitPercent` (never for exempt levels).
    pub borrowing: Option<u64>,
}

/// How flows of a schema are told apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// One FlowSchema.
#[derive(Debug, Clone)]
pub struct Schema {
    pub name: String,
    pub uid: String,
    pub precedence: i64,
    pub level: String,
    pub distinguisher: Distinguisher,
    rules: Vec<Rule>,
    /// The metric series and response headers of requests this schema
    /// classifies, resolved on the first one.
    pub(crate) recorded: std::sync::OnceLock<std::sync::Arc<crate::FlowSeries>>,
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl LevelSpec {
    pub fn from_object(obj: &Value) -> LevelSpec {
        let name = s(obj, "/metadata/name").to_owned();
        let uid = s(obj, "/metadata/uid").to_owned();
        let int = |p: &str, d: u64| obj.pointer(p).and_then(Value::as_u64).unwrap_or(d);
        let opt = |p: &str| obj.pointer(p).and_then(Value::as_u64);
        if s(obj, "/spec/type") == "Exempt" {
            let shares = int("/spec/exempt/nominalConcurrencyShares", 0);
            return LevelSpec {
                name,
                uid,
                kind: LevelKind::Exempt,
                shares,
                lendable: opt("/spec/exempt/lendablePercent"),
                borrowing: None,
            };
        }
        let shares = int("/spec/limited/nominalConcurrencyShares", 30);
        let kind = if s(obj, "/spec/limited/limitResponse/type") == "Queue" {
            let q = "/spec/limited/limitResponse/queuing";
            LevelKind::Queue {
                queues: int(&format!("{q}/queues"), 64).max(1) as usize,
                hand_size: int(&format!("{q}/handSize"), 8).max(1) as usize,
                queue_length_limit: int(&format!("{q}/queueLengthLimit"), 50) as usize,
            }
        } else {
            LevelKind::Reject
        };
        LevelSpec {
            name,
            uid,
            kind,
            shares,
            lendable: opt("/spec/limited/lendablePercent"),
            borrowing: opt("/spec/limited/borrowingLimitPercent"),
        }
    }

    /// The mandatory catch-all level, used when its object is missing.
    pub fn fallback_catch_all() -> LevelSpec {
        LevelSpec {
            name: "catch-all".into(),
            uid: String::new(),
            kind: LevelKind::Reject,
            shares: 5,
            lendable: Some(0),
            borrowing: None,
        }
    }
}

impl Schema {
    pub fn from_object(obj: &Value) -> Schema {
        let distinguisher = match s(obj, "/spec/distinguisherMethod/type") {
            "ByUser" => Distinguisher::ByUser,
            "ByNamespace" => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        Schema {
            name: s(obj, "/metadata/name").to_owned(),
            uid: s(obj, "/metadata/uid").to_owned(),
            precedence: obj
                .pointer("/spec/matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(1000),
            level: s(obj, "/spec/priorityLevelConfiguration/name").to_owned(),
            distinguisher,
            recorded: Default::default(),
            rules: obj
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Rule::from_value).collect())
                .unwrap_or_default(),
        }
    }

    /// Whether any rule matches the request.
    pub fn matches(&self, d: &Digest) -> bool {
        self.rules.iter().any(|r| r.matches(d))
    }

    /// The flow distinguisher of a request of this schema.
    pub fn flow_distinguisher(&self, d: &Digest) -> String {
        match self.distinguisher {
            Distinguisher::None => String::new(),
            Distinguisher::ByUser => d.user.name.clone(),
            Distinguisher::ByNamespace => d
                .resource
                .and_then(|(_, _, ns)| ns)
                .unwrap_or("")
                .to_owned(),
        }
    }
}

/// One rule of a FlowSchema, read once from its object.
#[derive(Debug, Clone, Default)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Debug, Clone)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
    Unknown,
}

#[derive(Debug, Clone)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    namespaces: Vec<String>,
    cluster_scope: bool,
}

#[derive(Debug, Clone)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

fn array<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

impl Rule {
    fn from_value(rule: &Value) -> Rule {
        let subjects = array(rule, "subjects")
            .map(|sub| match s(sub, "/kind") {
                "User" => Subject::User(s(sub, "/user/name").to_owned()),
                "Group" => Subject::Group(s(sub, "/group/name").to_owned()),
                "ServiceAccount" => Subject::ServiceAccount {
                    namespace: s(sub, "/serviceAccount/namespace").to_owned(),
                    name: s(sub, "/serviceAccount/name").to_owned(),
                },
                _ => Subject::Unknown,
            })
            .collect();
        let resource_rules = array(rule, "resourceRules")
            .map(|r| ResourceRule {
                verbs: strings(r, "verbs"),
                groups: strings(r, "apiGroups"),
                resources: strings(r, "resources"),
                namespaces: strings(r, "namespaces"),
                cluster_scope: r
                    .get("clusterScope")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
            .collect();
        let non_resource_rules = array(rule, "nonResourceRules")
            .map(|r| NonResourceRule {
                verbs: strings(r, "verbs"),
                urls: strings(r, "nonResourceURLs"),
            })
            .collect();
        Rule {
            subjects,
            resource_rules,
            non_resource_rules,
        }
    }

    fn matches(&self, d: &Digest) -> bool {
        if !self.subjects.iter().any(|s| s.matches(d.user)) {
            return false;
        }
        match d.resource {
            Some(res) => self.resource_rules.iter().any(|r| r.matches(d.verb, res)),
            None => self
                .non_resource_rules
                .iter()
                .any(|r| r.matches(d.verb, d.path)),
        }
    }
}

impl Subject {
    fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(name) => name == "*" || user.groups.iter().any(|g| g == name),
            Subject::ServiceAccount { namespace, name } => user
                .name
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(uns, uname)| uns == namespace && (name == "*" || name == uname)),
            Subject::Unknown => false,
        }
    }
}

fn has(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

impl ResourceRule {
    fn matches(&self, verb: &str, res: (&str, &str, Option<&str>)) -> bool {
        let (group, resource, ns) = res;
        if !has(&self.verbs, verb) || !has(&self.groups, group) || !has(&self.resources, resource) {
            return false;
        }
        match ns {
            None => self.cluster_scope,
            Some(ns) => has(&self.namespaces, ns),
        }
    }
}

impl NonResourceRule {
    fn matches(&self, verb: &str, path: &str) -> bool {
        has(&self.verbs, verb)
            && self.urls.iter().any(|u| {
                u == "*"
                    || u == path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| path.starts_with(prefix))
            })
    }
}

/// Schemas in matching order, dangling ones left out.
pub fn ordered(mut schemas: Vec<Schema>, levels: &[LevelSpec]) -> Vec<Schema> {
    schemas.retain(|s| levels.iter().any(|l| l.name == s.level));
    schemas.sort_by(|a, b| (a.precedence, &a.name).cmp(&(b.precedence, &b.name)));
    schemas
}

/// Nominal concurrency limits: `ceil(server_limit * shares / sum(shares))`.
pub fn nominal_limits(levels: &[LevelSpec], server_limit: usize) -> Vec<usize> {
    let sum: u64 = levels.iter().map(|l| l.shares).sum();
    levels
        .iter()
        .map(|l| {
            if sum == 0 {
                return 0;
            }
            (server_limit as f64 * l.shares as f64 / sum as f64).ceil() as usize
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_resources::flowcontrol::bootstrap;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::named(name, groups)
    }

    fn classify<'a>(schemas: &'a [Schema], d: &Digest) -> &'a str {
        schemas
            .iter()
            .find(|s| s.matches(d))
            .map_or("", |s| s.name.as_str())
    }

    #[test]
    fn bootstrap_classification() {
        let levels: Vec<LevelSpec> = bootstrap::priority_levels()
            .iter()
            .map(LevelSpec::from_object)
            .collect();
        let schemas = ordered(
            bootstrap::flow_schemas()
                .iter()
                .map(Schema::from_object)
                .collect(),
            &levels,
        );
        let admin = user("admin", &["system:masters", "system:authenticated"]);
        let bob = user("bob", &["system:authenticated"]);
        let anon = user("system:anonymous", &["system:unauthenticated"]);
        let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
        let get_pods = Some(("", "pods", Some("default")));
        let d = |u, verb, resource, path| Digest {
            user: u,
            verb,
            resource,
            path,
        };
        assert_eq!(
            classify(&schemas, &d(&admin, "get", get_pods, "")),
            "exempt"
        );
        assert_eq!(
            classify(&schemas, &d(&bob, "get", get_pods, "")),
            "global-default"
        );
        assert_eq!(
            classify(&schemas, &d(&anon, "get", None, "/healthz")),
            "probes"
        );
        assert_eq!(
            classify(&schemas, &d(&node, "get", get_pods, "")),
            "system-nodes"
        );
        assert_eq!(
            classify(&schemas, &d(&anon, "get", None, "/api")),
            "global-default"
        );
    }

    #[test]
    fn nominal_limits_follow_shares() {
        let l = |name: &str, shares| LevelSpec {
            name: name.into(),
            uid: String::new(),
            kind: LevelKind::Reject,
            shares,
            lendable: None,
            borrowing: None,
        };
        assert_eq!(
            nominal_limits(&[l("a", 1), l("b", 3), l("c", 0)], 600),
            vec![150, 450, 0]
        );
    }
}
