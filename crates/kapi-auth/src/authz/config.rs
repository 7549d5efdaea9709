//! `AuthorizationConfiguration` (`apiserver.config.k8s.io` v1alpha1, v1beta1,
//! v1): an ordered list of authorizers — `Node`, `RBAC`, `AlwaysAllow`,
//! `AlwaysDeny` once each, `Webhook` any number of times — decoded strictly,
//! defaulted (`authorizedTTL` 5m, `unauthorizedTTL` 30s, both caches on) and
//! validated as upstream, every failure naming its field
//! (`authorizers[1].webhook.timeout: Invalid value: "45s": must be > 0s and
//! <= 30s`). Match conditions are compiled here; the webhooks' kubeconfig
//! files are read when the chain is built (`structured.rs`).
//!
//! kapi does not implement `ABAC` nor `connectionInfo.type: InClusterConfig`;
//! both are refused with a message saying so.

use std::path::Path;
use std::time::Duration;

use kapi_machinery::validation::{is_dns1123_subdomain, FieldError, FieldPath};
use serde::Deserialize;

use crate::cel::{self, Expression};
use crate::config_file::{self, duration, nullable};

pub const VERSIONS: [&str; 3] = ["v1alpha1", "v1beta1", "v1"];
/// upstream's `AuthorizationModeChoices`, sorted as `sets.List` prints them.
const KNOWN_TYPES: [&str; 6] = [
    "ABAC",
    "AlwaysAllow",
    "AlwaysDeny",
    "Node",
    "RBAC",
    "Webhook",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuthorizationConfiguration {
    #[serde(default, deserialize_with = "nullable")]
    pub authorizers: Vec<AuthorizerConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuthorizerConfig {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub webhook: Option<WebhookConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookConfig {
    #[serde(default, rename = "authorizedTTL", deserialize_with = "duration")]
    pub authorized_ttl: Option<Duration>,
    #[serde(default)]
    pub cache_authorized_requests: Option<bool>,
    #[serde(default, rename = "unauthorizedTTL", deserialize_with = "duration")]
    pub unauthorized_ttl: Option<Duration>,
    #[serde(default)]
    pub cache_unauthorized_requests: Option<bool>,
    #[serde(default, deserialize_with = "duration")]
    pub timeout: Option<Duration>,
    #[serde(default)]
    pub subject_access_review_version: String,
    #[serde(default)]
    pub match_condition_subject_access_review_version: String,
    #[serde(default)]
    pub failure_policy: String,
    #[serde(default)]
    pub connection_info: ConnectionInfo,
    #[serde(default, deserialize_with = "nullable")]
    pub match_conditions: Vec<MatchCondition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConnectionInfo {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub kube_config_file: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchCondition {
    #[serde(default)]
    pub expression: String,
}

/// One validated authorizer of the chain.
#[derive(Debug, Clone)]
pub enum Validated {
    Node,
    Rbac,
    AlwaysAllow,
    AlwaysDeny,
    Webhook(ValidWebhook),
}

/// A webhook entry with its defaults applied and conditions compiled.
#[derive(Debug, Clone)]
pub struct ValidWebhook {
    pub name: String,
    pub kubeconfig: String,
    pub settings: super::webhook::Settings,
}

/// Decode and validate a configuration file's text.
pub fn parse(data: &str) -> Result<Vec<Validated>, String> {
    let config: AuthorizationConfiguration =
        config_file::decode(data, "AuthorizationConfiguration", &VERSIONS)?;
    let (out, errs) = validate(&config);
    match kapi_machinery::validation::aggregate(&errs) {
        Some(msg) => Err(msg),
        None => Ok(out),
    }
}

/// upstream's `ValidateAuthorizationConfiguration`, plus kapi's refusals.
pub fn validate(c: &AuthorizationConfiguration) -> (Vec<Validated>, Vec<FieldError>) {
    let mut errs = Vec::new();
    let root = FieldPath::new("authorizers");
    if c.authorizers.is_empty() {
        errs.push(FieldError::required(
            &root,
            "at least one authorization mode must be defined",
        ));
    }
    let (mut types, mut names_seen, mut out): (Vec<&str>, Vec<&str>, Vec<Validated>) =
        (Vec::new(), Vec::new(), Vec::new());
    for (i, a) in c.authorizers.iter().enumerate() {
        let p = root.index(i);
        let kind = a.kind.as_str();
        if kind.is_empty() {
            errs.push(FieldError::required(&p.child("type"), ""));
            continue;
        }
        if !KNOWN_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                &p.child("type"),
                kind,
                &KNOWN_TYPES,
            ));
            continue;
        }
        if types.contains(&kind) && kind != "Webhook" {
            errs.push(FieldError::duplicate(&p.child("type"), kind));
            continue;
        }
        types.push(kind);
        let name_path = p.child("name");
        if a.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else if names_seen.contains(&a.name.as_str()) {
            errs.push(FieldError::duplicate(&name_path, a.name.as_str()));
        } else {
            let problems = is_dns1123_subdomain(&a.name);
            if !problems.is_empty() {
                let detail = format!("authorizer name is invalid: {}", problems.join(", "));
                errs.push(FieldError::invalid(&name_path, a.name.as_str(), detail));
            }
        }
        names_seen.push(&a.name);
        let validated = match (kind, &a.webhook) {
            ("Webhook", None) => {
                errs.push(FieldError::required(
                    &p.child("webhook"),
                    "required when type=Webhook",
                ));
                continue;
            }
            ("Webhook", Some(w)) => match webhook(&a.name, w, &p, &mut errs) {
                Some(v) => Validated::Webhook(v),
                None => continue,
            },
            (_, Some(_)) => {
                errs.push(FieldError::invalid(
                    &p.child("webhook"),
                    "non-null",
                    "may only be specified when type=Webhook",
                ));
                continue;
            }
            ("Node", None) => Validated::Node,
            ("RBAC", None) => Validated::Rbac,
            ("AlwaysAllow", None) => Validated::AlwaysAllow,
            ("AlwaysDeny", None) => Validated::AlwaysDeny,
            (_, None) => {
                errs.push(FieldError::invalid(
                    &p.child("type"),
                    kind,
                    "ABAC is not implemented by kapi",
                ));
                continue;
            }
        };
        out.push(validated);
    }
    (out, errs)
}

fn go_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 60.0 {
        format!("{}m{}s", (secs / 60.0).floor(), secs % 60.0)
    } else {
        format!("{secs}s")
    }
}

fn webhook(
    name: &str,
    w: &WebhookConfig,
    p: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Option<ValidWebhook> {
    let before = errs.len();
    let wp = p.child("webhook");
    let timeout = w.timeout.unwrap_or_default();
    if timeout.is_zero() {
        errs.push(FieldError::required(&wp.child("timeout"), ""));
    } else if timeout > Duration::from_secs(30) {
        errs.push(FieldError::invalid(
            &wp.child("timeout"),
            go_duration(timeout),
            "must be > 0s and <= 30s",
        ));
    }
    let version = w.subject_access_review_version.as_str();
    match version {
        "" => errs.push(FieldError::required(
            &wp.child("subjectAccessReviewVersion"),
            "",
        )),
        "v1" | "v1beta1" => {}
        v => errs.push(FieldError::not_supported(
            &wp.child("subjectAccessReviewVersion"),
            v,
            &["v1", "v1beta1"],
        )),
    }
    match w.match_condition_subject_access_review_version.as_str() {
        "" if !w.match_conditions.is_empty() => errs.push(FieldError::required(
            &wp.child("matchConditionSubjectAccessReviewVersion"),
            "required if match conditions are specified",
        )),
        "" | "v1" => {}
        v => errs.push(FieldError::not_supported(
            &wp.child("matchConditionSubjectAccessReviewVersion"),
            v,
            &["v1"],
        )),
    }
    let failure = match w.failure_policy.as_str() {
        "" => {
            errs.push(FieldError::required(&wp.child("failurePolicy"), ""));
            super::Verdict::NoOpinion
        }
        "NoOpinion" => super::Verdict::NoOpinion,
        "Deny" => super::Verdict::Deny,
        v => {
            errs.push(FieldError::not_supported(
                &wp.child("failurePolicy"),
                v,
                &["NoOpinion", "Deny"],
            ));
            super::Verdict::NoOpinion
        }
    };
    let kubeconfig = connection(&w.connection_info, &wp.child("connectionInfo"), errs);
    let conditions = match_conditions(&w.match_conditions, &wp, errs);
    if errs.len() > before {
        return None;
    }
    let settings = super::webhook::Settings {
        name: name.to_string(),
        version: version.to_string(),
        timeout,
        authorized_ttl: w
            .authorized_ttl
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(300)),
        unauthorized_ttl: w
            .unauthorized_ttl
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(30)),
        cache_authorized: w.cache_authorized_requests.unwrap_or(true),
        cache_unauthorized: w.cache_unauthorized_requests.unwrap_or(true),
        failure,
        match_conditions: conditions,
    };
    Some(ValidWebhook {
        name: name.to_string(),
        kubeconfig: kubeconfig.unwrap_or_default(),
        settings,
    })
}

fn connection(c: &ConnectionInfo, p: &FieldPath, errs: &mut Vec<FieldError>) -> Option<String> {
    let file_path = p.child("kubeConfigFile");
    match c.kind.as_str() {
        "" => errs.push(FieldError::required(&p.child("type"), "")),
        "InClusterConfig" => errs.push(FieldError::invalid(
            &p.child("type"),
            "InClusterConfig",
            "kapi supports KubeConfigFile connections only",
        )),
        "KubeConfigFile" => match c.kube_config_file.as_deref() {
            None | Some("") => errs.push(FieldError::required(&file_path, "")),
            Some(f) if !Path::new(f).is_absolute() => errs.push(FieldError::invalid(
                &file_path,
                f,
                "must be an absolute path",
            )),
            Some(f) => match std::fs::metadata(f) {
                Err(e) => errs.push(FieldError::invalid(
                    &file_path,
                    f,
                    format!("error loading file: {e}"),
                )),
                Ok(m) if !m.is_file() => {
                    errs.push(FieldError::invalid(&file_path, f, "must be a regular file"))
                }
                Ok(_) => return Some(f.to_string()),
            },
        },
        other => errs.push(FieldError::not_supported(
            &p.child("type"),
            other,
            &["InClusterConfig", "KubeConfigFile"],
        )),
    }
    None
}

fn match_conditions(
    list: &[MatchCondition],
    wp: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Vec<Expression> {
    let mp = wp.child("matchConditions");
    if list.len() > 64 {
        errs.push(FieldError::too_many(&mp, Some(list.len()), Some(64)));
        return Vec::new();
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let p = mp.index(i).child("expression");
        if c.expression.trim().is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if seen.contains(&c.expression.as_str()) {
            errs.push(FieldError::duplicate(&p, c.expression.as_str()));
            continue;
        }
        seen.push(&c.expression);
        match cel::compile(&c.expression, &["request"]) {
            Ok(e) => out.push(e),
            Err(detail) => errs.push(FieldError::invalid(&p, c.expression.as_str(), detail)),
        }
    }
    out
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
