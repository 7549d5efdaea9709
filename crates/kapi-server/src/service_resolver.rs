//! Where a Service's port is served, for clients inside the API server
//! (conversion webhooks; admission webhooks and aggregated APIs resolve the
//! same way). There is no kube-proxy in front of the server, so a service
//! reference is resolved as upstream's `ResolveEndpoint` does: the Service's
//! port by number, then a ready address of its EndpointSlices (the
//! `kubernetes.io/service-name` label) or, without slices, of its Endpoints,
//! at the endpoint port named as the service port.
//!
//! The TLS name stays the service's DNS name (`<name>.<namespace>.svc`); only
//! the TCP address comes from here.

use std::sync::Arc;

use kapi_machinery::labels;
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use crate::apis::{Apis, Entry};

/// A resolved service port: the address to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub ip: String,
    pub port: u16,
}

impl Endpoint {
    /// `ip:port`, with brackets for IPv6.
    pub fn authority(&self) -> String {
        if self.ip.contains(':') {
            format!("[{}]:{}", self.ip, self.port)
        } else {
            format!("{}:{}", self.ip, self.port)
        }
    }
}

/// Resolve `namespace/name:port` against the stored Service and its endpoints;
/// the error reads as upstream's.
pub async fn resolve(
    apis: &Apis,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<Endpoint, String> {
    let lookup = |g: &str, r: &str| -> Result<Arc<Entry>, String> {
        apis.lookup(g, "v1", r)
            .ok_or_else(|| format!("{r} are not served"))
    };
    let svc = lookup("", "services")?
        .store
        .get(Some(namespace), name, None)
        .await
        .map_err(|e| e.message)?;
    let svc_port = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        })
        .ok_or_else(|| format!("no service port {port} found for service {name:?}"))?;
    let port_name = svc_port.get("name").and_then(Value::as_str).unwrap_or("");
    if let Ok(slices) = lookup("discovery.k8s.io", "endpointslices") {
        let opts = ListOptions {
            label: labels::parse(&format!("kubernetes.io/service-name={name}"))
                .map_err(|e| e.to_string())?,
            ..ListOptions::default()
        };
        let list = slices
            .store
            .list(Some(namespace), &opts)
            .await
            .map_err(|e| e.message)?;
        if !list.items.is_empty() {
            return list
                .items
                .iter()
                .find_map(|s| from_slice(s, port_name))
                .ok_or_else(|| no_endpoints(name));
        }
    }
    let eps = lookup("", "endpoints")?
        .store
        .get(Some(namespace), name, None)
        .await
        .map_err(|e| e.message)?;
    eps.get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|subset| from_subset(subset, port_name))
        .ok_or_else(|| no_endpoints(name))
}

fn no_endpoints(name: &str) -> String {
    format!("no endpoints available for service {name:?}")
}

/// The port named `port_name` (any single unnamed port for `""`).
fn port_named(ports: Option<&Value>, port_name: &str) -> Option<u16> {
    ports?
        .as_array()?
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)?
        .get("port")?
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
}

/// A ready address of one EndpointSlice (a missing `ready` counts as ready).
fn from_slice(slice: &Value, port_name: &str) -> Option<Endpoint> {
    let port = port_named(slice.get("ports"), port_name)?;
    slice
        .get("endpoints")?
        .as_array()?
        .iter()
        .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))
        .find_map(|e| e.pointer("/addresses/0").and_then(Value::as_str))
        .map(|ip| Endpoint {
            ip: ip.to_owned(),
            port,
        })
}

/// A ready address of one Endpoints subset.
fn from_subset(subset: &Value, port_name: &str) -> Option<Endpoint> {
    let port = port_named(subset.get("ports"), port_name)?;
    let ip = subset.pointer("/addresses/0/ip").and_then(Value::as_str)?;
    Some(Endpoint {
        ip: ip.to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slices_pick_a_ready_address_at_the_named_port() {
        let slice = json!({"ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}},
                          {"addresses": ["10.0.0.2"]}]});
        assert_eq!(
            from_slice(&slice, "https"),
            Some(Endpoint {
                ip: "10.0.0.2".into(),
                port: 8443
            })
        );
        assert_eq!(from_slice(&slice, "other"), None);
    }

    #[test]
    fn endpoints_subsets_and_ipv6_authority() {
        let subset = json!({"addresses": [{"ip": "::1"}], "ports": [{"port": 443}]});
        let ep = from_subset(&subset, "").unwrap();
        assert_eq!(ep.authority(), "[::1]:443");
    }
}
