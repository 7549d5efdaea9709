//! Leases for keys written with a TTL on etcd, shared as upstream's lease
//! manager shares them: granting a lease is a raft round trip of its own, so a
//! write reuses the last lease granted for the same TTL while that lease will
//! outlive the key by no more than a reuse period.
//!
//! The rule (upstream `lease_manager.go`): a lease for a TTL of `t` seconds is
//! granted for `t + r`, where `r` is 5 % of `t` capped by the reuse duration
//! (`--lease-reuse-duration-seconds`, 60); a later write with the same TTL
//! reuses it while the lease ends after `now + t` (the key lives at least its
//! TTL) and before `now + t + r` (and at most `r` longer), and while fewer than
//! 1,000 writes have been attached to it. Upstream keeps one lease per
//! resource's store; here one backend serves every resource, so one lease is
//! kept per TTL.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use etcd_client::Client;

use crate::backend::{Result, StorageError};

/// Writes attached to one lease at most (upstream: `leaseMaxObjectCount`).
const MAX_ATTACHED: u64 = 1000;
/// The share of the TTL a lease may outlive a key by (upstream: 5 %).
const REUSE_PERCENT: f64 = 0.05;

struct Granted {
    id: i64,
    ends: Instant,
    attached: u64,
}

pub(crate) struct LeaseManager {
    reuse: Duration,
    by_ttl: Mutex<HashMap<u64, Granted>>,
}

impl LeaseManager {
    pub fn new(reuse: Duration) -> Self {
        LeaseManager {
            reuse,
            by_ttl: Mutex::new(HashMap::new()),
        }
    }

    /// The lease a write with `ttl` attaches to: a reused one, or a new grant.
    pub async fn lease(&self, client: &Client, ttl: Duration) -> Result<i64> {
        // etcd counts whole seconds; round up so a key never lives less.
        let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
        let secs = secs.max(1);
        let reuse = ((secs as f64 * REUSE_PERCENT) as u64).min(self.reuse.as_secs());
        let now = Instant::now();
        if let Some(id) = self.reusable(secs, reuse, now) {
            return Ok(id);
        }
        let granted = secs + reuse;
        let resp = client
            .lease_client()
            .grant(granted as i64, None)
            .await
            .map_err(|e| StorageError::Unavailable(format!("etcd: granting a lease: {e}")))?;
        let lease = Granted {
            id: resp.id(),
            ends: now + Duration::from_secs(granted),
            attached: 1,
        };
        self.by_ttl.lock().expect("lease lock").insert(secs, lease);
        Ok(resp.id())
    }

    /// Stop reusing the lease for `ttl` (etcd no longer knows it).
    pub fn forget(&self, ttl: Duration) {
        let secs = (ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)).max(1);
        self.by_ttl.lock().expect("lease lock").remove(&secs);
    }

    fn reusable(&self, secs: u64, reuse: u64, now: Instant) -> Option<i64> {
        let mut leases = self.by_ttl.lock().expect("lease lock");
        let lease = leases.get_mut(&secs)?;
        lease.attached += 1;
        let lives_long_enough = now + Duration::from_secs(secs) < lease.ends;
        let not_too_long = now + Duration::from_secs(secs + reuse) > lease.ends;
        (lives_long_enough && not_too_long && lease.attached <= MAX_ATTACHED).then_some(lease.id)
    }
}
