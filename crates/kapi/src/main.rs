//! The `kapi` binary: flags (named as kube-apiserver's where the feature is the
//! same), wiring of storage → server (`kapi::assemble`) → TLS listener, and
//! `kapi serve`.

mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "kapi", version, about = "A Kubernetes API server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API server.
    Serve(Box<serve::ServeArgs>),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(*args)),
    };
    if let Err(e) = result {
        eprintln!("kapi: {e}");
        std::process::exit(1);
    }
}
