//! Endpoints: port protocol defaults, address / port validation, create-on-update (as
//! upstream, so controllers can PUT blindly) and the `NAME ENDPOINTS AGE` table.
//!
//! Where to look next: `service.rs`; `registry.rs` (stored under `/services/endpoints`).

use kapi_machinery::validation::{
    is_valid_ip, is_valid_port_num, ErrorList, FieldError, FieldPath,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::podspec_validation::{validate_dns_label, validate_enum, PORT_PROTOCOLS};
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{arr_at, for_each_item, i64_at, set_default_str, str_at};

pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    /// v1 Endpoints is deprecated since 1.33 (kube-apiserver answers every
    /// request on it with this warning).
    fn deprecation_warning(&self) -> Option<String> {
        Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".into())
    }

    fn default(&self, obj: &mut Value) {
        for_each_item(obj, "subsets", |s| {
            for_each_item(s, "ports", |p| set_default_str(p, "protocol", "TCP"))
        });
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        for (i, subset) in arr_at(obj, "/subsets").iter().enumerate() {
            let path = FieldPath::new("subsets").index(i);
            for list in ["addresses", "notReadyAddresses"] {
                for (j, addr) in arr_at(subset, &format!("/{list}")).iter().enumerate() {
                    let ip = str_at(addr, "/ip");
                    for msg in is_valid_ip(ip) {
                        errs.push(FieldError::invalid(
                            &path.child(list).index(j).child("ip"),
                            ip,
                            msg,
                        ));
                    }
                }
            }
            let ports = arr_at(subset, "/ports");
            for (j, port) in ports.iter().enumerate() {
                let p = path.child("ports").index(j);
                let name = str_at(port, "/name");
                if ports.len() > 1 && name.is_empty() {
                    errs.push(FieldError::required(&p.child("name"), ""));
                } else if !name.is_empty() {
                    errs.extend(validate_dns_label(name, &p.child("name")));
                }
                let number = i64_at(port, "/port").unwrap_or(0);
                for msg in is_valid_port_num(number) {
                    errs.push(FieldError::invalid(&p.child("port"), number, msg));
                }
                errs.extend(validate_enum(
                    port.get("protocol"),
                    &PORT_PROTOCOLS,
                    &p.child("protocol"),
                ));
            }
        }
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Endpoints", "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![name_cell(obj), json!(format_endpoints(obj)), age_cell(obj)]
    }
}

/// Upstream `formatEndpoints` with all ports: at most three `ip:port`, then `+ N more...`.
fn format_endpoints(obj: &Value) -> String {
    let subsets = arr_at(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let (mut list, mut count, mut more) = (Vec::new(), 0usize, false);
    for subset in subsets {
        let addresses = arr_at(subset, "/addresses");
        let ports = arr_at(subset, "/ports");
        let ports: Vec<Option<i64>> = if ports.is_empty() {
            vec![None]
        } else {
            ports
                .iter()
                .map(|p| Some(i64_at(p, "/port").unwrap_or(0)))
                .collect()
        };
        for port in ports {
            count += addresses.len();
            for addr in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let ip = str_at(addr, "/ip");
                list.push(match port {
                    Some(p) if ip.contains(':') => format!("[{ip}]:{p}"),
                    Some(p) => format!("{ip}:{p}"),
                    None => ip.to_string(),
                });
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let mut ep = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "nope"}], "ports": [{"port": 80}]}]});
        EndpointsStrategy.default(&mut ep);
        assert_eq!(ep["subsets"][0]["ports"][0]["protocol"], "TCP");
        let errs: Vec<String> = EndpointsStrategy
            .validate(&ep)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["subsets[0].addresses[1].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]);
    }

    #[test]
    fn table_lists_three_then_more() {
        let ep = json!({"metadata": {"name": "e"}, "subsets": [{
            "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
            "ports": [{"port": 80}]
        }]});
        assert_eq!(
            EndpointsStrategy.cells(&ep)[1],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
        );
        assert_eq!(EndpointsStrategy.cells(&json!({}))[1], "<none>");
    }
}
