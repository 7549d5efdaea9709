//! Master leases, as upstream's lease endpoint reconciler: every API server
//! sharing the storage keeps a record under `/masterleases/` renewed every
//! reconcile interval, and the `default/kubernetes` endpoints list exactly the
//! servers whose record is younger than [`TTL_SECS`]. Every instance computes
//! the same endpoints from the same records, so several instances never fight
//! over them; a server that stops renewing drops out after the TTL (its expired
//! record is deleted by whoever sees it first).
//!
//! A record is what kube-apiserver writes there, a v1 `Endpoints` with the
//! server's address (encoded by the storage codec, protobuf by default), so
//! kube-apiserver and kapi sharing an etcd count each other. Upstream expires
//! its records with an etcd lease; the `Backend` has no leases, so kapi's
//! records carry their renewal time ([`RENEWED`]) and expiry is judged by the
//! reader's clock (instances need roughly synchronised clocks, as for any Lease
//! object). A record without one (upstream's) counts while it exists, on this
//! server's port (upstream records only addresses); its lease removes it.
//! kapi's own keys are `<ip>:<port>`, so instances on one host differ.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kapi_registry::{Origin, StorageCodec};
use kapi_storage::{Backend, ListOptions, StorageError};
use serde_json::{json, Value};

/// Where the records live (outside every resource's key prefix).
pub const PREFIX: &str = "/masterleases/";
/// How long a record counts without renewal (upstream `--endpoint-reconciler` TTL).
pub const TTL_SECS: i64 = 15;
/// The annotation holding a kapi record's renewal time (Unix seconds).
pub const RENEWED: &str = "kapi.k8s.io/renewed";

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
pub async fn renew(
    backend: &dyn Backend,
    codec: &StorageCodec,
    me: Master,
) -> Result<(), StorageError> {
    renew_at(backend, codec, me, now_secs()).await
}

/// The record of `me` renewed at `now`.
fn record(me: Master, now: i64) -> Value {
    let ip = me.ip.to_string();
    json!({"kind": "Endpoints", "apiVersion": "v1",
           "metadata": {"name": ip, "annotations": {RENEWED: now.to_string()}},
           "subsets": [{"addresses": [{"ip": ip}],
                        "ports": [{"port": me.port, "protocol": "TCP"}]}]})
}

async fn renew_at(
    backend: &dyn Backend,
    codec: &StorageCodec,
    me: Master,
    now: i64,
) -> Result<(), StorageError> {
    let value = codec
        .encode(Origin::Builtin, &record(me, now))
        .map_err(|e| StorageError::Internal(e.to_string()))?;
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

/// The servers with a live record, sorted; expired records are deleted. A
/// record naming no port (upstream's) is on `port`.
pub async fn live(
    backend: &dyn Backend,
    codec: &StorageCodec,
    port: u16,
) -> Result<Vec<Master>, StorageError> {
    live_at(backend, codec, port, now_secs()).await
}

/// What one record says: the server, and when it was renewed if it says.
fn read_record(codec: &StorageCodec, value: &[u8], port: u16) -> Option<(Master, Option<i64>)> {
    let rec = codec.decode(value).ok()?;
    if rec["kind"] != "Endpoints" {
        // Written by an older kapi: `{"ip", "port", "renewTime"}`.
        let ip = rec["ip"].as_str()?.parse().ok()?;
        let port = u16::try_from(rec["port"].as_u64()?).ok()?;
        return Some((Master { ip, port }, Some(rec["renewTime"].as_i64()?)));
    }
    let subset = rec.pointer("/subsets/0")?;
    let ip = subset.pointer("/addresses/0/ip")?.as_str()?.parse().ok()?;
    let port = match subset.pointer("/ports/0/port").and_then(Value::as_u64) {
        Some(p) => u16::try_from(p).ok()?,
        None => port,
    };
    let renewed = rec
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RENEWED))
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok());
    Some((Master { ip, port }, renewed))
}

async fn live_at(
    backend: &dyn Backend,
    codec: &StorageCodec,
    port: u16,
    now: i64,
) -> Result<Vec<Master>, StorageError> {
    let page = backend.list(PREFIX, ListOptions::default()).await?;
    let mut out = Vec::new();
    for kv in page.kvs {
        match read_record(codec, &kv.value, port) {
            Some((m, None)) => out.push(m),
            Some((m, Some(renewed))) if now - renewed <= TTL_SECS => out.push(m),
            Some((_, Some(_))) => {
                // Expired: gone, unless it was renewed meanwhile.
                let _ = backend.delete(&kv.key, Some(kv.mod_revision)).await;
            }
            None => tracing::debug!(key = %kv.key, "unreadable master lease record"),
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
        let c = &StorageCodec::default();
        renew_at(b, c, m("10.0.0.2", 6443), 1_000).await.unwrap();
        renew_at(b, c, m("10.0.0.1", 6443), 1_000).await.unwrap();
        renew_at(b, c, m("10.0.0.1", 6443), 1_010).await.unwrap();
        assert_eq!(
            live_at(b, c, 1, 1_012).await.unwrap(),
            [m("10.0.0.1", 6443), m("10.0.0.2", 6443)]
        );
        // 10.0.0.2 stopped renewing: gone after the TTL, its record deleted.
        assert_eq!(
            live_at(b, c, 1, 1_020).await.unwrap(),
            [m("10.0.0.1", 6443)]
        );
        let left = b.list(PREFIX, ListOptions::default()).await.unwrap();
        assert_eq!(left.kvs.len(), 1);
        assert!(
            left.kvs[0].value.starts_with(b"k8s\0"),
            "an Endpoints, as upstream's"
        );
    }

    /// kube-apiserver's record (an address, no port, expired by its etcd
    /// lease) counts on this server's port and is never deleted here; an
    /// older kapi's JSON record still reads.
    #[tokio::test]
    async fn upstreams_and_older_records_count() {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> =
            Arc::new(EmbeddedBackend::open(EmbeddedConfig::new(dir.path())).unwrap());
        let b = backend.as_ref();
        let c = &StorageCodec::default();
        // As kube-apiserver 1.28 wrote it (the upstream fixture's record).
        let upstream = b"k8s\x00\n\x0f\n\x02v1\x12\tEndpoints\x12#\n\x10\n\x00\x12\x00\x1a\x00\"\x00*\x002\x008\x02B\x00\x12\x0f\n\r\n\t127.0.0.1\x1a\x00\x1a\x00\"\x00";
        b.create(
            "/masterleases/127.0.0.1",
            bytes::Bytes::from_static(upstream),
        )
        .await
        .unwrap();
        let old = r#"{"ip":"10.0.0.9","port":7443,"renewTime":1000}"#;
        b.create("/masterleases/10.0.0.9:7443", old.into())
            .await
            .unwrap();
        assert_eq!(
            live_at(b, c, 6443, 1_010).await.unwrap(),
            [m("10.0.0.9", 7443), m("127.0.0.1", 6443)]
        );
        assert_eq!(
            live_at(b, c, 6443, 9_999).await.unwrap(),
            [m("127.0.0.1", 6443)]
        );
        let left = b.list(PREFIX, ListOptions::default()).await.unwrap();
        assert_eq!(left.kvs.len(), 1, "only the expired kapi record went");
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
