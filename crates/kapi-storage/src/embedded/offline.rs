//! Reading a data directory without opening the store: the state at the last
//! complete write, consistent at that one revision, while a server may be
//! running on the directory (it holds the lock; this never takes it and never
//! writes there). `kapi snapshot save` is built on it.
//!
//! The newest complete snapshot and every WAL segment are opened first (an
//! open file stays readable when the server deletes it after a newer
//! snapshot). One pass over their frames keeps, per key, where its newest
//! record is and nothing of the value; the revisions must run on without a
//! gap from the snapshot's. The pass ends at the last complete frame of the
//! newest segment; if the server started a segment meanwhile, the pass goes
//! on into it. Then the newest live record of every key is read back by its
//! offset and written out, in key order. Memory: one small entry per key.
//!
//! When a file has gone before it could be opened (the server replaced the
//! snapshot), the read starts over.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::index::Record;
use super::wal;
use crate::backend::Revision;

/// Where a key's newest record is.
#[derive(Clone)]
struct Newest {
    file: usize,
    offset: u64,
    deleted: bool,
}

/// The state of a directory at one revision, as locations of records.
pub struct OfflineState {
    pub revision: Revision,
    files: Vec<Arc<File>>,
    newest: BTreeMap<String, Newest>,
}

struct Pass {
    revision: Revision,
    files: Vec<Arc<File>>,
    newest: BTreeMap<String, Newest>,
}

impl Pass {
    fn note(&mut self, file: usize, r: Record, offset: u64) -> io::Result<()> {
        let (rev, key, deleted) = match r {
            Record::Put { revision, key, .. } => (revision, key, false),
            Record::Delete { revision, key } => (revision, key, true),
            Record::Meta { revision, .. } => {
                self.revision = self.revision.max(revision);
                return Ok(());
            }
            Record::Compact { .. } => return Ok(()),
        };
        self.newest.insert(
            key,
            Newest {
                file,
                offset,
                deleted,
            },
        );
        self.revision = self.revision.max(rev);
        Ok(())
    }

    /// A WAL frame: skipped when the snapshot holds it, noted when it is the
    /// next revision; a gap means a segment went missing.
    fn wal_frame(&mut self, file: usize, r: Record, offset: u64) -> io::Result<()> {
        match r.write_revision() {
            Some(rev) if rev <= self.revision => Ok(()),
            Some(rev) if rev == self.revision + 1 => self.note(file, r, offset),
            Some(rev) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("WAL jumps from revision {} to {rev}", self.revision),
            )),
            None => Ok(()),
        }
    }
}

/// Read the state of the store in `dir` (a `store/` directory) at its last
/// complete write. Retries when the server replaces files under it.
pub fn read_state(dir: &Path) -> io::Result<OfflineState> {
    let mut last_error = None;
    for _ in 0..20 {
        match try_read_state(dir) {
            Ok(state) => return Ok(state),
            Err(e) if e.kind() == io::ErrorKind::NotFound => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no consistent read")))
}

fn try_read_state(dir: &Path) -> io::Result<OfflineState> {
    let snapshots = wal::numbered(dir, "snapshot-", ".snap")?;
    let segments = wal::numbered(dir, "wal-", ".log")?;
    if snapshots.is_empty() && segments.is_empty() && !dir.join("LOCK").exists() {
        return Err(io::Error::other(format!(
            "{} holds no kapi store",
            dir.display()
        )));
    }
    let mut pass = Pass {
        revision: 0,
        files: Vec::new(),
        newest: BTreeMap::new(),
    };
    let opened: Vec<(PathBuf, File)> = segments
        .into_iter()
        .map(|(_, p)| File::open(&p).map(|f| (p, f)))
        .collect::<io::Result<_>>()?;
    for (_, path) in snapshots.iter().rev() {
        let Some((file, body)) = wal::open_snapshot(path)? else {
            continue;
        };
        let mut reader = BufReader::with_capacity(1 << 20, file.try_clone()?);
        pass.files.push(Arc::new(file));
        let valid = wal::read_frames(&mut reader, 0, body, |r, o| pass.note(0, r, o))?;
        if valid != body {
            return Err(io::Error::other(format!(
                "{}: corrupt frame",
                path.display()
            )));
        }
        break;
    }
    let mut read: Vec<PathBuf> = Vec::new();
    for (path, file) in opened {
        read_segment(&mut pass, &path, file)?;
        read.push(path);
    }
    // Segments the server started while this pass ran.
    loop {
        let newer: Vec<PathBuf> = wal::numbered(dir, "wal-", ".log")?
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| !read.contains(p) && read.last().is_none_or(|l| p > l))
            .collect();
        let Some(path) = newer.into_iter().next() else {
            break;
        };
        let file = File::open(&path)?;
        read_segment(&mut pass, &path, file)?;
        read.push(path);
    }
    Ok(OfflineState {
        revision: pass.revision,
        files: pass.files,
        newest: pass.newest,
    })
}

/// Note every complete frame of one segment; a torn tail is where a write is
/// in flight (or a crash left one), so the pass stops there.
fn read_segment(pass: &mut Pass, path: &Path, mut file: File) -> io::Result<()> {
    let index = pass.files.len();
    let size = file.metadata()?.len();
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(1 << 20, file.try_clone()?);
    pass.files.push(Arc::new(file));
    wal::read_frames(&mut reader, 0, size, |r, o| pass.wal_frame(index, r, o))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(())
}

impl OfflineState {
    /// Live keys at the revision.
    pub fn len(&self) -> usize {
        self.newest.values().filter(|n| !n.deleted).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest live record of every key, in key order, read one by one.
    pub(crate) fn records(&self) -> impl Iterator<Item = io::Result<Record>> + '_ {
        self.newest.values().filter(|n| !n.deleted).map(|n| {
            let r = wal::read_frame_at(&self.files[n.file], n.offset)?;
            match r {
                Record::Put { .. } => Ok(r),
                other => Err(io::Error::other(format!("unexpected record {other:?}"))),
            }
        })
    }
}
