//! Backup and restore of the embedded store (`kapi snapshot save|restore`).
//!
//! A backup file is a snapshot (`snapshot.rs`'s format): a Meta frame whose
//! revision and compaction point are both the revision it was read at, one Put
//! frame per live key in key order (with its expiry, if any), and the trailer.
//! Saving reads the data directory without its lock (`offline.rs`), so it works
//! beside a running server; the file is written to a temporary name, fsynced and
//! renamed, so a backup that exists is whole. Restoring checks every frame and
//! places the file as the snapshot of a new store directory: the store opened
//! there serves every key at its revision and goes on numbering after it, so
//! resourceVersions clients hold stay below every new one (history before the
//! backup's revision is gone, as after a compaction: a watch from before it is
//! answered 410 and the client lists again).

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use super::index::Record;
use super::offline;
use super::wal::{self, FrameWriter};
use crate::backend::Revision;

/// What a save or a restore handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    /// The revision the backup is consistent at.
    pub revision: Revision,
    pub keys: u64,
    /// The size of the backup file.
    pub bytes: u64,
}

/// Write a backup of the store in `store_dir` to `out`.
pub fn save_snapshot(store_dir: &Path, out: &Path) -> io::Result<BackupReport> {
    let state = offline::read_state(store_dir)?;
    let tmp = temp_beside(out);
    let mut w = FrameWriter::create(&tmp)?;
    w.write(&Record::Meta {
        revision: state.revision,
        compacted: state.revision,
    })?;
    let mut keys = 0;
    for record in state.records() {
        w.write(&record?)?;
        keys += 1;
    }
    let (_, bytes) = w.finish()?;
    std::fs::rename(&tmp, out)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        wal::sync_dir(parent)?;
    }
    Ok(BackupReport {
        revision: state.revision,
        keys,
        bytes,
    })
}

fn temp_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Check a backup file frame by frame; returns its revision and key count.
pub fn verify_snapshot(file: &Path) -> io::Result<BackupReport> {
    let bad = |what: &str| io::Error::other(format!("{}: {what}", file.display()));
    let (f, body) = wal::open_snapshot(file)?.ok_or_else(|| bad("not a complete kapi snapshot"))?;
    let bytes = f.metadata()?.len();
    let mut reader = BufReader::with_capacity(1 << 20, f);
    let (mut revision, mut keys, mut first) = (None, 0u64, true);
    let valid = wal::read_frames(&mut reader, 0, body, |r, _| {
        match (&r, first) {
            (Record::Meta { revision: rev, .. }, true) => revision = Some(*rev),
            (Record::Put { .. }, false) => keys += 1,
            (other, _) => return Err(io::Error::other(format!("unexpected record {other:?}"))),
        }
        first = false;
        Ok(())
    })
    .map_err(|e| bad(&e.to_string()))?;
    if valid != body {
        return Err(bad(&format!("corrupt frame at byte {valid}")));
    }
    let revision = revision.ok_or_else(|| bad("no Meta frame"))?;
    Ok(BackupReport {
        revision,
        keys,
        bytes,
    })
}

/// Make `store_dir` (new, or empty) a store holding the backup in `file`.
pub fn restore_snapshot(file: &Path, store_dir: &Path) -> io::Result<BackupReport> {
    let report = verify_snapshot(file)?;
    std::fs::create_dir_all(store_dir)?;
    if std::fs::read_dir(store_dir)?.next().is_some() {
        return Err(io::Error::other(format!(
            "{} is not empty: restore into a new data directory",
            store_dir.display()
        )));
    }
    let tmp = store_dir.join("snapshot.tmp");
    io::copy(&mut File::open(file)?, &mut File::create(&tmp)?)?;
    File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, wal::snapshot_path(store_dir, report.revision))?;
    wal::sync_dir(store_dir)?;
    Ok(report)
}
