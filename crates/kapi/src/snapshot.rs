//! `kapi snapshot save FILE --data-dir DIR` and `kapi snapshot restore FILE
//! --data-dir NEWDIR`: a backup of the embedded store, consistent at one
//! revision and taken while a server may be running on the directory, and a new
//! data directory made from one. The work is `kapi_storage::embedded`'s
//! (`backup.rs`, `offline.rs`); this module is flags and a report.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand};
use kapi_storage::embedded::{restore_snapshot, save_snapshot, BackupReport};

/// `kapi snapshot`.
#[derive(Parser, Debug)]
#[command(
    name = "kapi snapshot",
    about = "Back up the embedded store, or make a data directory from a backup"
)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    command: SnapshotCommand,
}

/// `kapi snapshot ARGS`; the process exit code.
pub fn main(args: &[String]) -> i32 {
    let argv = std::iter::once("kapi snapshot".to_owned()).chain(args.iter().cloned());
    let parsed = match SnapshotArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return i32::from(e.use_stderr());
        }
    };
    match run(parsed) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {e}");
            1
        }
    }
}

#[derive(Subcommand, Debug)]
enum SnapshotCommand {
    /// Write a backup of the store in a data directory (a server may be
    /// running on it) to FILE.
    Save {
        file: PathBuf,
        /// The data directory (`kapi serve --data-dir`).
        #[arg(long, default_value = "./kapi-data")]
        data_dir: PathBuf,
    },
    /// Make a new data directory whose store holds the backup in FILE.
    Restore {
        file: PathBuf,
        /// The data directory to create (its `store/` must not exist or be empty).
        #[arg(long)]
        data_dir: PathBuf,
    },
}

fn run(args: SnapshotArgs) -> Result<(), String> {
    let started = Instant::now();
    let (what, file, report) = match args.command {
        SnapshotCommand::Save { file, data_dir } => {
            let store = data_dir.join("store");
            let report = save_snapshot(&store, &file)
                .map_err(|e| format!("saving {}: {e}", store.display()))?;
            ("saved", file, report)
        }
        SnapshotCommand::Restore { file, data_dir } => {
            let store = data_dir.join("store");
            let report = restore_snapshot(&file, &store)
                .map_err(|e| format!("restoring into {}: {e}", store.display()))?;
            ("restored", file, report)
        }
    };
    print_report(what, &file, &report, started.elapsed().as_secs_f64());
    Ok(())
}

fn print_report(what: &str, file: &std::path::Path, r: &BackupReport, secs: f64) {
    let mib = r.bytes as f64 / (1 << 20) as f64;
    println!(
        "{what} {}: revision {}, {} keys, {mib:.1} MiB in {secs:.2} s ({:.1} MiB/s)",
        file.display(),
        r.revision,
        r.keys,
        mib / secs.max(1e-6)
    );
}
