//! Opening a store: the newest complete snapshot becomes the base (the state
//! at its compaction point), then every WAL frame after it is replayed in
//! order. Replay goes through the same index as live writes, so history older
//! than the hot window leaves memory as it is read and recovery's memory is
//! the live data plus that window, however long the WAL.
//!
//! Frames must continue the revision sequence exactly (a write's revision is
//! the one after the last); a gap is corruption. A torn frame at the tail of
//! the newest WAL (a crash mid-append) is cut off, as are the zeros allocated
//! after its frames; a bad frame anywhere else fails the open.

use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use super::disk::Base;
use super::index::{HotWindow, Index, Record};
use super::wal;

/// Rebuild the index from the newest snapshot and the WALs; returns the WAL to
/// append to (the newest segment, or a new one when there is none).
pub(crate) fn recover(dir: &Path, hot: HotWindow) -> io::Result<(Index, PathBuf)> {
    let mut index = load_snapshot(dir, hot)?;
    let wals = wal::numbered(dir, "wal-", ".log")?;
    let last = wals.len().saturating_sub(1);
    for (i, (_, path)) in wals.iter().enumerate() {
        index.disk.add_segment(index.revision + 1, path.clone())?;
        let (valid, size) = wal::read_file(path, 0, |r, offset| replay(&mut index, r, offset))?;
        if valid < size {
            if i != last {
                return Err(io::Error::other(format!(
                    "corrupt frame at byte {valid} of {}",
                    path.display()
                )));
            }
            if zeros_from(path, valid)? {
                // Space allocated ahead of the frames (`committer.rs`).
                tracing::debug!(file = %path.display(), at = valid, "cutting preallocated WAL tail");
            } else {
                tracing::warn!(file = %path.display(), at = valid, "cutting torn WAL tail");
            }
            let f = std::fs::OpenOptions::new().write(true).open(path)?;
            f.set_len(valid)?;
            f.sync_all()?;
        }
    }
    let wal_path = match wals.last() {
        Some((_, p)) => p.clone(),
        None => {
            let path = wal::wal_path(dir, index.revision + 1);
            wal::open_segment(&path)?;
            index.disk.add_segment(index.revision + 1, path.clone())?;
            path
        }
    };
    Ok((index, wal_path))
}

/// Whether every byte of the file at `path` from `from` on is zero.
fn zeros_from(path: &Path, from: u64) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(true);
        }
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
    }
}

/// One WAL frame: a write continuing the sequence, one the snapshot already
/// holds (skipped), or a compaction marker.
fn replay(index: &mut Index, r: Record, offset: u64) -> io::Result<()> {
    match (r.write_revision(), &r) {
        (Some(rev), _) if rev <= index.revision => Ok(()),
        (Some(rev), _) if rev == index.revision + 1 => {
            index.disk.record(rev, offset)?;
            index.apply(r, false);
            Ok(())
        }
        (Some(rev), _) => Err(io::Error::other(format!(
            "WAL jumps from revision {} to {rev}",
            index.revision
        ))),
        (None, Record::Compact { revision }) if *revision <= index.revision => {
            index.apply(r, false);
            Ok(())
        }
        (None, other) => Err(io::Error::other(format!("unexpected WAL record {other:?}"))),
    }
}

/// The index as of the newest complete snapshot (empty without one). A
/// snapshot without its trailer, or with a bad frame, is passed over for the
/// one before it.
fn load_snapshot(dir: &Path, hot: HotWindow) -> io::Result<Index> {
    for (_, path) in wal::numbered(dir, "snapshot-", ".snap")?.into_iter().rev() {
        let Some((file, body)) = wal::open_snapshot(&path)? else {
            continue;
        };
        let mut index = Index::new(hot);
        let mut revs = Vec::new();
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let valid = wal::read_frames(&mut reader, 0, body, |r, offset| {
            if let Some(rev) = r.write_revision() {
                revs.push((rev, offset));
            }
            index.apply(r, false);
            Ok(())
        })?;
        if valid == body {
            let file = std::fs::File::open(&path)?;
            let base = Base::new(index.revision, path, file, revs);
            index.disk.install_base(base);
            return Ok(index);
        }
    }
    Ok(Index::new(hot))
}
