//! `kapi migrate --from DIR|ETCD-URLS --to DIR|ETCD-URLS`: copy every key of a
//! store into another, the embedded store's data directory or etcd either way,
//! resumable after a kill (run the same command again) and verified at the end.
//! The work is `kapi_storage::migrate`'s; this module is flags and a report.

use std::path::PathBuf;

use clap::Parser;
use kapi_storage::etcd::EtcdConfig;
use kapi_storage::migrate::{migrate, Endpoint, MigrateOptions};

/// `kapi migrate`.
#[derive(Parser, Debug)]
#[command(
    name = "kapi migrate",
    about = "Copy every key between a data directory and etcd (either way), resumable and verified"
)]
pub struct MigrateArgs {
    /// A data directory, or etcd client URLs (comma-separated http:// or https://).
    #[arg(long)]
    from: String,
    /// A data directory (new, or with an empty store), or etcd client URLs.
    #[arg(long)]
    to: String,
    /// The key prefix on the etcd side(s).
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    #[arg(long)]
    etcd_cafile: Option<String>,
    #[arg(long)]
    etcd_certfile: Option<String>,
    #[arg(long)]
    etcd_keyfile: Option<String>,
    /// Keys read and written per page.
    #[arg(long, default_value_t = 500)]
    page: usize,
    /// Where progress is recorded (default: in the target data directory's
    /// store, or `./kapi-migrate.progress` for an etcd target).
    #[arg(long)]
    progress_file: Option<PathBuf>,
}

impl MigrateArgs {
    fn endpoint(&self, spec: &str) -> Endpoint {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let mut cfg = EtcdConfig::new(spec.split(',').map(str::to_owned).collect());
            cfg.prefix = self.etcd_prefix.clone();
            cfg.ca_file = self.etcd_cafile.clone();
            cfg.cert_file = self.etcd_certfile.clone();
            cfg.key_file = self.etcd_keyfile.clone();
            Endpoint::Etcd(cfg)
        } else {
            Endpoint::Dir(PathBuf::from(spec).join("store"))
        }
    }
}

/// `kapi migrate ARGS`; the process exit code.
pub fn main(args: &[String]) -> i32 {
    let argv = std::iter::once("kapi migrate".to_owned()).chain(args.iter().cloned());
    let parsed = match MigrateArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return i32::from(e.use_stderr());
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match runtime.block_on(run(parsed)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {e}");
            1
        }
    }
}

async fn run(args: MigrateArgs) -> Result<(), String> {
    let from = args.endpoint(&args.from);
    let to = args.endpoint(&args.to);
    let progress = args.progress_file.clone().unwrap_or_else(|| match &to {
        Endpoint::Dir(store) => store.join("migrate.progress"),
        Endpoint::Etcd(_) => PathBuf::from("kapi-migrate.progress"),
    });
    let opts = MigrateOptions {
        from,
        to,
        page: args.page,
        progress,
    };
    let report = migrate(&opts, |line| eprintln!("kapi migrate: {line}"))
        .await
        .map_err(|e| e.to_string())?;
    let mib = report.bytes as f64 / (1 << 20) as f64;
    let secs = report.copy_seconds.max(1e-6);
    println!(
        "migrated {} -> {} at source revision {}: {} keys copied ({} before a resume), {mib:.1} MiB of values in {secs:.2} s ({:.0} keys/s, {:.1} MiB/s)",
        args.from,
        args.to,
        report.source_revision,
        report.keys,
        report.resumed_at,
        report.keys as f64 / secs,
        mib / secs
    );
    println!("verified: {}", report.verified);
    Ok(())
}
