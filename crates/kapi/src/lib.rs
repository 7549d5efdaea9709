//! kapi: the binary's library half — the one place a server is assembled
//! from its parts (`assemble.rs`), used by `kapi serve` (`main.rs`,
//! `serve.rs`: flags, storage, TLS) and by the end-to-end tests; and the
//! OpenTelemetry pipeline of `--tracing-config-file` (`otel.rs`).

pub mod assemble;
pub mod otel;

pub use assemble::{build, runtime_config_off, Built, Options};
