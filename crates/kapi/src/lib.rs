//! kapi: the binary's library half — the one place a server is assembled
//! from its parts (`assemble.rs`), used by `kapi serve` (`main.rs`,
//! `serve.rs`: flags, storage, TLS) and by the end-to-end tests.

pub mod assemble;

pub use assemble::{build, runtime_config_off, Built, Options};
