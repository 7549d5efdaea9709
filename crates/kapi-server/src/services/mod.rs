//! Services' ClusterIPs and node ports, as upstream's service REST storage
//! hands them out: from the bitmaps kept in storage (`kapi_registry::ranges`,
//! `/ranges/serviceips` and `/ranges/servicenodeports`), so several servers on
//! one storage never give out one value twice.
//!
//! - a create takes the requested ClusterIP (in range, free) or a free one,
//!   and for NodePort and LoadBalancer services each requested node port or
//!   a free one (one per port number, shared by its protocols), plus the
//!   health check node port of a LoadBalancer with `externalTrafficPolicy:
//!   Local`;
//! - an update keeps what the stored service holds and takes what a type
//!   change newly needs; what it no longer holds goes back once it is stored;
//! - a delete gives everything back, whoever deletes ([`StoreHooks`]);
//! - what a failed write took goes back at once (`WriteAdmission::finished`);
//! - the repair loop ([`ServiceAllocator::repair`], at start and every three
//!   minutes) records what existing services hold and frees what none holds
//!   after it saw it unheld three times (a create between its allocation
//!   and its write is not a leak).
//!
//! Dry runs take nothing and check as upstream's do: a requested ClusterIP
//! against the range only, a requested node port against what is taken only.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::hooks::StoreHooks;
use kapi_registry::ranges::{static_band, AllocError, RangeAllocator};
use kapi_storage::Backend;
use serde_json::{json, Value};

mod cidr;
mod held;
mod repair;

pub use cidr::Cidr;
pub use held::{Held, Reserved};

/// `--service-node-port-range`'s default.
pub const DEFAULT_NODE_PORTS: (u16, u16) = (30000, 32767);

/// A node port range (`--service-node-port-range`, inclusive).
#[derive(Debug, Clone, Copy)]
struct PortRange {
    base: u32,
    count: u32,
}

impl PortRange {
    fn new((lo, hi): (u16, u16)) -> PortRange {
        PortRange {
            base: u32::from(lo),
            count: u32::from(hi).saturating_sub(u32::from(lo)) + 1,
        }
    }

    /// As upstream writes a range: `30000-32767`.
    fn text(self) -> String {
        format!("{}-{}", self.base, self.base + self.count - 1)
    }

    fn offset(self, port: u64) -> Option<u32> {
        let p = u32::try_from(port).ok()?.checked_sub(self.base)?;
        (p < self.count).then_some(p)
    }
}

/// The two allocations of this server's ranges.
pub struct ServiceAllocator {
    cidr: Cidr,
    port_range: PortRange,
    ips: RangeAllocator,
    ports: RangeAllocator,
    /// Values seen unheld by the repair loop, and how often.
    leaks: Mutex<HashMap<(bool, u32), u8>>,
}

fn spec_str<'a>(svc: &'a Value, field: &str) -> &'a str {
    svc.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn service_type(svc: &Value) -> &str {
    match spec_str(svc, "type") {
        "" => "ClusterIP",
        t => t,
    }
}

fn has_node_ports(svc: &Value) -> bool {
    matches!(service_type(svc), "NodePort" | "LoadBalancer")
}

fn needs_health_check(svc: &Value) -> bool {
    service_type(svc) == "LoadBalancer" && spec_str(svc, "externalTrafficPolicy") == "Local"
}

fn invalid(name: &str, path: FieldPath, value: Value, detail: String) -> ApiError {
    let errs = vec![FieldError::invalid(&path, value, detail)];
    ApiError::invalid(GroupKind::new("", "Service"), name, &errs)
}

impl ServiceAllocator {
    /// The allocators of `cidr` and the node ports `node_ports` (inclusive).
    pub fn new(backend: Arc<dyn Backend>, cidr: Cidr, node_ports: (u16, u16)) -> Self {
        let size = cidr.usable();
        let port_range = PortRange::new(node_ports);
        let count = port_range.count;
        ServiceAllocator {
            cidr,
            port_range,
            ips: RangeAllocator::new(
                backend.clone(),
                "/ranges/serviceips",
                &cidr.to_string(),
                size,
                static_band(size, 16, 16, 256),
            ),
            ports: RangeAllocator::new(
                backend,
                "/ranges/servicenodeports",
                &port_range.text(),
                count,
                static_band(count, 16, 32, 128),
            ),
            leaks: Mutex::new(HashMap::new()),
        }
    }

    /// What `svc` holds of this server's ranges.
    pub fn held(&self, svc: &Value) -> Held {
        let mut h = Held::default();
        if service_type(svc) != "ExternalName" {
            let ip = spec_str(svc, "clusterIP").parse().ok();
            h.ips.extend(ip.and_then(|ip| self.cidr.offset(ip)));
        }
        if has_node_ports(svc) {
            let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
            for p in ports.into_iter().flatten() {
                h.ports.extend(
                    p.get("nodePort")
                        .and_then(Value::as_u64)
                        .and_then(|p| self.port_range.offset(p)),
                );
            }
        }
        if needs_health_check(svc) {
            let hc = svc
                .pointer("/spec/healthCheckNodePort")
                .and_then(Value::as_u64);
            h.ports.extend(hc.and_then(|p| self.port_range.offset(p)));
        }
        h
    }

    /// Give `held` back (errors are logged; the repair loop frees leaks).
    pub async fn release(&self, held: &Held) {
        let ips: Vec<u32> = held.ips.iter().copied().collect();
        let ports: Vec<u32> = held.ports.iter().copied().collect();
        for (alloc, values) in [(&self.ips, ips), (&self.ports, ports)] {
            if let Err(e) = alloc.release(&values).await {
                tracing::warn!(error = %e, "releasing service allocations failed");
            }
        }
    }

    /// Take what a new service `svc` needs (`name`: its name, for errors),
    /// recording it in `taken`.
    pub async fn allocate_create(
        &self,
        name: &str,
        svc: &mut Value,
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        if service_type(svc) != "ExternalName" && spec_str(svc, "clusterIP") != "None" {
            self.take_ip(name, svc, dry_run, taken).await?;
        }
        if has_node_ports(svc) {
            self.take_node_ports(name, svc, &[], dry_run, taken).await?;
        }
        if needs_health_check(svc) {
            self.take_health_check(name, svc, dry_run, taken).await?;
        }
        Ok(())
    }

    /// What an update of `old` to `svc` newly needs, as upstream's
    /// `allocateUpdate`: what the update leaves out is kept from `old` (its
    /// ClusterIP, the node ports of the same port and protocol), and what a
    /// type change needs is taken.
    pub async fn allocate_update(
        &self,
        name: &str,
        svc: &mut Value,
        old: &Value,
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        if service_type(svc) == "ExternalName" || !svc.get("spec").is_some_and(Value::is_object) {
            return Ok(());
        }
        let old_ip = Some(spec_str(old, "clusterIP"))
            .filter(|ip| !ip.is_empty() && service_type(old) != "ExternalName");
        if spec_str(svc, "clusterIP").is_empty() {
            match old_ip {
                Some(ip) => set_ip(svc, ip),
                None => self.take_ip(name, svc, dry_run, taken).await?,
            }
        } else if old_ip.is_none() && spec_str(svc, "clusterIP") != "None" {
            self.take_ip(name, svc, dry_run, taken).await?;
        }
        if has_node_ports(svc) {
            let kept = if has_node_ports(old) {
                node_ports(old)
            } else {
                Vec::new()
            };
            self.take_node_ports(name, svc, &kept, dry_run, taken)
                .await?;
        }
        if needs_health_check(svc) && !needs_health_check(old) {
            self.take_health_check(name, svc, dry_run, taken).await?;
        }
        Ok(())
    }

    async fn take_ip(
        &self,
        name: &str,
        svc: &mut Value,
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        let requested = spec_str(svc, "clusterIP").to_owned();
        if requested.is_empty() {
            let offset = self.next_ip(dry_run, taken).await?;
            set_ip(svc, &self.cidr.nth(offset.map_or(0, |o| o + 1)).to_string());
            return Ok(());
        }
        // Not an address: validation says so.
        let Ok(ip) = requested.parse::<Ipv4Addr>() else {
            return Ok(());
        };
        let path = FieldPath::new("spec").child("clusterIPs");
        let fail = |why: String| {
            let detail = format!("failed to allocate IP {requested}: {why}");
            invalid(name, path.clone(), json!([requested]), detail)
        };
        let offset = self.cidr.offset(ip).ok_or_else(|| {
            fail(format!(
                "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                self.cidr
            ))
        })?;
        // As upstream, a dry run checks the range only.
        if dry_run {
            return Ok(());
        }
        self.ips.allocate(offset).await.map_err(|e| match e {
            AllocError::Allocated => fail("provided IP is already allocated".to_owned()),
            e => ApiError::internal(e.to_string()),
        })?;
        taken.ips.insert(offset);
        set_ip(svc, &requested);
        Ok(())
    }

    /// A free address's offset, taken; a dry run takes none (`None`: upstream
    /// answers the range's network address then).
    async fn next_ip(&self, dry_run: bool, taken: &mut Held) -> Result<Option<u32>, ApiError> {
        if dry_run {
            return Ok(None);
        }
        let offset = self.ips.allocate_next().await.map_err(|e| match e {
            AllocError::Full => ApiError::internal("failed to allocate a serviceIP: range is full"),
            e => ApiError::internal(e.to_string()),
        })?;
        taken.ips.insert(offset);
        Ok(Some(offset))
    }

    /// Give every port without a node port one (the `kept` one of its port
    /// and protocol, the one another protocol of the same port got, or a free
    /// one), and take the requested ones that are new.
    async fn take_node_ports(
        &self,
        name: &str,
        svc: &mut Value,
        kept: &[(i64, String, u64)],
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        let kept_ports: BTreeSet<u64> = kept.iter().map(|k| k.2).collect();
        let mut by_port: HashMap<i64, u64> = HashMap::new();
        let count = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        for i in 0..count {
            let p = &svc["spec"]["ports"][i];
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP")
                .to_owned();
            let node = match p
                .get("nodePort")
                .and_then(Value::as_u64)
                .filter(|n| *n != 0)
            {
                Some(n) => {
                    let fresh = !kept_ports.contains(&n) && !by_port.values().any(|v| *v == n);
                    if fresh {
                        let path = FieldPath::new("spec")
                            .child("ports")
                            .index(i)
                            .child("nodePort");
                        self.take_port(name, path, n, dry_run, taken).await?;
                    }
                    n
                }
                None => match kept
                    .iter()
                    .find(|k| k.0 == port && k.1 == proto)
                    .map(|k| k.2)
                {
                    Some(n) => n,
                    None => match by_port.get(&port) {
                        Some(n) => *n,
                        None => self.next_port(dry_run, taken).await?,
                    },
                },
            };
            by_port.insert(port, node);
            svc["spec"]["ports"][i]["nodePort"] = json!(node);
        }
        Ok(())
    }

    async fn take_health_check(
        &self,
        name: &str,
        svc: &mut Value,
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        let requested = svc
            .pointer("/spec/healthCheckNodePort")
            .and_then(Value::as_u64);
        let node = match requested.filter(|n| *n != 0) {
            Some(n) => {
                let path = FieldPath::new("spec").child("healthCheckNodePort");
                self.take_port(name, path, n, dry_run, taken).await?;
                n
            }
            None => self.next_port(dry_run, taken).await?,
        };
        svc["spec"]["healthCheckNodePort"] = json!(node);
        Ok(())
    }

    async fn take_port(
        &self,
        name: &str,
        path: FieldPath,
        port: u64,
        dry_run: bool,
        taken: &mut Held,
    ) -> Result<(), ApiError> {
        let already = || {
            invalid(
                name,
                path.clone(),
                json!(port),
                "provided port is already allocated".into(),
            )
        };
        let Some(offset) = self.port_range.offset(port) else {
            // As upstream, a dry run does not check the range.
            if dry_run {
                return Ok(());
            }
            let detail = format!(
                "provided port is not in the valid range. The range of valid ports is {}",
                self.port_range.text()
            );
            return Err(invalid(name, path, json!(port), detail));
        };
        if dry_run {
            let used = self
                .ports
                .allocated()
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            return if used.contains(offset) {
                Err(already())
            } else {
                Ok(())
            };
        }
        match self.ports.allocate(offset).await {
            Ok(()) => {}
            Err(AllocError::Allocated) => return Err(already()),
            Err(e) => return Err(ApiError::internal(e.to_string())),
        }
        taken.ports.insert(offset);
        Ok(())
    }

    /// A free node port, taken. A dry run takes none and, as upstream's,
    /// answers the ports just past the range, one after the other.
    async fn next_port(&self, dry_run: bool, taken: &mut Held) -> Result<u64, ApiError> {
        if dry_run {
            taken.dry_ports += 1;
            let r = self.port_range;
            return Ok(u64::from(r.base + r.count + taken.dry_ports));
        }
        let offset = self.ports.allocate_next().await.map_err(|e| match e {
            AllocError::Full => ApiError::internal("failed to allocate a nodePort: range is full"),
            e => ApiError::internal(e.to_string()),
        })?;
        taken.ports.insert(offset);
        Ok(u64::from(self.port_range.base + offset))
    }
}

fn set_ip(svc: &mut Value, ip: &str) {
    svc["spec"]["clusterIP"] = json!(ip);
    svc["spec"]["clusterIPs"] = json!([ip]);
}

/// `(port, protocol, nodePort)` of each port of `svc` with a node port.
fn node_ports(svc: &Value) -> Vec<(i64, String, u64)> {
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
    ports
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let port = p.get("port").and_then(Value::as_i64)?;
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            let node = p
                .get("nodePort")
                .and_then(Value::as_u64)
                .filter(|n| *n != 0)?;
            Some((port, proto.to_owned(), node))
        })
        .collect()
}

#[async_trait]
impl StoreHooks for ServiceAllocator {
    async fn deleted(&self, obj: &Value) {
        self.release(&self.held(obj)).await;
    }
}
