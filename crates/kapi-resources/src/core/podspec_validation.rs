//! Validation of `PodSpec` and `PodTemplateSpec` (upstream `ValidatePodSpec`,
//! `validateContainers`, `validateContainerPorts`, `validateVolumes`, ...), with
//! upstream's field paths and messages.
//!
//! Invariants: every failed rule is reported (no early return); paths are built from
//! the caller's path so the same checks serve `spec` (pods) and `spec.template.spec`
//! (workloads). Scope: the rules users meet in practice — names, images, ports,
//! enums, env names, volumes and mounts, resources, probes and hooks (`probe_validation.rs`);
//! not every upstream rule.
//!
//! Where to look next: `pod.rs` (pod-only rules and update rules), `apps/mod.rs`.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_valid_port_num, validate_annotations,
    validate_labels, ErrorList, FieldError, FieldPath,
};
use serde_json::Value;

use super::podspec::volume_sources;
use super::probe_validation::{validate_container_handlers, validate_dns_none};
use super::quantity::quantity_value;
use super::util::{arr_at, i64_at, present, str_at};

const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
const MESSAGE_POLICIES: [&str; 2] = ["File", "FallbackToLogsOnError"];
/// Upstream `supportedPortProtocols`, sorted.
pub const PORT_PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// Upstream `ValidateDNS1123Label` on a field.
pub fn validate_dns_label(value: &str, path: &FieldPath) -> ErrorList {
    is_dns1123_label(value)
        .into_iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect()
}

/// Upstream `IsValidPortName`.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    let charset = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-';
    if port.is_empty() || !port.bytes().all(charset) {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens (--)".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen (-)".to_string());
    }
    errs
}

/// `Required` when empty, `NotSupported` when not one of `valid`.
pub fn validate_enum(value: Option<&Value>, valid: &[&str], path: &FieldPath) -> ErrorList {
    match value.and_then(Value::as_str).unwrap_or("") {
        "" => vec![FieldError::required(path, "")],
        v if valid.contains(&v) => Vec::new(),
        v => vec![FieldError::not_supported(path, v, valid)],
    }
}

/// Upstream `ValidatePodTemplateSpec`.
pub fn validate_pod_template_spec(template: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_labels(present(template, "/metadata/labels"), &path.child("labels"));
    errs.extend(validate_annotations(
        present(template, "/metadata/annotations"),
        &path.child("annotations"),
    ));
    let spec = template.get("spec").unwrap_or(&Value::Null);
    errs.extend(validate_pod_spec(spec, &path.child("spec")));
    if !arr_at(spec, "/ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// Upstream `ValidatePodSpec` (the commonly met rules).
pub fn validate_pod_spec(spec: &Value, path: &FieldPath) -> ErrorList {
    let volumes = arr_at(spec, "/volumes");
    let mut errs = validate_volumes(volumes, &path.child("volumes"));
    let names: BTreeSet<&str> = volumes.iter().map(|v| str_at(v, "/name")).collect();
    errs.extend(validate_containers(spec, &names, path));
    errs.extend(validate_enum(
        spec.get("restartPolicy"),
        &RESTART_POLICIES,
        &path.child("restartPolicy"),
    ));
    errs.extend(validate_enum(
        spec.get("dnsPolicy"),
        &DNS_POLICIES,
        &path.child("dnsPolicy"),
    ));
    errs.extend(validate_dns_none(spec, path));
    errs.extend(validate_labels(
        present(spec, "/nodeSelector"),
        &path.child("nodeSelector"),
    ));
    for (field, value) in
        ["serviceAccountName", "nodeName"].map(|f| (f, str_at(spec, &format!("/{f}"))))
    {
        for msg in is_dns1123_subdomain(value)
            .into_iter()
            .filter(|_| !value.is_empty())
        {
            errs.push(FieldError::invalid(&path.child(field), value, msg));
        }
    }
    if let Some(ads) = i64_at(spec, "/activeDeadlineSeconds") {
        if !(1..=i64::from(i32::MAX)).contains(&ads) {
            let msg = kapi_machinery::validation::inclusive_range_error(1, i64::from(i32::MAX));
            errs.push(FieldError::invalid(
                &path.child("activeDeadlineSeconds"),
                ads,
                msg,
            ));
        }
    }
    for field in ["hostname", "subdomain"] {
        let value = str_at(spec, &format!("/{field}"));
        if !value.is_empty() {
            errs.extend(validate_dns_label(value, &path.child(field)));
        }
    }
    errs
}

fn validate_volumes(volumes: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = BTreeSet::new();
    for (i, vol) in volumes.iter().enumerate() {
        let name_path = path.index(i).child("name");
        let sources = volume_sources(vol);
        if sources.is_empty() {
            errs.push(FieldError::required(
                &path.index(i),
                "must specify a volume type",
            ));
        }
        for extra in sources.iter().skip(1) {
            errs.push(FieldError::forbidden(
                &path.index(i).child(extra),
                "may not specify more than 1 volume type",
            ));
        }
        let name = str_at(vol, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            errs.extend(validate_dns_label(name, &name_path));
        }
        if !seen.insert(name) {
            errs.push(FieldError::duplicate(&name_path, name));
        }
    }
    errs
}

fn validate_containers(spec: &Value, volumes: &BTreeSet<&str>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let containers = arr_at(spec, "/containers");
    if containers.is_empty() {
        errs.push(FieldError::required(&path.child("containers"), ""));
    }
    let mut names = BTreeSet::new();
    for list in super::podspec::CONTAINER_LISTS {
        for (i, c) in arr_at(spec, &format!("/{list}")).iter().enumerate() {
            let c_path = path.child(list).index(i);
            errs.extend(validate_container(c, volumes, &c_path));
            let name = str_at(c, "/name");
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&c_path.child("name"), name));
            }
            errs.extend(validate_container_handlers(c, list, &c_path));
        }
    }
    errs
}

/// Upstream `validateContainerCommon`.
fn validate_container(c: &Value, volumes: &BTreeSet<&str>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(c, "/name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        errs.extend(validate_dns_label(name, &path.child("name")));
    }
    if str_at(c, "/image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    let policy = path.child("terminationMessagePolicy");
    errs.extend(validate_enum(
        c.get("terminationMessagePolicy"),
        &MESSAGE_POLICIES,
        &policy,
    ));
    errs.extend(validate_container_ports(
        arr_at(c, "/ports"),
        &path.child("ports"),
    ));
    errs.extend(validate_env(arr_at(c, "/env"), &path.child("env")));
    errs.extend(validate_mounts(
        arr_at(c, "/volumeMounts"),
        volumes,
        &path.child("volumeMounts"),
    ));
    errs.extend(validate_enum(
        c.get("imagePullPolicy"),
        &PULL_POLICIES,
        &path.child("imagePullPolicy"),
    ));
    errs.extend(validate_resources(
        c.get("resources"),
        &path.child("resources"),
    ));
    errs
}

/// Upstream `validateContainerPorts`.
pub fn validate_container_ports(ports: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = str_at(port, "/name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                msgs.into_iter()
                    .for_each(|m| errs.push(FieldError::invalid(&p.child("name"), name, m)));
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
        }
        match i64_at(port, "/containerPort").unwrap_or(0) {
            0 => errs.push(FieldError::required(&p.child("containerPort"), "")),
            n => is_valid_port_num(n)
                .into_iter()
                .for_each(|m| errs.push(FieldError::invalid(&p.child("containerPort"), n, m))),
        }
        if let Some(host) = i64_at(port, "/hostPort").filter(|h| *h != 0) {
            for m in is_valid_port_num(host) {
                errs.push(FieldError::invalid(&p.child("hostPort"), host, m));
            }
        }
        errs.extend(validate_enum(
            port.get("protocol"),
            &PORT_PROTOCOLS,
            &p.child("protocol"),
        ));
    }
    errs
}

/// Upstream `ValidateEnv` with relaxed variable names (on by default since 1.32).
fn validate_env(env: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, e) in env.iter().enumerate() {
        let name_path = path.index(i).child("name");
        let name = str_at(e, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else if !name.bytes().all(|c| (32..=126).contains(&c) && c != b'=') {
            let msg = "a valid environment variable name must consist only of printable ASCII characters other than '='";
            errs.push(FieldError::invalid(&name_path, name, msg));
        }
    }
    errs
}

fn validate_mounts(mounts: &[Value], volumes: &BTreeSet<&str>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut mount_points = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        let name = str_at(m, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(FieldError::not_found(&p.child("name"), name));
        }
        let mount_path = str_at(m, "/mountPath");
        if mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
    }
    errs
}

/// Requests may not exceed limits; quantities must parse.
fn validate_resources(resources: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(resources) = resources else {
        return errs;
    };
    for kind in ["limits", "requests"] {
        for (name, q) in resources
            .get(kind)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let p = path.child(kind).key(name);
            match quantity_value(q) {
                None => errs.push(FieldError::invalid(
                    &p,
                    q.clone(),
                    "must be a valid quantity",
                )),
                Some(v) if v < 0.0 => errs.push(FieldError::invalid(
                    &p,
                    q.clone(),
                    "must be greater than or equal to 0",
                )),
                Some(_) => {}
            }
        }
    }
    let limits = resources.get("limits").and_then(Value::as_object);
    for (name, req) in resources
        .get("requests")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(limit) = limits.and_then(|l| l.get(name)) else {
            continue;
        };
        if let (Some(r), Some(l)) = (quantity_value(req), quantity_value(limit)) {
            if r > l {
                let shown = |q: &Value| q.as_str().map_or_else(|| q.to_string(), str::to_string);
                let msg = format!(
                    "must be less than or equal to {name} limit of {}",
                    shown(limit)
                );
                errs.push(FieldError::invalid(
                    &path.child("requests").key(name),
                    shown(req),
                    msg,
                ));
            }
        }
    }
    errs
}
