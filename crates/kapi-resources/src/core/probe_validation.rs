//! Validation of container probes and lifecycle hooks (upstream `validateProbe`,
//! `validateLivenessProbe` / `validateReadinessProbe` / `validateStartupProbe`,
//! `validateLifecycle`, `validateHandler` and its actions) and of the pod's DNS
//! settings (`validatePodDNSConfig`'s `None` rule), with upstream's paths and messages.
//!
//! Invariants: exactly one handler per probe or hook (the first one set counts, every
//! further one is `Forbidden`, as upstream walks exec, httpGet, tcpSocket, grpc, sleep);
//! init containers that are not restartable sidecars may set neither probes nor hooks.
//!
//! Where to look next: `podspec_validation.rs` calls these for every container list.

use kapi_machinery::validation::{is_valid_port_num, ErrorList, FieldError, FieldPath};
use serde_json::Value;

use super::podspec_validation::is_valid_port_name;
use super::util::{arr_at, i64_at, present, str_at};

const PROBES: [&str; 3] = ["livenessProbe", "readinessProbe", "startupProbe"];

/// Probes and lifecycle of one container of `list` (`containers`, `initContainers`,
/// `ephemeralContainers`; ephemeral ones are checked by their own allow list).
pub fn validate_container_handlers(c: &Value, list: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let sidecar = str_at(c, "/restartPolicy") == "Always";
    match list {
        "containers" => {}
        "initContainers" if sidecar => {}
        "initContainers" => {
            let msg = "may not be set for init containers without restartPolicy=Always";
            for field in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if present(c, &format!("/{field}")).is_some() {
                    errs.push(FieldError::forbidden(&path.child(field), msg));
                }
            }
            return errs;
        }
        _ => return errs,
    }
    if let Some(lifecycle) = present(c, "/lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = present(lifecycle, &format!("/{hook}")) {
                errs.extend(validate_handler(
                    h,
                    true,
                    &path.child("lifecycle").child(hook),
                ));
            }
        }
    }
    for probe in PROBES {
        let Some(p) = present(c, &format!("/{probe}")) else {
            continue;
        };
        let p_path = path.child(probe);
        errs.extend(validate_probe(p, &p_path));
        let success = i64_at(p, "/successThreshold").unwrap_or(0);
        if probe != "readinessProbe" && success != 1 {
            errs.push(FieldError::invalid(
                &p_path.child("successThreshold"),
                success,
                "must be 1",
            ));
        }
        if probe == "readinessProbe" {
            if let Some(t) = i64_at(p, "/terminationGracePeriodSeconds") {
                errs.push(FieldError::invalid(
                    &p_path.child("terminationGracePeriodSeconds"),
                    t,
                    "must not be set for readinessProbes",
                ));
            }
        }
    }
    errs
}

fn validate_probe(p: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_handler(p, false, path);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        let v = i64_at(p, &format!("/{field}")).unwrap_or(0);
        if v < 0 {
            errs.push(FieldError::invalid(
                &path.child(field),
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(t) = i64_at(p, "/terminationGracePeriodSeconds").filter(|t| *t <= 0) {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
    errs
}

/// Upstream `validateHandler`: one action, each validated; `sleep` only in hooks.
fn validate_handler(h: &Value, hook: bool, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut actions = vec!["exec", "httpGet", "tcpSocket", "grpc"];
    if hook {
        actions.retain(|a| *a != "grpc");
        actions.push("sleep");
    }
    let mut found = false;
    for action in actions {
        let Some(a) = present(h, &format!("/{action}")) else {
            continue;
        };
        let a_path = path.child(action);
        if found {
            errs.push(FieldError::forbidden(
                &a_path,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found = true;
        errs.extend(validate_action(action, a, &a_path));
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

fn validate_action(action: &str, a: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    match action {
        "exec" if arr_at(a, "/command").is_empty() => {
            errs.push(FieldError::required(&path.child("command"), ""));
        }
        "httpGet" => {
            if str_at(a, "/path").is_empty() {
                errs.push(FieldError::required(&path.child("path"), ""));
            }
            errs.extend(validate_port_num_or_name(
                a.get("port"),
                &path.child("port"),
            ));
            let scheme = str_at(a, "/scheme");
            if !scheme.is_empty() && !["HTTP", "HTTPS"].contains(&scheme) {
                errs.push(FieldError::not_supported(
                    &path.child("scheme"),
                    scheme,
                    &["HTTP", "HTTPS"],
                ));
            }
        }
        "tcpSocket" => {
            errs.extend(validate_port_num_or_name(
                a.get("port"),
                &path.child("port"),
            ));
        }
        "grpc" => {
            let port = i64_at(a, "/port").unwrap_or(0);
            for m in is_valid_port_num(port) {
                errs.push(FieldError::invalid(&path.child("port"), port, m));
            }
        }
        "sleep" => {
            let secs = i64_at(a, "/seconds").unwrap_or(0);
            if secs < 0 {
                errs.push(FieldError::invalid(
                    &path.child("seconds"),
                    secs,
                    "must be non-negative integer",
                ));
            }
        }
        _ => {}
    }
    errs
}

/// Upstream `ValidatePortNumOrName`.
fn validate_port_num_or_name(port: Option<&Value>, path: &FieldPath) -> ErrorList {
    match port {
        Some(Value::String(s)) => is_valid_port_name(s)
            .into_iter()
            .map(|m| FieldError::invalid(path, s.as_str(), m))
            .collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            is_valid_port_num(n)
                .into_iter()
                .map(|m| FieldError::invalid(path, n, m))
                .collect()
        }
    }
}

/// Upstream `validatePodDNSConfig`'s rule for `dnsPolicy: None`.
pub fn validate_dns_none(spec: &Value, path: &FieldPath) -> ErrorList {
    if str_at(spec, "/dnsPolicy") != "None" {
        return ErrorList::new();
    }
    let config_path = path.child("dnsConfig");
    match present(spec, "/dnsConfig") {
        None => vec![FieldError::required(
            &config_path,
            "must provide `dnsConfig` when `dnsPolicy` is None",
        )],
        Some(c) if arr_at(c, "/nameservers").is_empty() => vec![FieldError::required(
            &config_path.child("nameservers"),
            "must provide at least one DNS nameserver when `dnsPolicy` is None",
        )],
        Some(_) => ErrorList::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn probes_take_exactly_one_handler() {
        let c = json!({"livenessProbe": {"exec": {"command": ["x"]}, "httpGet": {"path": "/", "port": 80},
            "successThreshold": 1}});
        let errs = validate_container_handlers(&c, "containers", &FieldPath::new("c"));
        assert_eq!(
            messages(&errs),
            ["c.livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"]
        );
        let c = json!({"readinessProbe": {"successThreshold": 1}});
        let errs = validate_container_handlers(&c, "containers", &FieldPath::new("c"));
        assert_eq!(
            messages(&errs),
            ["c.readinessProbe: Required value: must specify a handler type"]
        );
    }

    #[test]
    fn probe_fields_and_thresholds() {
        let c = json!({"startupProbe": {"tcpSocket": {"port": 0}, "successThreshold": 2, "periodSeconds": -1},
            "readinessProbe": {"grpc": {"port": 70000}, "terminationGracePeriodSeconds": 5}});
        let errs = validate_container_handlers(&c, "containers", &FieldPath::new("c"));
        assert_eq!(
            messages(&errs),
            [
                "c.readinessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "c.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
                "c.startupProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "c.startupProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "c.startupProbe.successThreshold: Invalid value: 2: must be 1",
            ]
        );
    }

    #[test]
    fn init_containers_and_dns_none() {
        let c = json!({"livenessProbe": {"exec": {"command": ["x"]}}});
        let errs = validate_container_handlers(&c, "initContainers", &FieldPath::new("i"));
        assert_eq!(
            messages(&errs),
            ["i.livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"]
        );
        let spec = json!({"dnsPolicy": "None"});
        assert_eq!(
            messages(&validate_dns_none(&spec, &FieldPath::new("spec"))),
            ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]
        );
        let spec = json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]}});
        assert!(validate_dns_none(&spec, &FieldPath::new("spec")).is_empty());
    }
}
