//! Ingresses and IngressClasses: upstream `ValidateIngressSpec` (rules or a default
//! backend, hosts, HTTP paths and their types, service or resource backends, TLS
//! hosts), `ValidateIngressClass` (a domain-prefixed, immutable controller; the
//! parameters reference), the parameters' `Cluster` scope default, and the
//! `NAME CLASS HOSTS ADDRESS PORTS AGE` / `NAME CONTROLLER PARAMETERS AGE` tables.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_ip, is_valid_port_num, ErrorList, FieldError,
    FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::batch::policies::is_domain_prefixed_path;
use crate::core::podspec_validation::is_valid_port_name;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, present, set_default, str_at};

pub struct IngressStrategy;
pub struct IngressClassStrategy;

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
const MAX_CONTROLLER_LEN: usize = 250;

/// Upstream `IsWildcardDNS1123Subdomain` or `IsDNS1123Subdomain`, plus the no-IP rule.
fn validate_host(host: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if is_valid_ip(host).is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            "must be a DNS name, not an IP address",
        ));
    }
    let msgs = match host.strip_prefix("*.") {
        Some(rest) if !rest.contains('*') => is_dns1123_subdomain(rest),
        _ => is_dns1123_subdomain(host),
    };
    errs.extend(msgs.into_iter().map(|m| FieldError::invalid(path, host, m)));
    errs
}

fn validate_backend(backend: &Value, path: &FieldPath) -> ErrorList {
    let (service, resource) = (present(backend, "/service"), present(backend, "/resource"));
    match (service, resource) {
        (Some(_), Some(_)) => vec![FieldError::invalid(
            path,
            "",
            "cannot set both resource and service backends",
        )],
        (None, None) => vec![FieldError::invalid(
            path,
            "",
            "resource or service backend is required",
        )],
        (None, Some(r)) => {
            let mut errs = ErrorList::new();
            for field in ["kind", "name"] {
                if str_at(r, &format!("/{field}")).is_empty() {
                    errs.push(FieldError::required(
                        &path.child("resource").child(field),
                        "",
                    ));
                }
            }
            errs
        }
        (Some(s), None) => {
            let sp = path.child("service");
            let mut errs = ErrorList::new();
            let name = str_at(s, "/name");
            if name.is_empty() {
                errs.push(FieldError::required(&sp.child("name"), ""));
            } else {
                errs.extend(
                    is_dns1035_label(name)
                        .into_iter()
                        .map(|m| FieldError::invalid(&sp.child("name"), name, m)),
                );
            }
            let pp = sp.child("port");
            let port_name = str_at(s, "/port/name");
            let number = present(s, "/port/number").and_then(Value::as_i64);
            match (port_name.is_empty(), number) {
                (false, Some(_)) => errs.push(FieldError::invalid(
                    &pp,
                    "",
                    "cannot set both port name & port number",
                )),
                (false, None) => errs.extend(
                    is_valid_port_name(port_name)
                        .into_iter()
                        .map(|m| FieldError::invalid(&pp.child("name"), port_name, m)),
                ),
                (true, Some(n)) => errs.extend(
                    is_valid_port_num(n)
                        .into_iter()
                        .map(|m| FieldError::invalid(&pp.child("number"), n, m)),
                ),
                (true, None) => {
                    errs.push(FieldError::required(&pp, "port name or number is required"))
                }
            }
            errs
        }
    }
}

fn validate_paths(http: &Value, path: &FieldPath) -> ErrorList {
    let paths = arr_at(http, "/paths");
    let pp = path.child("paths");
    if paths.is_empty() {
        return vec![FieldError::required(&pp, "")];
    }
    let mut errs = ErrorList::new();
    for (i, p) in paths.iter().enumerate() {
        let ip = pp.index(i);
        let value = str_at(p, "/path");
        match present(p, "/pathType").and_then(Value::as_str) {
            None => errs.push(FieldError::required(
                &ip.child("pathType"),
                "pathType must be specified",
            )),
            Some("Exact" | "Prefix") if !value.starts_with('/') => errs.push(FieldError::invalid(
                &ip.child("path"),
                value,
                "must be an absolute path",
            )),
            Some("ImplementationSpecific") if !value.is_empty() && !value.starts_with('/') => errs
                .push(FieldError::invalid(
                    &ip.child("path"),
                    value,
                    "must be an absolute path",
                )),
            Some(t) if !PATH_TYPES.contains(&t) => errs.push(FieldError::not_supported(
                &ip.child("pathType"),
                t,
                &PATH_TYPES,
            )),
            Some(_) => {}
        }
        errs.extend(validate_backend(
            p.get("backend").unwrap_or(&Value::Null),
            &ip.child("backend"),
        ));
    }
    errs
}

impl Strategy for IngressStrategy {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        crate::core::object_warnings::ingress_warnings(obj)
    }

    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({"loadBalancer": {}}));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let rules = arr_at(spec, "/rules");
        let mut errs = ErrorList::new();
        let default_backend = present(spec, "/defaultBackend");
        if rules.is_empty() && default_backend.is_none() {
            errs.push(FieldError::invalid(
                &path,
                Value::Null,
                "either `defaultBackend` or `rules` must be specified",
            ));
        }
        if let Some(b) = default_backend {
            errs.extend(validate_backend(b, &path.child("defaultBackend")));
        }
        for (i, rule) in rules.iter().enumerate() {
            let rp = path.child("rules").index(i);
            let host = str_at(rule, "/host");
            if !host.is_empty() {
                errs.extend(validate_host(host, &rp.child("host")));
            }
            if let Some(http) = present(rule, "/http") {
                errs.extend(validate_paths(http, &rp.child("http")));
            }
        }
        for (i, tls) in arr_at(spec, "/tls").iter().enumerate() {
            for (j, host) in arr_at(tls, "/hosts").iter().enumerate() {
                let host = host.as_str().unwrap_or("");
                errs.extend(validate_host(
                    host,
                    &path.child("tls").index(i).child("hosts").index(j),
                ));
            }
        }
        if let Some(class) = present(spec, "/ingressClassName").and_then(Value::as_str) {
            errs.extend(
                is_dns1123_subdomain(class)
                    .into_iter()
                    .map(|m| FieldError::invalid(&path.child("ingressClassName"), class, m)),
            );
        }
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Class", "The name of the IngressClass resource that should be used for additional configuration"),
            string_column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
            string_column("Address", "Address is a list containing ingress points for the load-balancer"),
            string_column("Ports", "Ports of TLS configurations that open"),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let class = present(obj, "/spec/ingressClassName")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let ports = if arr_at(obj, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        vec![
            name_cell(obj),
            json!(class),
            json!(hosts_cell(obj)),
            json!(address_cell(obj)),
            json!(ports),
            age_cell(obj),
        ]
    }
}

/// Upstream `formatHosts`: up to three hosts, then `+ N more...`; `*` when none.
fn hosts_cell(obj: &Value) -> String {
    let rules = arr_at(obj, "/spec/rules");
    let (mut list, mut more) = (Vec::new(), false);
    for rule in rules {
        if list.len() == 3 {
            more = true;
        }
        let host = str_at(rule, "/host");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    match (list.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, true) => format!("{} + {} more...", list.join(","), rules.len() - 3),
        (false, false) => list.join(","),
    }
}

/// Upstream `ingressLoadBalancerStatusStringer` (wide): sorted unique IPs or hostnames.
fn address_cell(obj: &Value) -> String {
    let set: BTreeSet<&str> = arr_at(obj, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| match str_at(i, "/ip") {
            "" => str_at(i, "/hostname"),
            ip => ip,
        })
        .filter(|s| !s.is_empty())
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

impl Strategy for IngressClassStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(params) = child_obj(obj, "spec")
            .and_then(|s| s.get_mut("parameters"))
            .filter(|p| p.is_object())
        {
            set_default(params, "scope", json!("Cluster"));
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let controller = str_at(obj, "/spec/controller");
        let cp = path.child("controller");
        let mut errs = is_domain_prefixed_path(&cp, controller);
        if controller.len() > MAX_CONTROLLER_LEN {
            errs.push(FieldError::too_long(&cp, controller, MAX_CONTROLLER_LEN));
        }
        if let Some(params) = present(obj, "/spec/parameters") {
            let pp = path.child("parameters");
            for field in ["kind", "name"] {
                if str_at(params, &format!("/{field}")).is_empty() {
                    errs.push(FieldError::required(&pp.child(field), ""));
                }
            }
            match str_at(params, "/scope") {
                "Cluster" if present(params, "/namespace").is_some() => {
                    errs.push(FieldError::forbidden(
                        &pp.child("namespace"),
                        "`parameters.scope` is set to 'Cluster'",
                    ))
                }
                "Namespace" if str_at(params, "/namespace").is_empty() => {
                    errs.push(FieldError::required(
                        &pp.child("namespace"),
                        "`parameters.scope` is set to 'Namespace'",
                    ))
                }
                "Cluster" | "Namespace" => {}
                other => errs.push(FieldError::not_supported(
                    &pp.child("scope"),
                    other,
                    &["Cluster", "Namespace"],
                )),
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        if new.pointer("/spec/controller") != old.pointer("/spec/controller") {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec").child("controller"),
                str_at(new, "/spec/controller"),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column(
                "Controller",
                "Controller that is responsible for handling this class",
            ),
            string_column(
                "Parameters",
                "A reference to a resource with additional parameters",
            ),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let params = match present(obj, "/spec/parameters") {
            None => "<none>".to_string(),
            Some(p) => {
                let mut s = str_at(p, "/kind").to_string();
                if let Some(g) = present(p, "/apiGroup").and_then(Value::as_str) {
                    s = format!("{s}.{g}");
                }
                format!("{s}/{}", str_at(p, "/name"))
            }
        };
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/controller")),
            json!(params),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ingress_rules() {
        let ok = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com",
            "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}});
        assert!(
            IngressStrategy.validate(&ok).is_empty(),
            "{:?}",
            IngressStrategy.validate(&ok)
        );
        assert_eq!(
            IngressStrategy.cells(&ok)[1..5],
            [
                json!("nginx"),
                json!("a.example.com"),
                json!(""),
                json!("80")
            ]
        );
        let mut bad = ok.clone();
        bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = Value::Null;
        bad["spec"]["rules"][0]["http"]["paths"][0]["backend"] =
            json!({"service": {"name": "web", "port": {}}});
        assert_eq!(msgs(IngressStrategy.validate(&bad)), vec![
            "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
            "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required",
        ]);
        let empty = json!({"spec": {}});
        assert_eq!(
            msgs(IngressStrategy.validate(&empty)),
            vec!["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
    }

    #[test]
    fn ingress_class_rules() {
        let mut ic = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"kind": "Config", "name": "c", "apiGroup": "example.com"}}});
        IngressClassStrategy.default(&mut ic);
        assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
        assert!(IngressClassStrategy.validate(&ic).is_empty());
        assert_eq!(IngressClassStrategy.cells(&ic)[2], "Config.example.com/c");
        let mut changed = ic.clone();
        changed["spec"]["controller"] = json!("example.com/other");
        assert_eq!(
            msgs(IngressClassStrategy.validate_update(&changed, &ic)),
            vec!["spec.controller: Invalid value: \"example.com/other\": field is immutable",]
        );
        let bad = json!({"spec": {"controller": "nope"}});
        assert_eq!(msgs(IngressClassStrategy.validate(&bad)), vec![
            "spec.controller: Invalid value: \"nope\": must be a domain-prefixed path (such as \"acme.io/foo\")",
        ]);
    }
}
