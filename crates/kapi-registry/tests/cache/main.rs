//! The watch cache test binary: the storage conformance suite (the very file the
//! backends run, `kapi-storage/tests/storage/conformance.rs`) against the cache
//! over each backend (`fixtures.rs`), plus the cache's own properties
//! (`behaviour.rs`, `window.rs`, `memo.rs`) and the store's reads and watches through it
//! (`store.rs`, `watch_stream.rs`), and objects written with a TTL (`ttl.rs`).

mod admitted;
mod behaviour;
#[path = "../../../kapi-storage/tests/storage/conformance.rs"]
mod conformance;
mod fixtures;
mod generate;
mod kept;
mod memo;
mod store;
mod ttl;
mod watch_stream;
mod window;
