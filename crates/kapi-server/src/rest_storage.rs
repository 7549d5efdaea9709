//! What upstream does in the resources' REST storage rather than in the
//! admission chain, always on: the service allocators (ClusterIP from
//! `--service-cluster-ip-range`, NodePort from 30000–32767), a CSR's requestor,
//! RBAC escalation prevention on creates, and system priority classes that may
//! not be deleted.
//!
//! Allocation reads the services that exist and remembers what it handed out
//! recently (under one lock), so concurrent creates never get the same address.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::Mutex;

use kapi_machinery::status::ApiError;
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::store::options::{ListOptions, WriteOptions};
use serde_json::{json, Value};

use crate::handlers::Ctx;
use crate::server::Server;

/// An IPv4 range (`10.0.0.0/24`).
#[derive(Debug, Clone, Copy)]
pub struct Cidr {
    pub base: u32,
    pub bits: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (ip, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| format!("{s:?}: bad IPv4 address"))?;
        let bits: u8 = bits
            .parse()
            .ok()
            .filter(|b| *b <= 30)
            .ok_or_else(|| format!("{s:?}: bad prefix length"))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
        Ok(Cidr {
            base: u32::from(ip) & mask,
            bits,
        })
    }

    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.bits))
    }

    /// The n-th address (1 = the first usable, the `kubernetes` service's).
    pub fn nth(&self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.base + n)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.base && ip < self.base + self.size() - 1
    }
}

#[derive(Default)]
pub struct Allocations {
    ips: Mutex<HashSet<Ipv4Addr>>,
    ports: Mutex<HashSet<i64>>,
}

fn invalid(ctx: &Ctx, path: FieldPath, value: Value, detail: &str) -> ApiError {
    let errs = vec![FieldError::invalid(&path, value, detail)];
    ApiError::invalid(ctx.entry.def.group_kind(), ctx.name(), &errs)
}

/// A CertificateSigningRequest's requestor is whoever creates it, whatever the
/// body says (upstream's `csrStrategy.PrepareForCreate`).
fn fill_requestor(ctx: &Ctx, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for f in ["username", "uid", "groups", "extra"] {
        spec.remove(f);
    }
    let Some(user) = &ctx.user else {
        return;
    };
    if !user.name.is_empty() {
        spec.insert("username".into(), user.name.clone().into());
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

impl Server {
    /// The storage-level steps of a create, after the mutating admission.
    pub async fn storage_create(
        &self,
        ctx: &Ctx,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        if ctx.entry.def.group.is_empty() && ctx.entry.def.resource == "services" {
            self.allocate_service(ctx, obj, opts).await?;
        }
        if ctx.entry.def.group == kapi_resources::certificates::GROUP {
            fill_requestor(ctx, obj);
        }
        if let Some(guard) = kapi_auth::authz::escalation::Guard::prepare(
            &self.authz,
            &ctx.escalation_target(),
            Some(obj),
        )
        .await?
        {
            guard.check(obj, None)?;
        }
        Ok(())
    }

    /// The storage-level rules of a delete: system priority classes stay.
    pub fn storage_delete(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let def = &ctx.entry.def;
        let system_class = kapi_resources::scheduling::SYSTEM_CLASSES
            .iter()
            .any(|c| c.name == ctx.name());
        if def.group == kapi_resources::scheduling::GROUP && system_class {
            return Err(ApiError::forbidden(
                def.group_resource(),
                ctx.name(),
                "this is a system priority class and cannot be deleted",
            ));
        }
        Ok(())
    }

    async fn used_by_services(&self) -> Result<(HashSet<Ipv4Addr>, HashSet<i64>), ApiError> {
        let services = self
            .apis
            .lookup("", "v1", "services")
            .expect("services served");
        let all = services.store.list(None, &ListOptions::default()).await?;
        let mut ips = HashSet::new();
        let mut ports = HashSet::new();
        for s in &all.items {
            if let Some(ip) = s
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .and_then(|i| i.parse().ok())
            {
                ips.insert(ip);
            }
            for p in s
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                    ports.insert(n);
                }
            }
        }
        Ok((ips, ports))
    }

    async fn allocate_service(
        &self,
        ctx: &Ctx,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        let (mut used_ips, used_ports) = self.used_by_services().await?;
        let spec_type = obj
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_owned();
        if spec_type == "ExternalName" {
            return Ok(());
        }
        let range = self.config.service_cidr;
        {
            let mut recent = self.allocations.ips.lock().expect("lock");
            used_ips.extend(recent.iter().copied());
            let requested = obj
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or("");
            let ip = match requested {
                "None" => None,
                "" => Some(self.free_ip(&range, &used_ips).ok_or_else(|| {
                    ApiError::internal("failed to allocate a serviceIP: range is full")
                })?),
                s => {
                    let path = FieldPath::new("spec").child("clusterIP");
                    let ip: Ipv4Addr = s.parse().map_err(|_| {
                        invalid(ctx, path.clone(), json!(s), "must be a valid IP address")
                    })?;
                    if !range.contains(ip) {
                        return Err(invalid(ctx, path, json!(s), &format!("provided IP is not in the valid range. The range of valid IPs is {}/{}", range.nth(0), range.bits)));
                    }
                    if used_ips.contains(&ip) {
                        return Err(invalid(
                            ctx,
                            path,
                            json!(s),
                            "provided IP is already allocated",
                        ));
                    }
                    Some(ip)
                }
            };
            if let Some(ip) = ip {
                let spec = obj
                    .get_mut("spec")
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| ApiError::bad_request("spec is required"))?;
                spec.insert("clusterIP".into(), json!(ip.to_string()));
                spec.insert("clusterIPs".into(), json!([ip.to_string()]));
                if !opts.dry_run {
                    recent.insert(ip);
                }
            }
        }
        if spec_type == "NodePort" || spec_type == "LoadBalancer" {
            self.fill_node_ports(obj, used_ports, &[], opts.dry_run)?;
        }
        Ok(())
    }

    /// A service update's allocations, as upstream's `allocateUpdate`: what the
    /// update leaves out is kept from the stored service (cluster IP, node
    /// ports of the same port and protocol), and what a type change newly
    /// needs is allocated — a cluster IP when leaving `ExternalName`, node
    /// ports when becoming `NodePort` or `LoadBalancer`.
    pub async fn allocate_service_update(
        &self,
        obj: &mut Value,
        old: &Value,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let type_of = |v: &Value| {
            v.pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP")
                .to_owned()
        };
        let (new_type, old_type) = (type_of(obj), type_of(old));
        if new_type == "ExternalName" || !obj.get("spec").is_some_and(Value::is_object) {
            return Ok(());
        }
        let (mut used_ips, used_ports) = self.used_by_services().await?;
        let old_ip = old
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty() && old_type != "ExternalName");
        let old_node_ports: Vec<(i64, String, i64)> = old
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let port = p.get("port").and_then(Value::as_i64)?;
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                let node = p.get("nodePort").and_then(Value::as_i64)?;
                Some((port, proto.to_owned(), node))
            })
            .collect();
        // The service's own values are not somebody else's (its node ports:
        // `fill_node_ports`).
        if let Some(ip) = old_ip.and_then(|ip| ip.parse::<Ipv4Addr>().ok()) {
            used_ips.remove(&ip);
        }
        let wanted_ip = obj
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("");
        if wanted_ip.is_empty() {
            let ip = match old_ip {
                Some(ip) => ip.to_owned(),
                None => {
                    let mut recent = self.allocations.ips.lock().expect("lock");
                    used_ips.extend(recent.iter().copied());
                    let ip = self
                        .free_ip(&self.config.service_cidr, &used_ips)
                        .ok_or_else(|| {
                            ApiError::internal("failed to allocate a serviceIP: range is full")
                        })?;
                    if !dry_run {
                        recent.insert(ip);
                    }
                    ip.to_string()
                }
            };
            obj["spec"]["clusterIP"] = json!(ip);
            obj["spec"]["clusterIPs"] = json!([ip]);
        }
        if new_type != "NodePort" && new_type != "LoadBalancer" {
            return Ok(());
        }
        self.fill_node_ports(obj, used_ports, &old_node_ports, dry_run)
    }

    /// Give every port of `obj` without a `nodePort` one: the node port of the
    /// `kept` entry with the same port and protocol (`(port, protocol,
    /// nodePort)` of the stored service), else a free one outside `used` and
    /// outside what was handed out recently.
    fn fill_node_ports(
        &self,
        obj: &mut Value,
        mut used: HashSet<i64>,
        kept: &[(i64, String, i64)],
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let mut recent = self.allocations.ports.lock().expect("lock");
        used.extend(recent.iter().copied());
        for (_, _, node) in kept {
            used.remove(node);
        }
        for p in obj
            .pointer_mut("/spec/ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if p.get("nodePort").and_then(Value::as_i64).is_some() {
                continue;
            }
            let port = p.get("port").and_then(Value::as_i64);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            let reused = kept
                .iter()
                .find(|(kp, kproto, _)| Some(*kp) == port && kproto == proto)
                .map(|(_, _, node)| *node);
            let node = match reused {
                Some(n) => n,
                None => (30000..=32767)
                    .find(|n| !used.contains(n))
                    .ok_or_else(|| ApiError::internal("node port range is full"))?,
            };
            used.insert(node);
            if !dry_run {
                recent.insert(node);
            }
            p["nodePort"] = json!(node);
        }
        Ok(())
    }

    fn free_ip(&self, range: &Cidr, used: &HashSet<Ipv4Addr>) -> Option<Ipv4Addr> {
        let usable = range.size().saturating_sub(2);
        let start = rand_start(usable);
        (0..usable)
            .map(|i| range.nth(2 + (start + i) % usable.saturating_sub(1).max(1)))
            .find(|ip| !used.contains(ip) && range.contains(*ip))
    }
}

fn rand_start(n: u32) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos % n.max(1)
}
