//! What a service holds of the ranges, and what one write took, to settle
//! once the write is over.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::Value;

use super::ServiceAllocator;

/// What one service holds: allocation offsets of its ClusterIP and node ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub ips: BTreeSet<u32>,
    pub ports: BTreeSet<u32>,
    /// Node ports a dry run pretended to take.
    pub(super) dry_ports: u32,
}

impl Held {
    pub(super) fn minus(&self, other: &Held) -> Held {
        Held {
            ips: self.ips.difference(&other.ips).copied().collect(),
            ports: self.ports.difference(&other.ports).copied().collect(),
            dry_ports: 0,
        }
    }

    pub(super) fn extend(&mut self, other: &Held) {
        self.ips.extend(&other.ips);
        self.ports.extend(&other.ports);
    }
}

/// One write's allocations: what it took, and what the stored service held.
#[derive(Default)]
pub struct Reserved {
    taken: Mutex<Held>,
    old: Mutex<Held>,
}

impl Reserved {
    pub fn record(&self, taken: Held, old: Held) {
        self.taken.lock().expect("reserved lock").extend(&taken);
        *self.old.lock().expect("reserved lock") = old;
    }

    /// What goes back once the write is over: what it took, and (when it
    /// stored `stored`) what the old service held, minus what `stored` holds.
    pub fn to_release(&self, alloc: &ServiceAllocator, stored: Option<&Value>) -> Held {
        let mut out = std::mem::take(&mut *self.taken.lock().expect("reserved lock"));
        let Some(stored) = stored else {
            return out;
        };
        out.extend(&self.old.lock().expect("reserved lock"));
        out.minus(&alloc.held(stored))
    }
}
