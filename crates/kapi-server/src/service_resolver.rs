//! Resolving a Service reference (`namespace`, `name`, `port`) to an address the
//! API server can dial. A standalone control plane has no kube-proxy, so a
//! Service's cluster IP leads nowhere; like upstream's endpoint routing
//! (`ResolveEndpoint`), the service port is looked up in the Service, then a
//! ready address and the matching port in its Endpoints (or, when it has none,
//! its EndpointSlices). ExternalName services resolve to their external name.
//!
//! Errors are upstream's wording (`service "x" not found`, `no endpoints
//! available for service "x"`).

use kapi_machinery::labels;
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use crate::Server;

fn arr(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

impl Server {
    /// The host and port to dial for port `port` of Service `ns/name`.
    pub async fn resolve_service(
        &self,
        ns: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String> {
        let entry = self
            .apis
            .lookup("", "v1", "services")
            .ok_or("services are not served")?;
        let svc = entry
            .store
            .get(Some(ns), name, None)
            .await
            .map_err(|_| format!("service \"{name}\" not found"))?;
        let spec = svc.get("spec").cloned().unwrap_or(Value::Null);
        if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
            let host = spec
                .get("externalName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Ok((host.to_string(), port));
        }
        let svc_port = arr(&spec, "ports")
            .into_iter()
            .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
            .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
        let port_name = svc_port
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(found) = self.endpoint_address(ns, name, &port_name).await {
            return Ok(found);
        }
        if let Some(found) = self.slice_address(ns, name, &port_name).await {
            return Ok(found);
        }
        Err(format!("no endpoints available for service \"{name}\""))
    }

    async fn endpoint_address(
        &self,
        ns: &str,
        name: &str,
        port_name: &str,
    ) -> Option<(String, u16)> {
        let entry = self.apis.lookup("", "v1", "endpoints")?;
        let ep = entry.store.get(Some(ns), name, None).await.ok()?;
        arr(&ep, "subsets").iter().find_map(|subset| {
            let port = arr(subset, "ports")
                .into_iter()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)?;
            let port = u16::try_from(port.get("port")?.as_u64()?).ok()?;
            let addr = arr(subset, "addresses").into_iter().next()?;
            Some((addr.get("ip")?.as_str()?.to_string(), port))
        })
    }

    async fn slice_address(&self, ns: &str, name: &str, port_name: &str) -> Option<(String, u16)> {
        let entry = self
            .apis
            .lookup("discovery.k8s.io", "v1", "endpointslices")?;
        let opts = ListOptions {
            label: labels::parse(&format!("kubernetes.io/service-name={name}")).ok()?,
            ..ListOptions::default()
        };
        let list = entry.store.list(Some(ns), &opts).await.ok()?;
        list.items.iter().find_map(|slice| {
            let port = arr(slice, "ports")
                .into_iter()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)?;
            let port = u16::try_from(port.get("port")?.as_u64()?).ok()?;
            arr(slice, "endpoints").into_iter().find_map(|e| {
                let ready = e.pointer("/conditions/ready").and_then(Value::as_bool);
                if ready == Some(false) {
                    return None;
                }
                let addr = arr(&e, "addresses").into_iter().next()?;
                Some((addr.as_str()?.to_string(), port))
            })
        })
    }
}
