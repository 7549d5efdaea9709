//! NetworkPolicies: `policyTypes` defaulted from the rules present, ports default to
//! TCP, upstream `ValidateNetworkPolicySpec` (selectors, ports, peers, policy types)
//! and the `NAME POD-SELECTOR AGE` table.

use kapi_machinery::validation::{is_valid_port_num, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::batch::validate_label_selector;
use crate::core::podspec_validation::{is_valid_port_name, PORT_PROTOCOLS};
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, present, set_default, str_at};

pub struct NetworkPolicyStrategy;

const POLICY_TYPES: [&str; 2] = ["Egress", "Ingress"];

fn default_ports(rules: Option<&mut Value>) {
    for rule in rules.and_then(Value::as_array_mut).into_iter().flatten() {
        for port in rule
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            set_default(port, "protocol", json!("TCP"));
        }
    }
}

fn validate_port(port: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(proto) = present(port, "/protocol").and_then(Value::as_str) {
        if !PORT_PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(
                &path.child("protocol"),
                proto,
                &PORT_PROTOCOLS,
            ));
        }
    }
    match present(port, "/port") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(-1);
            errs.extend(
                is_valid_port_num(n)
                    .into_iter()
                    .map(|m| FieldError::invalid(&path.child("port"), n, m)),
            );
            if let Some(end) = present(port, "/endPort").and_then(Value::as_i64) {
                if end < n {
                    errs.push(FieldError::invalid(
                        &path.child("endPort"),
                        end,
                        "must be greater than or equal to `port`",
                    ));
                }
            }
        }
        Some(Value::String(s)) => {
            errs.extend(
                is_valid_port_name(s)
                    .into_iter()
                    .map(|m| FieldError::invalid(&path.child("port"), s.as_str(), m)),
            );
            if present(port, "/endPort").is_some() {
                errs.push(FieldError::invalid(
                    &path.child("endPort"),
                    port["endPort"].clone(),
                    "may not be specified when `port` is non-numeric",
                ));
            }
        }
        _ => {
            if present(port, "/endPort").is_some() {
                errs.push(FieldError::required(
                    &path.child("port"),
                    "when endPort is specified",
                ));
            }
        }
    }
    errs
}

fn validate_peer(peer: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut count = 0;
    if let Some(s) = present(peer, "/podSelector") {
        count += 1;
        errs.extend(validate_label_selector(s, &path.child("podSelector")));
    }
    if let Some(s) = present(peer, "/namespaceSelector") {
        count += 1;
        errs.extend(validate_label_selector(s, &path.child("namespaceSelector")));
    }
    if let Some(block) = present(peer, "/ipBlock") {
        count += 1;
        errs.extend(validate_ip_block(block, &path.child("ipBlock")));
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if present(peer, "/ipBlock").is_some() && count > 1 {
        errs.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

pub(crate) const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// An address and prefix length as `u128` bits (IPv4 in the low 32), or `None`;
/// read as Go's sloppy parser reads them (IPv4 parts may have leading zeros).
pub(crate) fn parse_cidr(s: &str) -> Option<(bool, u128, u32)> {
    let (ip, bits) = s.split_once('/')?;
    let bits: u32 = bits.parse().ok()?;
    let ip = ip
        .parse::<std::net::IpAddr>()
        .ok()
        .or_else(|| crate::core::object_warnings::sloppy_v4(ip).map(std::net::IpAddr::V4))?;
    match ip {
        std::net::IpAddr::V4(v4) if bits <= 32 => Some((true, u32::from(v4).into(), bits)),
        std::net::IpAddr::V6(v6) if bits <= 128 => Some((false, u128::from(v6), bits)),
        _ => None,
    }
}

/// `addr` masked to the network of a `bits`-long prefix in a `width`-bit space.
fn network(addr: u128, bits: u32, width: u32) -> u128 {
    let host_bits = width - bits;
    if host_bits >= 128 {
        0
    } else {
        addr >> host_bits << host_bits
    }
}

/// Upstream `ValidateIPBlock`: a valid `cidr`, and every `except` a strict subset.
fn validate_ip_block(block: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let cidr = str_at(block, "/cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&path.child("cidr"), ""));
        return errs;
    }
    let Some((v4, addr, bits)) = parse_cidr(cidr) else {
        errs.push(FieldError::invalid(&path.child("cidr"), cidr, CIDR_MSG));
        return errs;
    };
    let width = if v4 { 32 } else { 128 };
    for (i, except) in arr_at(block, "/except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let except_path = path.child("except").index(i);
        match parse_cidr(except) {
            None => errs.push(FieldError::invalid(&except_path, except, CIDR_MSG)),
            Some((e_v4, e_addr, e_bits)) => {
                let inside =
                    e_v4 == v4 && network(e_addr, bits, width) == network(addr, bits, width);
                if !inside || bits >= e_bits {
                    let msg = "must be a strict subset of `cidr`";
                    errs.push(FieldError::invalid(&except_path, except, msg));
                }
            }
        }
    }
    errs
}

fn validate_rules(obj: &Value, key: &str, peers: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, rule) in arr_at(obj, &format!("/spec/{key}")).iter().enumerate() {
        let rp = path.child(key).index(i);
        for (j, port) in arr_at(rule, "/ports").iter().enumerate() {
            errs.extend(validate_port(port, &rp.child("ports").index(j)));
        }
        for (j, peer) in arr_at(rule, &format!("/{peers}")).iter().enumerate() {
            errs.extend(validate_peer(peer, &rp.child(peers).index(j)));
        }
    }
    errs
}

impl Strategy for NetworkPolicyStrategy {
    crate::core::object_warnings::warning_methods!(
        crate::core::object_warnings::network_policy_warnings
    );

    fn default(&self, obj: &mut Value) {
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if arr_at(spec, "/policyTypes").is_empty() {
            let mut types = vec![json!("Ingress")];
            if !arr_at(spec, "/egress").is_empty() {
                types.push(json!("Egress"));
            }
            spec["policyTypes"] = Value::Array(types);
        }
        default_ports(spec.get_mut("ingress"));
        default_ports(spec.get_mut("egress"));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let mut errs = match present(obj, "/spec/podSelector") {
            Some(s) => validate_label_selector(s, &path.child("podSelector")),
            None => Vec::new(),
        };
        errs.extend(validate_rules(obj, "ingress", "from", &path));
        errs.extend(validate_rules(obj, "egress", "to", &path));
        let types = arr_at(obj, "/spec/policyTypes");
        for (i, t) in types.iter().enumerate() {
            let t = t.as_str().unwrap_or("");
            if !POLICY_TYPES.contains(&t) {
                errs.push(FieldError::not_supported(
                    &path.child("policyTypes").index(i),
                    t,
                    &["Ingress", "Egress"],
                ));
            }
        }
        if types.len() > 2 {
            errs.push(FieldError::invalid(
                &path.child("policyTypes"),
                Value::Array(types.to_vec()),
                "may not specify more than two policyTypes",
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
            string_column("Pod-Selector", "podSelector selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let selector = obj
            .pointer("/spec/podSelector")
            .cloned()
            .unwrap_or(Value::Null);
        let formatted = crate::apps::format_selector(&json!({"spec": {"selector": selector}}));
        vec![name_cell(obj), formatted, age_cell(obj)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_blocks() {
        let check = |block: Value| -> Vec<String> {
            validate_ip_block(&block, &FieldPath::new("b"))
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert!(check(json!({"cidr": "10.0.0.0/16", "except": ["10.0.5.0/24"]})).is_empty());
        assert!(check(json!({"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]})).is_empty());
        assert_eq!(
            check(json!({"cidr": "10.0.0.0/33"})),
            ["b.cidr: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert_eq!(
            check(json!({"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/16"]})),
            [
                "b.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
                "b.except[1]: Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
            ]
        );
    }

    #[test]
    fn defaults_validation_cells() {
        let mut np = json!({"metadata": {"name": "n"}, "spec": {"podSelector": {},
            "egress": [{"ports": [{"port": 53}]}]}});
        NetworkPolicyStrategy.default(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert!(NetworkPolicyStrategy.validate(&np).is_empty());
        assert_eq!(NetworkPolicyStrategy.cells(&np)[1], "<none>");
        np["spec"]["egress"][0]["ports"][0]["port"] = json!(70000);
        np["spec"]["policyTypes"] = json!(["Sideways"]);
        let got: Vec<String> = NetworkPolicyStrategy
            .validate(&np)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, vec![
            "spec.egress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.policyTypes[0]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
        ]);
    }
}
