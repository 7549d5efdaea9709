//! The storage test binary: one conformance suite run against every backend
//! (`conformance.rs`), plus the embedded store's durability tests (`durability.rs`)
//! and the etcd outage test (`outage.rs`). Real parts only: etcd tests start Debian's
//! `etcd` on a free loopback port.

mod conformance;
mod durability;
mod fixtures;
mod outage;
