//! Tests that try to break kapi (issue 9): the `kapi` binary as a child process
//! killed and restarted (`crash.rs`, `diskfull.rs`), several instances on a
//! 3-member etcd cluster (`ha.rs`), a linearizability check (`linear.rs`),
//! hostile input (`hostile.rs`), slow and idle connections (`loris.rs`),
//! security defaults (`security.rs`), the fuzz entry points run on seeded
//! random input (`props.rs`, the same code as `fuzz/`), backups and
//! migrations under load and SIGKILL (`backup.rs`, `migrate.rs`), and events
//! expiring by `--event-ttl` (`events.rs`).
//!
//! Everything runs on loopback with bounded loops; `KAPI_LONG_TESTS=1` selects
//! the long variants (`docs/reliability.md`).

mod backup;
mod crash;
mod diskfull;
mod events;
mod ha;
mod hostile;
mod linear;
mod loris;
mod migrate;
mod proc;
mod props;
mod security;
mod util;
