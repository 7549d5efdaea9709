//! The API server's identity lease, as kube-apiserver keeps it with the
//! `APIServerIdentity` gate on (its default since 1.26): a Lease in
//! `kube-system` named after the host (`apiserver-` and the base32 of a
//! SHA-256 of the host name and `kube-apiserver`, the same name on every start
//! on the host), held by `<name>_<uuid>` (a new UUID per start), labelled
//! `apiserver.kubernetes.io/identity=kube-apiserver` and with the host name,
//! lasting an hour and renewed every 10 s. Once an hour, leases with that
//! label whose time has run out are deleted (the servers that held them are
//! gone), as upstream's identity lease garbage collector does.

use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::{DeleteOptions, ListOptions, Preconditions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use sha2::Digest as _;

use crate::Context;

const NAMESPACE: &str = "kube-system";
const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
const IDENTITY: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const DURATION_SECONDS: i64 = 3600;
const RENEW_INTERVAL: Duration = Duration::from_secs(10);
const GC_PERIOD: Duration = Duration::from_secs(3600);
const MANAGER: &str = "kube-apiserver";

/// The host name, as Go's `os.Hostname` reads it on Linux.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// The lease's name for `host` (upstream's `APIServerID`): the first 16
/// bytes of the SHA-256 of the host name and `kube-apiserver`, each with a
/// two-byte length before it, in lower-case unpadded base32.
pub fn apiserver_id(host: &str) -> String {
    let mut h = sha2::Sha256::new();
    for part in [host.as_bytes(), IDENTITY.as_bytes()] {
        h.update((part.len() as u16).to_be_bytes());
        h.update(part);
    }
    let sum = h.finalize();
    format!("apiserver-{}", base32_lower(&sum[..16]))
}

/// RFC 4648 base32 without padding, lower case.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// The lease as this server holds it, renewed now.
fn lease(name: &str, holder: &str, host: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {IDENTITY_LABEL: IDENTITY, HOSTNAME_LABEL: host}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": DURATION_SECONDS,
                 "renewTime": kapi_registry::meta::now_micro_rfc3339()},
    })
}

/// Keep this server's identity lease, and collect expired ones.
pub fn spawn(cx: Arc<Context>) {
    let host = hostname();
    let name = apiserver_id(&host);
    let holder = format!("{name}_{}", uuid::Uuid::new_v4());
    tokio::spawn(async move {
        let mut renew = tokio::time::interval(RENEW_INTERVAL);
        let mut gc = tokio::time::interval(GC_PERIOD);
        loop {
            tokio::select! {
                _ = renew.tick() => {
                    if let Err(e) = renew_lease(&cx, &name, &holder, &host).await {
                        tracing::debug!(error = %e, "identity lease renewal failed");
                    }
                }
                _ = gc.tick() => {
                    if let Err(e) = collect(&cx).await {
                        tracing::debug!(error = %e, "identity lease collection failed");
                    }
                }
            }
        }
    });
}

async fn renew_lease(cx: &Context, name: &str, holder: &str, host: &str) -> Result<(), ApiError> {
    let Some(leases) = cx.apis.lookup("coordination.k8s.io", "v1", "leases") else {
        return Ok(());
    };
    let opts = WriteOptions::for_manager(MANAGER);
    let desired = lease(name, holder, host);
    let r = leases
        .store
        .update_with(
            Some(NAMESPACE),
            name,
            UpdateTarget::Main,
            &opts,
            true,
            |cur| {
                let Some(cur) = cur else {
                    return Ok(desired.clone());
                };
                let mut next = cur.clone();
                next["spec"]["holderIdentity"] = desired["spec"]["holderIdentity"].clone();
                next["spec"]["leaseDurationSeconds"] = json!(DURATION_SECONDS);
                next["spec"]["renewTime"] = json!(kapi_registry::meta::now_micro_rfc3339());
                let labels = kapi_registry::meta::meta_mut(&mut next)
                    .entry("labels")
                    .or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels[IDENTITY_LABEL] = json!(IDENTITY);
                labels[HOSTNAME_LABEL] = json!(host);
                Ok(next)
            },
        )
        .await;
    r.map(|_| ())
}

/// Whether `lease` ran out before `now` (Unix seconds).
fn expired(lease: &Value, now: i64) -> bool {
    let Some(renewed) = lease
        .pointer("/spec/renewTime")
        .and_then(Value::as_str)
        .and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        })
    else {
        return true;
    };
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    renewed.unix_timestamp() + duration < now
}

/// Delete the identity leases whose time ran out.
async fn collect(cx: &Context) -> Result<(), ApiError> {
    let Some(leases) = cx.apis.lookup("coordination.k8s.io", "v1", "leases") else {
        return Ok(());
    };
    let label = kapi_machinery::labels::parse(&format!("{IDENTITY_LABEL}={IDENTITY}"))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let opts = ListOptions {
        label,
        ..ListOptions::default()
    };
    let list = leases.store.list(Some(NAMESPACE), &opts).await?;
    for l in list.items.iter().filter(|l| expired(l, now)) {
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: None,
                resource_version: kapi_registry::meta::resource_version(l).map(str::to_owned),
            },
            ..DeleteOptions::default()
        };
        let name = kapi_registry::meta::name(l);
        match leases.store.delete(Some(NAMESPACE), name, &opts).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name kube-apiserver 1.28 gave its lease on a host named `vm`.
    #[test]
    fn the_name_is_upstreams_for_the_host() {
        assert_eq!(apiserver_id("vm"), "apiserver-wlv32tlttr4jl3gtroqexyxapa");
    }

    #[test]
    fn a_lease_expires_its_duration_after_its_renewal() {
        let l = json!({"spec": {"renewTime": "2026-01-01T00:00:00.000000Z", "leaseDurationSeconds": 3600}});
        let t = time::macros::datetime!(2026-01-01 00:00:00 UTC).unix_timestamp();
        assert!(!expired(&l, t + 3600));
        assert!(expired(&l, t + 3601));
        assert!(expired(&json!({}), t));
    }
}
