//! The `discovery.k8s.io/v1` group: EndpointSlices — port defaults (TCP, empty
//! name), upstream `ValidateEndpointSlice` (address type, addresses per type,
//! hostnames, node names, unique port names and protocols, size limits), the
//! immutable address type, and the `NAME ADDRESSTYPE PORTS ENDPOINTS AGE` table.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use kapi_machinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, ErrorList, FieldError, FieldPath,
    FIELD_IMMUTABLE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::podspec_validation::PORT_PROTOCOLS;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, for_each_item, present, set_default, str_at};

pub struct EndpointSliceStrategy;

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 100;

fn validate_address(kind: &str, address: &str, path: &FieldPath) -> ErrorList {
    let msgs = match kind {
        "IPv4" if address.parse::<Ipv4Addr>().is_err() => {
            vec!["must be a valid IPv4 address".to_string()]
        }
        "IPv6" if address.parse::<Ipv6Addr>().is_err() => {
            vec!["must be a valid IPv6 address".to_string()]
        }
        "FQDN" => is_dns1123_subdomain(address),
        _ => Vec::new(),
    };
    msgs.into_iter()
        .map(|m| FieldError::invalid(path, address, m))
        .collect()
}

fn validate_endpoints(obj: &Value, kind: &str) -> ErrorList {
    let path = FieldPath::new("endpoints");
    let endpoints = arr_at(obj, "/endpoints");
    let mut errs = ErrorList::new();
    if endpoints.len() > MAX_ENDPOINTS {
        errs.push(FieldError::too_many(
            &path,
            Some(endpoints.len()),
            Some(MAX_ENDPOINTS),
        ));
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let ep_path = path.index(i);
        let ap = ep_path.child("addresses");
        let addresses = arr_at(ep, "/addresses");
        if addresses.is_empty() {
            errs.push(FieldError::required(&ap, "must contain at least 1 address"));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(FieldError::too_many(
                &ap,
                Some(addresses.len()),
                Some(MAX_ADDRESSES),
            ));
        }
        for (j, a) in addresses.iter().enumerate() {
            errs.extend(validate_address(
                kind,
                a.as_str().unwrap_or(""),
                &ap.index(j),
            ));
        }
        if let Some(h) = present(ep, "/hostname").and_then(Value::as_str) {
            errs.extend(
                is_dns1123_label(h)
                    .into_iter()
                    .map(|m| FieldError::invalid(&ep_path.child("hostname"), h, m)),
            );
        }
        if let Some(n) = present(ep, "/nodeName").and_then(Value::as_str) {
            errs.extend(
                is_dns1123_subdomain(n)
                    .into_iter()
                    .map(|m| FieldError::invalid(&ep_path.child("nodeName"), n, m)),
            );
        }
    }
    errs
}

fn validate_ports(obj: &Value) -> ErrorList {
    let path = FieldPath::new("ports");
    let ports = arr_at(obj, "/ports");
    let mut errs = ErrorList::new();
    if ports.len() > MAX_PORTS {
        errs.push(FieldError::too_many(
            &path,
            Some(ports.len()),
            Some(MAX_PORTS),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let pp = path.index(i);
        let name = str_at(port, "/name");
        if !name.is_empty() {
            errs.extend(
                is_dns1123_label(name)
                    .into_iter()
                    .map(|m| FieldError::invalid(&pp.child("name"), name, m)),
            );
        }
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&pp.child("name"), name));
        }
        match str_at(port, "/protocol") {
            "" => errs.push(FieldError::required(&pp.child("protocol"), "")),
            p if !PORT_PROTOCOLS.contains(&p) => errs.push(FieldError::not_supported(
                &pp.child("protocol"),
                p,
                &PORT_PROTOCOLS,
            )),
            _ => {}
        }
    }
    errs
}

/// Upstream `listWithMoreString`: up to three items, `+ N more...`, `<unset>` when empty.
fn list_with_more(items: Vec<String>) -> String {
    let count = items.len();
    let shown = items.into_iter().take(3).collect::<Vec<_>>().join(",");
    if count > 3 {
        return format!("{shown} + {} more...", count - 3);
    }
    if shown.is_empty() {
        return "<unset>".to_string();
    }
    shown
}

impl Strategy for EndpointSliceStrategy {
    fn default(&self, obj: &mut Value) {
        for_each_item(obj, "ports", |p| {
            set_default(p, "name", json!(""));
            set_default(p, "protocol", json!("TCP"));
        });
        // A non-pointer struct: Go always writes it.
        for_each_item(obj, "endpoints", |e| {
            set_default(e, "conditions", json!({}))
        });
    }

    /// Upstream's strategy: 1 on create, +1 when anything but metadata changes.
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let kind = str_at(obj, "/addressType");
        let mut errs = ErrorList::new();
        let path = FieldPath::new("addressType");
        match kind {
            "" => errs.push(FieldError::required(&path, "")),
            k if !ADDRESS_TYPES.contains(&k) => {
                errs.push(FieldError::not_supported(&path, k, &ADDRESS_TYPES))
            }
            _ => {}
        }
        errs.extend(validate_endpoints(obj, kind));
        errs.extend(validate_ports(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("addressType") != old.get("addressType") {
            errs.push(FieldError::invalid(
                &FieldPath::new("addressType"),
                str_at(new, "/addressType"),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("AddressType", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type."),
            string_column("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list."),
            string_column("Endpoints", "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ports: Vec<String> = arr_at(obj, "/ports")
            .iter()
            .map(|p| {
                match (
                    p.get("port").and_then(Value::as_i64),
                    p.get("name").and_then(Value::as_str),
                ) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(name)) => name.to_string(),
                    (None, None) => "*".to_string(),
                }
            })
            .collect();
        let addresses: Vec<String> = arr_at(obj, "/endpoints")
            .iter()
            .flat_map(|e| arr_at(e, "/addresses"))
            .map(|a| a.as_str().unwrap_or("").to_string())
            .collect();
        vec![
            name_cell(obj),
            json!(str_at(obj, "/addressType")),
            json!(list_with_more(ports)),
            json!(list_with_more(addresses)),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let mut s = json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}],
            "ports": [{"port": 80}]});
        EndpointSliceStrategy.default(&mut s);
        assert_eq!(
            s["ports"][0],
            json!({"port": 80, "name": "", "protocol": "TCP"})
        );
        assert!(EndpointSliceStrategy.validate(&s).is_empty());
        assert_eq!(
            EndpointSliceStrategy.cells(&s)[2..4],
            [json!("80"), json!("10.0.0.1,10.0.0.2")]
        );
        let mut bad = s.clone();
        bad["endpoints"][0]["addresses"] = json!(["nope"]);
        bad["addressType"] = json!("IPv6");
        let got: Vec<String> = EndpointSliceStrategy
            .validate_update(&bad, &s)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
            "endpoints[0].addresses[0]: Invalid value: \"nope\": must be a valid IPv6 address",
            "endpoints[1].addresses[0]: Invalid value: \"10.0.0.2\": must be a valid IPv6 address",
            "addressType: Invalid value: \"IPv6\": field is immutable",
        ]
        );
    }
}
