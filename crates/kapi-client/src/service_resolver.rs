//! Where a Service's traffic goes, as `--enable-aggregator-routing` says
//! ([`Routing`]): by default to its cluster IP, as kube-apiserver dials the
//! services of APIServices and webhooks (kube-proxy on the node routes it);
//! with the flag, or on a standalone control plane with no kube-proxy, to a
//! ready endpoint, as kube-aggregator's `NewEndpointServiceResolver` does
//! ([`resolve`], which the availability checks always use).
//!
//! A Service of type `ExternalName` resolves to its external name; any other
//! resolves through the port of the Service matching the asked port to a ready
//! address of its EndpointSlices (label `kubernetes.io/service-name`) with a
//! port of the same name, falling back to the Endpoints object of the same
//! name (kapi has no EndpointSlice mirroring controller, so hand-made
//! Endpoints must work too). Errors name upstream's condition reasons, so the
//! availability controller reports them as kube-aggregator does.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use kapi_registry::apis::Apis;

/// Where to dial: a host (IP or DNS name) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `host:port`, bracketing IPv6 addresses.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why a Service does not resolve; each maps to an upstream condition reason.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ResolveError {
    #[error("service/{name} in {namespace:?} is not present")]
    ServiceNotFound { namespace: String, name: String },
    #[error("service/{name} in {namespace:?} is not listening on port {port}")]
    ServicePort {
        namespace: String,
        name: String,
        port: i64,
    },
    #[error("cannot find endpointslices for service/{name} in {namespace:?}")]
    EndpointsNotFound { namespace: String, name: String },
    #[error("endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}")]
    MissingEndpoints {
        namespace: String,
        name: String,
        port_name: String,
    },
    #[error("cannot route to service with ClusterIP \"None\"")]
    Headless,
    #[error("unsupported service type {kind:?}")]
    UnsupportedType { kind: String },
    #[error("service/{name} in {namespace:?} cannot be checked due to: {message}")]
    Access {
        namespace: String,
        name: String,
        message: String,
    },
}

impl ResolveError {
    /// The `Available` condition reason upstream gives this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            ResolveError::ServiceNotFound { .. } => "ServiceNotFound",
            ResolveError::ServicePort { .. } => "ServicePortError",
            ResolveError::EndpointsNotFound { .. } => "EndpointsNotFound",
            ResolveError::MissingEndpoints { .. } => "MissingEndpoints",
            ResolveError::Access { .. } => "ServiceAccessError",
            ResolveError::Headless | ResolveError::UnsupportedType { .. } => "ServiceAccessError",
        }
    }

    /// Whether the condition is False (known failure) rather than Unknown.
    pub fn is_definite(&self) -> bool {
        !matches!(self, ResolveError::Access { .. })
    }
}

/// How a Service is dialled (`--enable-aggregator-routing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Routing {
    /// Its cluster IP and service port (upstream's default).
    #[default]
    ClusterIp,
    /// A ready endpoint's address and target port.
    Endpoints,
}

/// Resolve `namespace/name` at service port `port` as `routing` says.
pub async fn resolve_with(
    apis: &Apis,
    routing: Routing,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<Endpoint, ResolveError> {
    match routing {
        Routing::Endpoints => resolve(apis, namespace, name, port).await,
        Routing::ClusterIp => resolve_cluster_ip(apis, namespace, name, port).await,
    }
}

/// The cluster IP and service port of `namespace/name`, as upstream's
/// `ResolveCluster`: a headless Service cannot be routed to, an
/// `ExternalName` one is its external name at `port`.
async fn resolve_cluster_ip(
    apis: &Apis,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<Endpoint, ResolveError> {
    let svc = service(apis, namespace, name).await?;
    let spec = |k: &str| {
        svc.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    match spec("type") {
        "" | "ClusterIP" | "NodePort" | "LoadBalancer" => {
            if spec("clusterIP") == "None" {
                return Err(ResolveError::Headless);
            }
            let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
            let found = ports
                .into_iter()
                .flatten()
                .any(|p| p.get("port").and_then(Value::as_i64) == Some(port));
            let Some(dial) = u16::try_from(port).ok().filter(|_| found) else {
                return Err(ResolveError::ServicePort {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    port,
                });
            };
            Ok(Endpoint {
                host: spec("clusterIP").to_owned(),
                port: dial,
            })
        }
        "ExternalName" => Ok(Endpoint {
            host: spec("externalName").to_owned(),
            port: u16::try_from(port).unwrap_or(443),
        }),
        other => Err(ResolveError::UnsupportedType {
            kind: other.to_owned(),
        }),
    }
}

/// The Service `namespace/name`.
async fn service(apis: &Apis, namespace: &str, name: &str) -> Result<Value, ResolveError> {
    let access = |e: ApiError| ResolveError::Access {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        message: e.message.clone(),
    };
    let services = apis
        .lookup("", "v1", "services")
        .ok_or_else(|| access(ApiError::internal("services are not served")))?;
    match services.store.get(Some(namespace), name, None).await {
        Ok(svc) => Ok(svc),
        Err(e) if e.is_not_found() => Err(ResolveError::ServiceNotFound {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
        Err(e) => Err(access(e)),
    }
}

/// Resolve `namespace/name` at service port `port` to one endpoint.
pub async fn resolve(
    apis: &Apis,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<Endpoint, ResolveError> {
    let access = |e: ApiError| ResolveError::Access {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        message: e.message.clone(),
    };
    let svc = service(apis, namespace, name).await?;
    if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        let host = svc
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Ok(Endpoint {
            host: host.to_owned(),
            port: u16::try_from(port).unwrap_or(443),
        });
    }
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
    let Some(svc_port) = ports
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
    else {
        return Err(ResolveError::ServicePort {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            port,
        });
    };
    let port_name = svc_port
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let missing = || ResolveError::MissingEndpoints {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        port_name: port_name.clone(),
    };
    let slices = endpoint_slices(apis, namespace, name)
        .await
        .map_err(access)?;
    if !slices.is_empty() {
        return slices
            .iter()
            .find_map(|s| from_slice(s, &port_name))
            .ok_or_else(missing);
    }
    let endpoints = apis
        .lookup("", "v1", "endpoints")
        .ok_or_else(|| access(ApiError::internal("endpoints are not served")))?;
    match endpoints.store.get(Some(namespace), name, None).await {
        Ok(ep) => from_endpoints(&ep, &port_name).ok_or_else(missing),
        Err(e) if e.is_not_found() => Err(ResolveError::EndpointsNotFound {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
        Err(e) => Err(access(e)),
    }
}

async fn endpoint_slices(apis: &Apis, namespace: &str, name: &str) -> Result<Vec<Value>, ApiError> {
    let Some(slices) = apis.lookup("discovery.k8s.io", "v1", "endpointslices") else {
        return Ok(Vec::new());
    };
    let label = kapi_machinery::labels::parse(&format!("kubernetes.io/service-name={name}"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let opts = ListOptions {
        label,
        ..Default::default()
    };
    Ok(slices.store.list(Some(namespace), &opts).await?.items)
}

/// A ready address of `slice` with a port named `port_name`.
fn from_slice(slice: &Value, port_name: &str) -> Option<Endpoint> {
    let port = slice
        .get("ports")?
        .as_array()?
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)?
        .get("port")?
        .as_u64()?;
    let ready = slice
        .get("endpoints")?
        .as_array()?
        .iter()
        .find(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))?;
    let host = ready.pointer("/addresses/0")?.as_str()?;
    Some(Endpoint {
        host: host.to_owned(),
        port: u16::try_from(port).ok()?,
    })
}

/// A ready address of an Endpoints object's subset with a port named `port_name`.
fn from_endpoints(ep: &Value, port_name: &str) -> Option<Endpoint> {
    ep.get("subsets")?.as_array()?.iter().find_map(|subset| {
        let port = subset
            .get("ports")?
            .as_array()?
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)?
            .get("port")?
            .as_u64()?;
        let host = subset.pointer("/addresses/0/ip")?.as_str()?;
        Some(Endpoint {
            host: host.to_owned(),
            port: u16::try_from(port).ok()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slices_and_endpoints_pick_ready_named_ports() {
        let slice = json!({"ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}},
                          {"addresses": ["10.0.0.2"]}]});
        assert_eq!(
            from_slice(&slice, "https"),
            Some(Endpoint {
                host: "10.0.0.2".into(),
                port: 8443
            })
        );
        assert_eq!(from_slice(&slice, "other"), None);
        let ep = json!({"subsets": [{"addresses": [{"ip": "::1"}], "ports": [{"port": 6443}]}]});
        let got = from_endpoints(&ep, "").unwrap();
        assert_eq!(got.authority(), "[::1]:6443");
        assert_eq!(from_endpoints(&json!({"subsets": []}), ""), None);
    }
}
