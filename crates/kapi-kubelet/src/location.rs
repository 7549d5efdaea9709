//! Where a connect request goes, as upstream's `ResourceLocation`,
//! `LogLocation`, `streamLocation` and `GetConnectionInfo`: a pod's kubelet
//! (the node's preferred address and `status.daemonEndpoints`' port), a
//! pod's IP, a ready endpoint of a Service port, a node's kubelet or one of
//! its ports.
//!
//! Invariants: proxy destinations (pods/services/nodes `proxy`) must be
//! proxyable — a global unicast address, not loopback, link-local or
//! broadcast — or the request is refused with 400 `address not allowed`;
//! kubelet connections for logs, exec, attach and port-forward are not
//! checked, as upstream.

use std::net::IpAddr;

use kapi_machinery::status::{ApiError, GroupResource};
use kapi_registry::apis::Apis;
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use crate::config::DEFAULT_KUBELET_PORT;

/// A destination: scheme, host, port; `kubelet` when it is a kubelet's API
/// (the kubelet TLS settings apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub https: bool,
    pub host: String,
    pub port: Option<u16>,
    pub kubelet: bool,
}

impl Location {
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(if self.https { 443 } else { 80 })
    }
}

pub const ADDRESS_NOT_ALLOWED: &str = "address not allowed";

/// Upstream's `IsProxyableIP`.
pub fn check_proxyable(host: &str) -> Result<(), ApiError> {
    let refused = || ApiError::bad_request(ADDRESS_NOT_ALLOWED);
    let ip: IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| refused())?;
    let ok = match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_multicast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() || link_local)
        }
    };
    if ok {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Upstream's `IsProxyableHostname`: every address the name resolves to must
/// be proxyable.
pub async fn check_proxyable_hostname(host: &str) -> Result<(), ApiError> {
    if check_proxyable(host).is_ok() || host.parse::<IpAddr>().is_ok() {
        return check_proxyable(host);
    }
    let addrs = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut any = false;
    for a in addrs {
        any = true;
        check_proxyable(&a.ip().to_string())?;
    }
    if any {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "no addresses for hostname {host}"
        )))
    }
}

/// `[scheme:]name[:port]`, as upstream's `SplitSchemeNamePort`.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [n] => ("", *n, ""),
        [n, p] => ("", *n, *p),
        [s, n, p] => (*s, *n, *p),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

pub(crate) async fn get(
    apis: &Apis,
    resource: &str,
    ns: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let entry = apis
        .lookup("", "v1", resource)
        .ok_or_else(|| ApiError::internal(format!("{resource} are not served")))?;
    entry.store.get(ns, name, None).await
}

/// The kubelet of node `name`: upstream's `GetConnectionInfo`.
pub async fn kubelet(apis: &Apis, preferred: &[String], name: &str) -> Result<Location, ApiError> {
    let node = get(apis, "nodes", None, name).await?;
    let host = preferred_address(&node, preferred)?;
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(DEFAULT_KUBELET_PORT);
    Ok(Location {
        https: true,
        host,
        port: Some(port),
        kubelet: true,
    })
}

/// Upstream's `GetPreferredNodeAddress`.
fn preferred_address(node: &Value, preferred: &[String]) -> Result<String, ApiError> {
    let addrs: Vec<(&str, &str)> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a.get("type")?.as_str()?, a.get("address")?.as_str()?)))
        .collect();
    for t in preferred {
        if let Some((_, a)) = addrs.iter().find(|(ty, _)| ty == t) {
            return Ok((*a).to_owned());
        }
        if t == "Hostname" {
            let label = node
                .pointer("/metadata/labels/kubernetes.io~1hostname")
                .and_then(Value::as_str);
            if let Some(h) = label.filter(|h| !h.is_empty()) {
                return Ok(h.to_owned());
            }
        }
    }
    let known: Vec<String> = addrs.iter().map(|(t, a)| format!("{{{t} {a}}}")).collect();
    Err(ApiError::internal(format!(
        "no preferred addresses found; known addresses: [{}]",
        known.join(" ")
    )))
}

/// A node's proxy destination (`nodes/<[scheme:]name[:port]>/proxy`).
pub async fn node_proxy(apis: &Apis, preferred: &[String], id: &str) -> Result<Location, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    let kubelet = kubelet(apis, preferred, name).await?;
    check_proxyable_hostname(&kubelet.host).await?;
    let kport = kubelet.port.unwrap_or(DEFAULT_KUBELET_PORT).to_string();
    if port.is_empty() || port == kport {
        return Ok(kubelet);
    }
    let port = port
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    Ok(Location {
        https: scheme == "https",
        host: kubelet.host,
        port: Some(port),
        kubelet: false,
    })
}

/// A pod's proxy destination (`pods/<[scheme:]name[:port]>/proxy`).
pub async fn pod_proxy(apis: &Apis, ns: &str, id: &str) -> Result<Location, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {id:?}")))?;
    let pod = get(apis, "pods", Some(ns), name).await?;
    let port = if port.is_empty() {
        first_container_port(&pod)
    } else {
        Some(
            port.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid pod request {id:?}")))?,
        )
    };
    let ip = pod
        .pointer("/status/podIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    check_proxyable(ip)?;
    Ok(Location {
        https: scheme == "https",
        host: ip.to_owned(),
        port,
        kubelet: false,
    })
}

fn first_container_port(pod: &Value) -> Option<u16> {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array)?;
    containers.iter().find_map(|c| {
        let p = c.pointer("/ports/0/containerPort")?.as_u64()?;
        u16::try_from(p).ok()
    })
}

/// A Service's proxy destination, as upstream's service `ResourceLocation`:
/// a port number names the Service port with that number; a ready endpoint
/// of an EndpointSlice of the Service with a port of that name, whose target
/// is a pod that exists with that address, is picked at random.
pub async fn service_proxy(apis: &Apis, ns: &str, id: &str) -> Result<Location, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
    let mut port_name = port.to_owned();
    if let Ok(number) = port.parse::<i64>() {
        let svc = get(apis, "services", Some(ns), name).await?;
        let ports = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let found = ports
            .iter()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number));
        let Some(found) = found else {
            return Err(ApiError::service_unavailable(format!(
                "no service port {number} found for service {name:?}"
            )));
        };
        port_name = found
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
    }
    let mut ready = Vec::new();
    for s in endpoint_slices(apis, ns, name).await? {
        let Some(p) = s
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port")?.as_u64())
        else {
            continue;
        };
        for ep in s
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let is_ready = ep
                .pointer("/conditions/ready")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if let (true, Some(addr)) =
                (is_ready, ep.pointer("/addresses/0").and_then(Value::as_str))
            {
                ready.push((addr.to_owned(), p, ep.get("targetRef").cloned()));
            }
        }
    }
    while !ready.is_empty() {
        let (host, port, target) = ready.swap_remove(pick(ready.len()));
        if !is_valid_target(apis, ns, &host, target.as_ref()).await {
            continue;
        }
        check_proxyable(&host)?;
        return Ok(Location {
            https: scheme == "https",
            host,
            port: u16::try_from(port).ok(),
            kubelet: false,
        });
    }
    Err(ApiError::service_unavailable(format!(
        "no endpoints available for service {id:?}"
    )))
}

/// Upstream's `isValidAddress`: the endpoint names a pod that exists and has
/// the endpoint's address.
async fn is_valid_target(apis: &Apis, ns: &str, addr: &str, target: Option<&Value>) -> bool {
    let Some(t) = target.filter(|t| t.get("kind").and_then(Value::as_str) == Some("Pod")) else {
        return false;
    };
    let pod_ns = t.get("namespace").and_then(Value::as_str).unwrap_or(ns);
    let Some(name) = t.get("name").and_then(Value::as_str) else {
        return false;
    };
    let Ok(pod) = get(apis, "pods", Some(pod_ns), name).await else {
        return false;
    };
    let ips = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    pod.pointer("/status/podIP").and_then(Value::as_str) == Some(addr)
        || ips
            .filter_map(|i| i.get("ip").and_then(Value::as_str))
            .any(|i| i == addr)
}

/// A pseudo-random index (upstream picks endpoints at random too).
fn pick(n: usize) -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos as usize % n.max(1)
}

async fn endpoint_slices(apis: &Apis, ns: &str, svc: &str) -> Result<Vec<Value>, ApiError> {
    let Some(entry) = apis.lookup("discovery.k8s.io", "v1", "endpointslices") else {
        return Ok(Vec::new());
    };
    let label = kapi_machinery::labels::parse(&format!("kubernetes.io/service-name={svc}"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let opts = ListOptions {
        label,
        ..Default::default()
    };
    Ok(entry.store.list(Some(ns), &opts).await?.items)
}

/// The resource a not-found error names.
pub fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}
