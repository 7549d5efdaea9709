//! The `default/kubernetes` Service and its endpoints, as kube-apiserver's
//! bootstrap controller and lease endpoint reconciler keep them: the Service on
//! the first address of the service range, port 443 → the secure port (of
//! type NodePort on `--kubernetes-service-node-port` when that is set); the
//! Endpoints (labelled `endpointslice.kubernetes.io/skip-mirror`) and — when
//! `discovery.k8s.io/v1 endpointslices` is served, looked up at run time — the
//! EndpointSlice `kubernetes`, both with this server's advertise address. A
//! change or deletion by anyone else is undone at once (watches), and everything
//! is checked again every 10 s, upstream's interval. Several servers sharing the
//! storage each keep a master lease (`masterleases.rs`) and all list the servers
//! with live leases, so they agree on the endpoints instead of fighting.

use kapi_registry::store::options::WriteOptions;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::ignore_exists;
use super::masterleases::{self, Master};
use crate::Context;
use kapi_client::informer;

const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";
const INTERVAL: Duration = Duration::from_secs(10);
const MANAGER: &str = "kube-apiserver";

/// The Service as kube-apiserver creates it.
pub fn service(cx: &Context) -> Value {
    let ip = cx.kubernetes_service_ip.clone();
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": service_type(cx), "clusterIP": ip, "clusterIPs": [ip], "sessionAffinity": "None",
                 "ports": service_ports(cx)},
    })
}

fn service_ports(cx: &Context) -> Value {
    let mut port = json!({"name": "https", "port": 443, "protocol": "TCP", "targetPort": cx.port});
    if cx.kubernetes_service_node_port > 0 {
        port["nodePort"] = json!(cx.kubernetes_service_node_port);
    }
    json!([port])
}

fn service_type(cx: &Context) -> &'static str {
    if cx.kubernetes_service_node_port > 0 {
        "NodePort"
    } else {
        "ClusterIP"
    }
}

/// The advertised IP (the host part of `advertise_address`), if it is one.
fn advertise_ip(cx: &Context) -> Option<IpAddr> {
    let addr = &cx.advertise_address;
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => addr.as_str(),
    };
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

fn endpoints(masters: &[Master]) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": masterleases::subsets(masters),
    })
}

/// The slice of the first port's servers (one slice holds one port list).
fn endpoint_slice(masters: &[Master]) -> Option<Value> {
    let port = masters.iter().map(|m| m.port).min()?;
    let mut ips: Vec<IpAddr> = masters
        .iter()
        .filter(|m| m.port == port)
        .map(|m| m.ip)
        .collect();
    ips.sort();
    let family = if ips[0].is_ipv4() { "IPv4" } else { "IPv6" };
    let endpoints: Vec<Value> = ips
        .iter()
        .filter(|ip| ip.is_ipv4() == ips[0].is_ipv4())
        .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true}}))
        .collect();
    Some(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": family,
        "endpoints": endpoints,
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }))
}

/// Keep the Service, and with `reconcile_endpoints` its endpoints.
pub fn spawn(cx: Arc<Context>, reconcile_endpoints: bool) {
    tokio::spawn(async move {
        let (tx, mut rx) = mpsc::channel(64);
        let mut watched = Vec::new();
        let mut tick = tokio::time::interval(INTERVAL);
        loop {
            for (group, resource) in [
                ("", "services"),
                ("", "endpoints"),
                ("discovery.k8s.io", "endpointslices"),
            ] {
                if !reconcile_endpoints && resource != "services" {
                    continue;
                }
                if watched.contains(&resource) {
                    continue;
                }
                if let Some(e) = cx.apis.lookup(group, "v1", resource) {
                    let only = FieldSelector::one_term_equal("metadata.name", NAME);
                    informer::spawn(e, only, tx.clone());
                    watched.push(resource);
                }
            }
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => match ev.change.object() {
                        Some(o) if meta::namespace(o) == Some(NAMESPACE) => {}
                        _ => continue,
                    },
                    None => return,
                },
                _ = tick.tick() => {
                    if let (true, Some(me)) = (reconcile_endpoints, me(&cx)) {
                        if let Err(e) = masterleases::renew(&cx.slot, cx.apis.codec(), me).await {
                            tracing::debug!(error = %e, "master lease renewal failed");
                        }
                    }
                }
            }
            if let Err(e) = reconcile(&cx, reconcile_endpoints).await {
                tracing::debug!(error = %e, "kubernetes service reconcile failed");
            }
        }
    });
}

async fn reconcile(cx: &Context, reconcile_endpoints: bool) -> Result<(), ApiError> {
    ensure_service(cx).await?;
    if !reconcile_endpoints {
        return Ok(());
    }
    let Some(me) = me(cx) else {
        return Ok(());
    };
    // This server counts even before its first lease write lands.
    let mut masters = masterleases::live(&cx.slot, cx.apis.codec(), cx.port)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    if !masters.contains(&me) {
        masters.push(me);
        masters.sort();
    }
    ensure(cx, "", "endpoints", endpoints(&masters), &["subsets"]).await?;
    if cx
        .apis
        .lookup("discovery.k8s.io", "v1", "endpointslices")
        .is_some()
    {
        if let Some(slice) = endpoint_slice(&masters) {
            let fields = ["addressType", "endpoints", "ports"];
            ensure(cx, "discovery.k8s.io", "endpointslices", slice, &fields).await?;
        }
    }
    Ok(())
}

/// This server's address, when the advertised address is an IP.
fn me(cx: &Context) -> Option<Master> {
    Some(Master {
        ip: advertise_ip(cx)?,
        port: cx.port,
    })
}

async fn ensure_service(cx: &Context) -> Result<(), ApiError> {
    let desired = service(cx);
    let services = cx
        .apis
        .lookup("", "v1", "services")
        .ok_or_else(|| ApiError::internal("services are not served"))?;
    let opts = WriteOptions::for_manager(MANAGER);
    let current = match services.store.get(Some(NAMESPACE), NAME, None).await {
        Err(e) if e.is_not_found() => {
            return ignore_exists(services.store.create(desired, &opts).await);
        }
        other => other?,
    };
    let ports = service_ports(cx);
    let kind = service_type(cx);
    if current.pointer("/spec/ports") == Some(&ports)
        && current.pointer("/spec/type") == Some(&json!(kind))
    {
        return Ok(());
    }
    let r = services
        .store
        .update_with(
            Some(NAMESPACE),
            NAME,
            UpdateTarget::Main,
            &opts,
            false,
            |cur| {
                let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                next["spec"]["ports"] = ports.clone();
                next["spec"]["type"] = json!(kind);
                Ok(next)
            },
        )
        .await;
    r.map(|_| ())
}

/// Create `desired`, or make `fields` and the labels of the existing object match it.
async fn ensure(
    cx: &Context,
    group: &str,
    resource: &str,
    desired: Value,
    fields: &[&str],
) -> Result<(), ApiError> {
    let Some(entry) = cx.apis.lookup(group, "v1", resource) else {
        return Ok(());
    };
    let opts = WriteOptions::for_manager(MANAGER);
    let current = match entry.store.get(Some(NAMESPACE), NAME, None).await {
        Err(e) if e.is_not_found() => {
            return ignore_exists(entry.store.create(desired, &opts).await);
        }
        other => other?,
    };
    let labels = desired.pointer("/metadata/labels").cloned();
    let same = fields.iter().all(|f| current.get(*f) == desired.get(*f))
        && current.pointer("/metadata/labels").cloned() == labels;
    if same {
        return Ok(());
    }
    let r = entry
        .store
        .update_with(
            Some(NAMESPACE),
            NAME,
            UpdateTarget::Main,
            &opts,
            false,
            |cur| {
                let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                for f in fields {
                    next[*f] = desired[*f].clone();
                }
                let m = meta::meta_mut(&mut next);
                match &labels {
                    Some(l) => m.insert("labels".into(), l.clone()),
                    None => m.remove("labels"),
                };
                Ok(next)
            },
        )
        .await;
    r.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_objects() {
        let me = Master {
            ip: "192.0.2.7".parse().unwrap(),
            port: 6443,
        };
        let ep = endpoints(&[me]);
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "192.0.2.7");
        assert_eq!(ep["subsets"][0]["ports"][0]["port"], 6443);
        let v6 = Master {
            ip: "2001:db8::1".parse().unwrap(),
            port: 6443,
        };
        let slice = endpoint_slice(&[v6]).unwrap();
        assert_eq!(slice["addressType"], "IPv6");
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(
            slice["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );
        assert!(endpoint_slice(&[]).is_none());
    }
}
