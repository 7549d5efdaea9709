//! kapi-encryption against real backends (the embedded store, real etcd) and
//! the KMS v2 plugin written for tests: what is stored, what is read, stale
//! values, rotation, reload, and the failure cases — a plugin down or hanging,
//! bad files. One binary; modules by concern.

mod backend;
mod config_errors;
mod fixtures;
mod kms;
mod reload;
