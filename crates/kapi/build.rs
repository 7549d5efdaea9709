//! Link flags for the `kapi` binary.
//!
//! `-z pack-relative-relocs` stores the position-independent executable's
//! relative relocations as a compact DT_RELR table (glibc 2.36, binutils 2.38)
//! instead of a 1.4 MiB `.rela.dyn` that the loader reads in full at every start.
//! The binary stays position independent. GNU ld leaves the table unpacked (with
//! a warning) when the C library cannot read it, so older systems still link.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
