//! kapi: the binary's library half — the one place a server is assembled
//! from its parts (`assemble.rs`), used by `kapi serve` (`main.rs`,
//! `serve.rs`: flags, storage, TLS) and by the end-to-end tests; and the
//! OpenTelemetry pipeline of `--tracing-config-file` (`otel.rs`).

// The binary crate denies `unsafe_code` (Cargo.toml) only for the
// allocator in `main.rs`'s `alloc` module; the library forbids it.
#![forbid(unsafe_code)]

pub mod assemble;
pub mod otel;

pub use assemble::{build, runtime_config_off, Built, Options};
