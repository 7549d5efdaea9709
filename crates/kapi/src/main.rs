//! The `kapi` binary: `kapi serve [flags]`, or — when the program's file name is
//! `kube-apiserver` (a symlink or a copy) — `kube-apiserver [flags]`, the same
//! server with kube-apiserver's command line (`flags/`). Wiring of storage →
//! servers (`kapi::assemble`) → TLS listener is in `serve.rs`; logging setup
//! in `logging.rs`. The store's tools: `kapi snapshot save|restore`
//! (`snapshot.rs`) and `kapi migrate` (`migrate.rs`).
//!
//! Invariant: a bad command line prints one `Error: …` line to stderr and exits
//! 1, as upstream; `--help` and `--version` print to stdout and exit 0.

mod alloc;
mod auth_options;
mod certdir;
mod flags;
mod logging;
mod migrate;
mod serve;
mod serving;
mod snapshot;
mod storage;

use std::path::Path;

/// mimalloc rather than glibc's malloc: a request allocates and frees many
/// small values, and glibc's allocator was ~14 % of a create's CPU
/// (docs/performance.md, issue 26). Its arenas are committed on demand
/// (`.cargo/config.toml`), which keeps an idle server smaller. Called
/// through `alloc.rs`, which skips the aligned entry points when the layout
/// needs no more than a word.
#[global_allocator]
static ALLOCATOR: alloc::MiMalloc = alloc::MiMalloc;

const USAGE: &str = "kapi: a Kubernetes API server\n\n\
Usage:\n  kapi serve [flags]   run the API server (kapi serve --help lists the flags)\n  \
kapi snapshot save FILE --data-dir DIR      back up the embedded store (also while it serves)\n  \
kapi snapshot restore FILE --data-dir DIR   make a new data directory from a backup\n  \
kapi migrate --from DIR|URLS --to DIR|URLS  copy every key between a data directory and etcd\n  \
kapi --version       print the version\n\n\
Invoked as kube-apiserver (a symlink or a copy named so), kapi takes kube-apiserver's flags.\n";

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let program = argv
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if program == "kube-apiserver" {
        std::process::exit(serve_command("kube-apiserver", &argv[1..], true));
    }
    let code = match argv.get(1).map(String::as_str) {
        Some("serve") => serve_command("kapi serve", &argv[2..], false),
        Some("snapshot") => snapshot::main(&argv[2..]),
        Some("migrate") => migrate::main(&argv[2..]),
        Some("--version" | "-V" | "version") => {
            println!("kapi {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("--help" | "-h" | "help") => {
            print!("{USAGE}");
            0
        }
        Some(other) => {
            eprintln!("Error: unknown command \"{other}\" for \"kapi\"\n\n{USAGE}");
            1
        }
        None => {
            eprint!("{USAGE}");
            1
        }
    };
    std::process::exit(code);
}

/// Parse the serve flags and run; the process exit code.
fn serve_command(command: &str, args: &[String], as_kube_apiserver: bool) -> i32 {
    let flags = match flags::parse(command, args) {
        Ok(flags::Outcome::Help) => {
            print!("{}", flags::help::render(command));
            return 0;
        }
        Ok(flags::Outcome::Version(v)) => {
            print_version(&v);
            return 0;
        }
        Ok(flags::Outcome::Run(f)) => f,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    for w in flags.warnings() {
        eprintln!("{w}");
    }
    if let Err(e) = logging::init(&flags) {
        eprintln!("Error: {e}");
        return 1;
    }
    logging::report(&flags);
    let args = match flags::ServeArgs::from_flags(&flags, as_kube_apiserver) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match runtime.block_on(serve::run(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kapi: {e}");
            1
        }
    }
}

/// `--version` as upstream: `Kubernetes <gitVersion>`; `raw` prints the whole
/// version record; `vX.Y.Z` makes that the version printed.
fn print_version(v: &str) {
    let git = kapi_server::health::GIT_VERSION;
    match v {
        "raw" => println!(
            "version.Info{{Major:\"1\", Minor:\"33\", GitVersion:\"{git}\", GitCommit:\"{}\", \
             GitTreeState:\"clean\", BuildDate:\"1970-01-01T00:00:00Z\", Compiler:\"rustc\", \
             Platform:\"{}/{}\"}}",
            option_env!("KAPI_GIT_COMMIT").unwrap_or("unknown"),
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
        _ if v.starts_with('v') => println!("Kubernetes {v}"),
        _ => println!("Kubernetes {git}"),
    }
}
