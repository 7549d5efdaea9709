//! Link flags for the `kapi` binary.
//!
//! `-z pack-relative-relocs` stores the position-independent executable's
//! relative relocations as a compact DT_RELR table (glibc 2.36, binutils 2.38)
//! instead of a 1.4 MiB `.rela.dyn` that the loader reads in full at every start.
//! The binary stays position independent. GNU ld leaves the table unpacked (with
//! a warning) when the C library cannot read it, so older systems still link.
//!
//! `--symbol-ordering-file=symbol-order.txt` (release builds linked by lld, the
//! default linker of x86_64 Linux since Rust 1.90): the functions a server runs
//! while it starts and idles come first in `.text`, so the pages it has touched
//! are few and adjacent rather than spread over the whole text — idle RSS
//! ~28 → ~18 MiB. The names are the same in every clone's build because the
//! release profile has one code unit per crate (root `Cargo.toml`).
//! `scripts/symbol-order` regenerates the list; names it holds that a build
//! lacks (another compiler, changed dependencies) are skipped without a
//! warning. `KAPI_SYMBOL_ORDER=0` turns it off (for another linker).

use std::process::Command;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo::rerun-if-changed=symbol-order.txt");
    println!("cargo::rerun-if-env-changed=KAPI_SYMBOL_ORDER");
    // The profile first: a debug build need not ask rustc about its linker.
    if std::env::var("PROFILE").as_deref() == Ok("release") && links_with_lld() {
        let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
        let order = std::path::Path::new(&dir).join("symbol-order.txt");
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the binary is linked by rustc's own lld: x86_64 Linux with the GNU
/// C library, Rust 1.90 or later with its self-contained `ld.lld` installed (a
/// distribution's rustc may link with the system's linker instead), no linker
/// chosen in the flags, and not turned off with `KAPI_SYMBOL_ORDER=0`.
fn links_with_lld() -> bool {
    if std::env::var("KAPI_SYMBOL_ORDER").as_deref() == Ok("0") {
        return false;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(sysroot) = Command::new(&rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    let lld = std::path::Path::new(&sysroot)
        .join("lib/rustlib")
        .join(&target)
        .join("bin/gcc-ld/ld.lld");
    if !lld.exists() {
        return false;
    }
    let Ok(out) = Command::new(&rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let minor = text
        .lines()
        .find_map(|l| l.strip_prefix("release: 1."))
        .and_then(|rest| rest.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
