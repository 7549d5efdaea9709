//! Master leases, as upstream's lease endpoint reconciler: every API server
//! sharing the storage keeps a record `/masterleases/<ip>:<port>` renewed every
//! reconcile interval, and the `default/kubernetes` endpoints list exactly the
//! servers whose record is younger than [`TTL`]. Every instance computes the same
//! endpoints from the same records, so several instances never fight over them;
//! a server that stops renewing drops out after the TTL (its expired record is
//! deleted by whoever sees it first).
//!
//! Upstream gives each record an etcd TTL; the `Backend` has no leases, so a
//! record carries its renewal time and expiry is judged by the reader's clock
//! (instances need roughly synchronised clocks, as for any Lease object).

use std::collections::BTreeMap;
use std::net::IpAddr;

use bytes::Bytes;
use kapi_storage::{Backend, ListOptions, StorageError};
use serde_json::{json, Value};

/// Where the records live (outside every resource's key prefix).
pub const PREFIX: &str = "/masterleases/";
/// How long a record counts without renewal (upstream `--endpoint-reconciler` TTL).
pub const TTL_SECS: i64 = 15;

/// One server's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Master {
    pub ip: IpAddr,
    pub port: u16,
}

fn key(m: Master) -> String {
    format!("{PREFIX}{}", std::net::SocketAddr::new(m.ip, m.port))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Write (or renew) this server's record.
pub async fn renew(backend: &dyn Backend, me: Master) -> Result<(), StorageError> {
    renew_at(backend, me, now_secs()).await
}

async fn renew_at(backend: &dyn Backend, me: Master, now: i64) -> Result<(), StorageError> {
    let record = json!({"ip": me.ip.to_string(), "port": me.port, "renewTime": now});
    let value = Bytes::from(record.to_string());
    let key = key(me);
    match backend.get(&key, None).await? {
        None => match backend.create(&key, value).await {
            Err(StorageError::AlreadyExists { .. }) => Ok(()),
            other => other.map(|_| ()),
        },
        Some(kv) => match backend.update(&key, value, kv.mod_revision).await {
            // Someone (this server, a moment ago) renewed it: fine.
            Err(StorageError::Conflict { .. }) => Ok(()),
            other => other.map(|_| ()),
        },
    }
}

/// The servers with a live record, sorted; expired records are deleted.
pub async fn live(backend: &dyn Backend) -> Result<Vec<Master>, StorageError> {
    live_at(backend, now_secs()).await
}

async fn live_at(backend: &dyn Backend, now: i64) -> Result<Vec<Master>, StorageError> {
    let page = backend.list(PREFIX, ListOptions::default()).await?;
    let mut out = Vec::new();
    for kv in page.kvs {
        let record: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
        let ip = record["ip"].as_str().and_then(|s| s.parse::<IpAddr>().ok());
        let port = record["port"].as_u64().and_then(|p| u16::try_from(p).ok());
        let renewed = record["renewTime"].as_i64().unwrap_or(0);
        match (ip, port) {
            (Some(ip), Some(port)) if now - renewed <= TTL_SECS => out.push(Master { ip, port }),
            _ => {
                // Expired or unreadable: gone, unless it was renewed meanwhile.
                let _ = backend.delete(&kv.key, Some(kv.mod_revision)).await;
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The `subsets` of the kubernetes Endpoints for `masters`: one subset per
/// port, addresses sorted, as every instance computes it alike.
pub fn subsets(masters: &[Master]) -> Value {
    let mut by_port: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for m in masters {
        by_port.entry(m.port).or_default().push(m.ip.to_string());
    }
    let subsets: Vec<Value> = by_port
        .into_iter()
        .map(|(port, mut ips)| {
            ips.sort();
            ips.dedup();
            let addresses: Vec<Value> = ips.into_iter().map(|ip| json!({"ip": ip})).collect();
            json!({"addresses": addresses,
                   "ports": [{"name": "https", "port": port, "protocol": "TCP"}]})
        })
        .collect();
    Value::Array(subsets)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};

    use super::*;

    fn m(ip: &str, port: u16) -> Master {
        Master {
            ip: ip.parse().unwrap(),
            port,
        }
    }

    #[tokio::test]
    async fn records_live_until_the_ttl_and_then_go() {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> =
            Arc::new(EmbeddedBackend::open(EmbeddedConfig::new(dir.path())).unwrap());
        let b = backend.as_ref();
        renew_at(b, m("10.0.0.2", 6443), 1_000).await.unwrap();
        renew_at(b, m("10.0.0.1", 6443), 1_000).await.unwrap();
        renew_at(b, m("10.0.0.1", 6443), 1_010).await.unwrap();
        assert_eq!(
            live_at(b, 1_012).await.unwrap(),
            [m("10.0.0.1", 6443), m("10.0.0.2", 6443)]
        );
        // 10.0.0.2 stopped renewing: gone after the TTL, its record deleted.
        assert_eq!(live_at(b, 1_020).await.unwrap(), [m("10.0.0.1", 6443)]);
        let left = b.list(PREFIX, ListOptions::default()).await.unwrap();
        assert_eq!(left.kvs.len(), 1);
    }

    #[test]
    fn subsets_group_addresses_by_port() {
        let masters = [
            m("10.0.0.2", 6443),
            m("10.0.0.1", 6443),
            m("127.0.0.1", 7443),
        ];
        assert_eq!(
            subsets(&masters),
            json!([
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                 "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]},
                {"addresses": [{"ip": "127.0.0.1"}],
                 "ports": [{"name": "https", "port": 7443, "protocol": "TCP"}]},
            ])
        );
    }
}
