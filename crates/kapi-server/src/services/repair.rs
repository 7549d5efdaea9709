//! The repair loop: at start and every three minutes, what existing
//! services hold is recorded in the allocations, and what is recorded but
//! held by none is freed once seen so three times (a create between its
//! allocation and its write is not a leak).

use std::sync::Arc;

use kapi_machinery::status::ApiError;
use serde_json::Value;

use super::{Held, ServiceAllocator};

/// Upstream's repair period, and how often a value must be seen unheld
/// before it is freed.
const REPAIR_PERIOD: std::time::Duration = std::time::Duration::from_secs(180);
const REPAIRS_BEFORE_FREE: u8 = 3;

impl ServiceAllocator {
    /// One repair pass over every existing service: what they hold is
    /// recorded; what is recorded and unheld is freed once seen unheld
    /// [`REPAIRS_BEFORE_FREE`] times.
    pub async fn repair(&self, services: &[Value]) -> Result<(), ApiError> {
        let mut in_use = Held::default();
        for s in services {
            in_use.extend(&self.held(s));
        }
        let storage = |e: kapi_storage::StorageError| ApiError::internal(e.to_string());
        for (is_ip, alloc, used) in [
            (true, &self.ips, &in_use.ips),
            (false, &self.ports, &in_use.ports),
        ] {
            let recorded = alloc.allocated().await.map_err(storage)?;
            let free: Vec<u32> = {
                let mut leaks = self.leaks.lock().expect("leaks lock");
                leaks.retain(|(ip, o), _| {
                    *ip != is_ip || (recorded.contains(*o) && !used.contains(o))
                });
                let mut free = Vec::new();
                for o in recorded.iter().filter(|o| !used.contains(o)) {
                    let seen = leaks.entry((is_ip, o)).or_insert(0);
                    *seen += 1;
                    if *seen >= REPAIRS_BEFORE_FREE {
                        free.push(o);
                    }
                }
                free
            };
            alloc
                .replace(|current| {
                    let mut b = current.clone();
                    used.iter().for_each(|o| b.insert(*o));
                    free.iter().for_each(|o| b.remove(*o));
                    b
                })
                .await
                .map_err(storage)?;
        }
        Ok(())
    }

    /// Repair now and then every [`REPAIR_PERIOD`], reading the services
    /// from `services`.
    pub fn spawn_repair(self: &Arc<Self>, services: kapi_registry::Store) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(REPAIR_PERIOD).await;
                let listed = services.list(None, &Default::default()).await;
                let r = match listed {
                    Ok(l) => me.repair(&l.items).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e.message, "service allocation repair failed");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::Cidr;
    use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
    use serde_json::json;

    fn svc(ip: &str, node_port: u64) -> Value {
        json!({"spec": {"type": "NodePort", "clusterIP": ip,
                        "ports": [{"port": 80, "nodePort": node_port}]}})
    }

    #[tokio::test]
    async fn repair_records_what_services_hold_and_frees_a_leak_seen_three_times() {
        let dir = tempfile::tempdir().unwrap();
        let backend = EmbeddedBackend::open(EmbeddedConfig::new(dir.path())).unwrap();
        let cidr = Cidr::parse("10.0.0.0/24").unwrap();
        let a = ServiceAllocator::new(Arc::new(backend), cidr, crate::services::DEFAULT_NODE_PORTS);
        let (ips, ports) = (&a.ips, &a.ports);
        ips.allocate(9).await.unwrap();
        ports.allocate(9).await.unwrap();
        let services = [svc("10.0.0.5", 30005)];
        for pass in 1..=3 {
            a.repair(&services).await.unwrap();
            let (i, p) = (
                ips.allocated().await.unwrap(),
                ports.allocated().await.unwrap(),
            );
            assert!(i.contains(4) && p.contains(5), "held values are recorded");
            assert_eq!(i.contains(9), pass < 3, "pass {pass}");
            assert_eq!(p.contains(9), pass < 3, "pass {pass}");
        }
        assert_eq!(
            a.held(&services[0]).ips.into_iter().collect::<Vec<_>>(),
            vec![4]
        );
        assert_eq!(cidr.offset("10.0.0.255".parse().unwrap()), None);
        assert_eq!(cidr.offset("10.0.0.254".parse().unwrap()), Some(253));
    }
}
