//! The storage test binary: one conformance suite run against every backend
//! (`conformance.rs`) and the TTL suite (`ttl.rs`, both backends too), plus the
//! embedded store's durability and memory tests (`durability.rs`, `history.rs`)
//! and the etcd outage test (`outage.rs`). Real parts only: etcd tests start
//! Debian's `etcd` on a free loopback port.

mod conformance;
mod dialer;
mod durability;
mod fixtures;
mod history;
mod outage;
mod ttl;
