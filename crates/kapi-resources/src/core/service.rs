//! Services: upstream `SetDefaults_Service`, the IP-family fields the service
//! registry fills in (when the object is prepared, after admission), validation of type, ports, selector and cluster IPs, carrying
//! allocated values (cluster IPs, node ports) across a PUT that omits them, the
//! `spec.clusterIP` / `spec.type` field selectors and the `kubectl get svc` table.
//!
//! Invariant: no allocation happens here — cluster IPs and node ports are assigned by
//! admission; this strategy only keeps them stable once assigned.
//!
//! Where to look next: `endpoints.rs`; `podspec_validation.rs` for the port checks.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1123_subdomain, is_valid_ip, is_valid_port_num, name_is_dns1035_label, validate_labels,
    ErrorList, FieldError, FieldPath, ValidateNameFn,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::podspec_validation::{
    is_valid_port_name, validate_dns_label, validate_enum, PORT_PROTOCOLS,
};
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{
    arr_at, for_each_item, format_labels, i64_at, obj_at, present, set_default, set_default_str,
    str_at,
};

pub struct ServiceStrategy;

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// The IP-family fields upstream's service registry fills in when it
/// allocates (so after mutating admission, and outside the fields the
/// request's manager is recorded for): on an update whose cluster IPs are
/// unchanged, the stored service's; else the family of the cluster IP and a
/// single-stack policy. Not for ExternalName services, which have none.
fn init_ip_families(obj: &mut Value, old: Option<&Value>) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    if str_at(spec, "/type") == "ExternalName" {
        return;
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        if spec.get("clusterIPs") == old_spec.get("clusterIPs") {
            for field in ["ipFamilies", "ipFamilyPolicy"] {
                let unset = spec.get(field).is_none_or(Value::is_null);
                if let (true, Some(v)) = (unset, old_spec.get(field)) {
                    spec[field] = v.clone();
                }
            }
        }
    }
    let family = if str_at(spec, "/clusterIP").contains(':') {
        "IPv6"
    } else {
        "IPv4"
    };
    set_default(spec, "ipFamilies", json!([family]));
    set_default_str(spec, "ipFamilyPolicy", "SingleStack");
}

impl Strategy for ServiceStrategy {
    crate::core::object_warnings::warning_methods!(crate::core::object_warnings::service_warnings);

    fn default(&self, obj: &mut Value) {
        super::util::default_status(obj, json!({"loadBalancer": {}}));
        let Some(spec) = super::util::child_obj(obj, "spec") else {
            return;
        };
        set_default_str(spec, "type", "ClusterIP");
        set_default_str(spec, "sessionAffinity", "None");
        if str_at(spec, "/sessionAffinity") == "ClientIP" {
            let timeout = spec.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds");
            if timeout.is_none_or(Value::is_null) {
                spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
            }
        }
        for_each_item(spec, "ports", |p| {
            set_default_str(p, "protocol", "TCP");
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(v) => v.as_i64() == Some(0),
            };
            if let (true, Some(port)) = (unset, p.get("port").cloned()) {
                p["targetPort"] = port;
            }
        });
        let type_ = str_at(spec, "/type").to_string();
        if externally_accessible(spec) {
            set_default_str(spec, "externalTrafficPolicy", "Cluster");
        }
        if type_ == "LoadBalancer" {
            set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        if str_at(spec, "/sessionAffinity") == "None" {
            if let Some(m) = spec.as_object_mut() {
                m.remove("sessionAffinityConfig");
            }
        }
        if type_ != "ExternalName" {
            set_default_str(spec, "internalTrafficPolicy", "Cluster");
            let cluster_ip = str_at(spec, "/clusterIP").to_string();
            if !cluster_ip.is_empty() {
                set_default(spec, "clusterIPs", json!([cluster_ip]));
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        init_ip_families(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        service_update::prepare(new, old);
        init_ip_families(new, Some(old));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            &FieldPath::new("spec"),
        )
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = service_update::validate(new, old);
        errs.extend(self.validate(new));
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        name_is_dns1035_label
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.clusterIP", "spec.type"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "spec.clusterIP" => Some(str_at(obj, "/spec/clusterIP").to_string()),
            "spec.type" => Some(str_at(obj, "/spec/type").to_string()),
            _ => None,
        }
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
            string_column("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
            string_column("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
            string_column("Port(s)", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
            age_column(),
            string_column("Selector", "Route service traffic to pods with label keys and values matching this selector.").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ip = primary_ip(obj);
        let ports = port_string(arr_at(obj, "/spec/ports"));
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/type")),
            json!(if ip.is_empty() { "<none>" } else { ip }),
            json!(external_ip(obj)),
            json!(if ports.is_empty() {
                "<none>".to_string()
            } else {
                ports
            }),
            age_cell(obj),
            json!(format_labels(obj_at(obj, "/spec/selector"))),
        ]
    }
}

/// `spec.clusterIPs[0]`, falling back to `spec.clusterIP`.
fn primary_ip(obj: &Value) -> &str {
    match arr_at(obj, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
    {
        Some(ip) => ip,
        None => str_at(obj, "/spec/clusterIP"),
    }
}

fn validate_spec(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_enum(spec.get("type"), &TYPES, &path.child("type"));
    let type_ = str_at(spec, "/type");
    let headless = str_at(spec, "/clusterIP") == "None";
    let ports = arr_at(spec, "/ports");
    if ports.is_empty() && !headless && type_ != "ExternalName" {
        errs.push(FieldError::required(&path.child("ports"), ""));
    }
    if type_ == "ExternalName" {
        errs.extend(validate_external_name(spec, path));
    }
    if matches!(type_, "LoadBalancer" | "NodePort") && headless {
        errs.push(FieldError::invalid(
            &path.child("clusterIPs").index(0),
            "None",
            format!("may not be set to 'None' for {type_} services"),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(validate_port(
            port,
            ports.len() > 1,
            type_,
            &path.child("ports").index(i),
        ));
        let name = str_at(port, "/name");
        if !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(
                &path.child("ports").index(i).child("name"),
                name,
            ));
        }
    }
    errs.extend(service_update::duplicate_ports(ports, &path.child("ports")));
    errs.extend(service_update::validate_cluster_ips(spec, path));
    errs.extend(service_update::validate_traffic_policy(spec, path));
    errs.extend(validate_labels(
        present(spec, "/selector"),
        &path.child("selector"),
    ));
    let affinity = path.child("sessionAffinity");
    errs.extend(validate_enum(
        spec.get("sessionAffinity"),
        &["ClientIP", "None"],
        &affinity,
    ));
    for (i, ip) in arr_at(spec, "/clusterIPs")
        .iter()
        .filter_map(Value::as_str)
        .enumerate()
    {
        if ip != "None" {
            for msg in is_valid_ip(ip) {
                errs.push(FieldError::invalid(
                    &path.child("clusterIPs").index(i),
                    ip,
                    msg,
                ));
            }
        }
    }
    errs
}

fn validate_external_name(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for field in ["clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let set = match present(spec, &format!("/{field}")) {
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
            None => false,
        };
        if set {
            let msg = "may not be set for ExternalName services";
            errs.push(FieldError::forbidden(&path.child(field), msg));
        }
    }
    // A trailing dot marks the CNAME as fully qualified.
    let name = str_at(spec, "/externalName").trim_end_matches('.');
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("externalName"), ""));
        return errs;
    }
    errs.extend(
        is_dns1123_subdomain(name)
            .into_iter()
            .map(|m| FieldError::invalid(&path.child("externalName"), name, m)),
    );
    errs
}

/// Upstream `ExternallyAccessible`: node ports, load balancers or external IPs.
pub(super) fn externally_accessible(spec: &Value) -> bool {
    match str_at(spec, "/type") {
        "NodePort" | "LoadBalancer" => true,
        "ClusterIP" => !arr_at(spec, "/externalIPs").is_empty(),
        _ => false,
    }
}

fn validate_port(port: &Value, require_name: bool, type_: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(port, "/name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(validate_dns_label(name, &path.child("name")));
    }
    let number = i64_at(port, "/port").unwrap_or(0);
    for msg in is_valid_port_num(number) {
        errs.push(FieldError::invalid(&path.child("port"), number, msg));
    }
    errs.extend(validate_enum(
        port.get("protocol"),
        &PORT_PROTOCOLS,
        &path.child("protocol"),
    ));
    let target = path.child("targetPort");
    match port.get("targetPort") {
        Some(Value::String(s)) => is_valid_port_name(s)
            .into_iter()
            .for_each(|m| errs.push(FieldError::invalid(&target, s.as_str(), m))),
        Some(v) => is_valid_port_num(v.as_i64().unwrap_or(0))
            .into_iter()
            .for_each(|m| errs.push(FieldError::invalid(&target, v.clone(), m))),
        None => {}
    }
    if type_ == "ClusterIP" && i64_at(port, "/nodePort").unwrap_or(0) != 0 {
        let msg = "may not be used when `type` is 'ClusterIP'";
        errs.push(FieldError::forbidden(&path.child("nodePort"), msg));
    }
    errs
}

/// Upstream `makePortString`.
fn port_string(ports: &[Value]) -> String {
    let piece = |p: &Value| {
        let (port, proto) = (i64_at(p, "/port").unwrap_or(0), str_at(p, "/protocol"));
        match i64_at(p, "/nodePort").unwrap_or(0) {
            n if n > 0 => format!("{port}:{n}/{proto}"),
            _ => format!("{port}/{proto}"),
        }
    };
    ports.iter().map(piece).collect::<Vec<_>>().join(",")
}

/// Upstream `getServiceExternalIP` in wide form (the server prints wide cells).
fn external_ip(obj: &Value) -> String {
    let external: Vec<&str> = arr_at(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match str_at(obj, "/spec/type") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let mut lb: Vec<&str> = arr_at(obj, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| match str_at(i, "/ip") {
                    "" => str_at(i, "/hostname"),
                    ip => ip,
                })
                .filter(|s| !s.is_empty())
                .collect();
            lb.sort();
            lb.dedup();
            lb.extend(external);
            if lb.is_empty() {
                "<pending>".to_string()
            } else {
                lb.join(",")
            }
        }
        "ExternalName" => str_at(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

#[path = "service_update.rs"]
mod service_update;

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
