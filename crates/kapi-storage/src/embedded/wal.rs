//! The on-disk format: a write-ahead log of records, and snapshots.
//!
//! A frame is `len: u32 LE | crc32(payload): u32 LE | payload`. A payload is
//! `tag: u8` then fields, integers little-endian, strings and bytes as
//! `len: u32 | data`:
//! - `1` Put: revision i64, create_revision i64, version i64, key, value
//! - `2` Delete: revision i64, key
//! - `3` Meta: revision i64, compacted i64 (first frame of a snapshot)
//! - `4` Put with expiry: revision i64, create_revision i64, version i64,
//!   expires i64 (Unix time in milliseconds), key, value
//! - `5` Compact: revision i64 (history at and before it is gone)
//!
//! Files in the data directory (see `docs/storage.md`):
//! - `wal-<first revision, 20 digits>.log`: frames appended and fsynced by the
//!   committer before any write is acknowledged or made visible; every write
//!   has one frame and the WAL segments since the last snapshot are also where
//!   history lives (`disk.rs` reads it back by revision). The newest segment
//!   may end in zeros after its last frame (space allocated ahead);
//! - `snapshot-<revision, 20 digits>.snap`: the state at a compaction point
//!   (`snapshot.rs`), written to a temp file, fsynced, renamed; a snapshot ends
//!   with a frame-less 8-byte trailer `KAPIEND\0` so a half-written one is never
//!   taken for whole.
//!
//! Recovery: load the newest complete snapshot, then replay every WAL frame with a
//! revision above it. A torn frame at the tail of the newest WAL (a crash during
//! append) and the zeros allocated after its frames are cut off; a bad frame
//! anywhere else is corruption and fails the open.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::index::Record;
use crate::backend::Revision;

pub(crate) const SNAPSHOT_TRAILER: &[u8; 8] = b"KAPIEND\0";
/// Upper bound of one frame; larger lengths can only come from corruption.
pub(crate) const MAX_FRAME: usize = 1 << 30;

pub(crate) fn encode(record: &Record, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    match record {
        Record::Put {
            revision,
            create_revision,
            version,
            expires,
            key,
            value,
        } => {
            out.push(if *expires == 0 { 1 } else { 4 });
            for n in [revision, create_revision, version] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            if *expires != 0 {
                out.extend_from_slice(&expires.to_le_bytes());
            }
            put_bytes(out, key.as_bytes());
            put_bytes(out, value);
        }
        Record::Delete { revision, key } => {
            out.push(2);
            out.extend_from_slice(&revision.to_le_bytes());
            put_bytes(out, key.as_bytes());
        }
        Record::Meta {
            revision,
            compacted,
        } => {
            out.push(3);
            out.extend_from_slice(&revision.to_le_bytes());
            out.extend_from_slice(&compacted.to_le_bytes());
        }
        Record::Compact { revision } => {
            out.push(5);
            out.extend_from_slice(&revision.to_le_bytes());
        }
    }
    let payload_len = (out.len() - start - 8) as u32;
    let crc = crc32fast::hash(&out[start + 8..]);
    out[start..start + 4].copy_from_slice(&payload_len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&[u8]> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

pub(crate) fn decode_payload(payload: &[u8]) -> Option<Record> {
    let mut c = Cursor(payload);
    let record = match c.take(1)?[0] {
        tag @ (1 | 4) => Record::Put {
            revision: c.i64()?,
            create_revision: c.i64()?,
            version: c.i64()?,
            expires: if tag == 4 { c.i64()?.max(1) } else { 0 },
            key: c.string()?,
            value: Bytes::copy_from_slice(c.bytes()?),
        },
        2 => Record::Delete {
            revision: c.i64()?,
            key: c.string()?,
        },
        3 => Record::Meta {
            revision: c.i64()?,
            compacted: c.i64()?,
        },
        5 => Record::Compact { revision: c.i64()? },
        _ => return None,
    };
    c.0.is_empty().then_some(record)
}

pub(crate) fn wal_path(dir: &Path, first: Revision) -> PathBuf {
    dir.join(format!("wal-{first:020}.log"))
}

pub(crate) fn snapshot_path(dir: &Path, rev: Revision) -> PathBuf {
    dir.join(format!("snapshot-{rev:020}.snap"))
}

/// Files named `<prefix><revision><suffix>`, sorted by revision.
pub(crate) fn numbered(
    dir: &Path,
    prefix: &str,
    suffix: &str,
) -> io::Result<Vec<(Revision, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(num) = name
            .strip_prefix(prefix)
            .and_then(|n| n.strip_suffix(suffix))
        {
            if let Ok(rev) = num.parse::<Revision>() {
                out.push((rev, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Hand the records of the first `len` bytes of `r` (which starts at byte
/// `start` of its file) to `apply` with each frame's offset, frame by frame, up
/// to the first torn or corrupt frame; returns the length of the valid prefix.
/// Streaming keeps recovery's memory to one frame beyond what `apply` keeps (no
/// copy of the file, no list of every record).
pub(crate) fn read_frames(
    r: &mut impl Read,
    start: u64,
    len: u64,
    mut apply: impl FnMut(Record, u64) -> io::Result<()>,
) -> io::Result<u64> {
    let mut pos = 0u64;
    let mut header = [0u8; 8];
    let mut payload = Vec::new();
    while len - pos >= 8 {
        r.read_exact(&mut header)?;
        let n = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if n > MAX_FRAME || len - pos - 8 < n as u64 {
            break;
        }
        payload.resize(n, 0);
        r.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            break;
        }
        match decode_payload(&payload) {
            Some(record) => apply(record, start + pos)?,
            None => break,
        }
        pos += 8 + n as u64;
    }
    Ok(pos)
}

/// Read every frame of the file at `path` from byte `from` by `apply`; returns
/// the end of its valid prefix and the file's size.
pub(crate) fn read_file(
    path: &Path,
    from: u64,
    apply: impl FnMut(Record, u64) -> io::Result<()>,
) -> io::Result<(u64, u64)> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    file.seek(SeekFrom::Start(from))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let valid = read_frames(&mut reader, from, size.saturating_sub(from), apply)?;
    Ok((from + valid, size))
}

/// The snapshot at `path` opened, with the length of its frames, when it ends
/// with the trailer (a snapshot without one was never completed).
pub(crate) fn open_snapshot(path: &Path) -> io::Result<Option<(File, u64)>> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    let Some(body) = size.checked_sub(SNAPSHOT_TRAILER.len() as u64) else {
        return Ok(None);
    };
    let mut trailer = [0u8; 8];
    file.seek(SeekFrom::Start(body))?;
    file.read_exact(&mut trailer)?;
    if &trailer != SNAPSHOT_TRAILER {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(Some((file, body)))
}

/// The record of the frame at `offset` of `file` (a frame a reader of the
/// history found by its revision); a bad frame there is corruption.
pub(crate) fn read_frame_at(file: &File, offset: u64) -> io::Result<Record> {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; 8];
    file.read_exact_at(&mut header, offset)?;
    let n = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    let corrupt = || io::Error::other(format!("corrupt frame at byte {offset}"));
    if n > MAX_FRAME {
        return Err(corrupt());
    }
    let mut payload = vec![0u8; n];
    file.read_exact_at(&mut payload, offset + 8)?;
    if crc32fast::hash(&payload) != crc {
        return Err(corrupt());
    }
    decode_payload(&payload).ok_or_else(corrupt)
}

/// Frames written through a buffer, each one's offset known (snapshots).
pub(crate) struct FrameWriter {
    out: BufWriter<File>,
    buf: Vec<u8>,
    written: u64,
}

impl FrameWriter {
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(FrameWriter {
            out: BufWriter::with_capacity(1 << 20, File::create(path)?),
            buf: Vec::new(),
            written: 0,
        })
    }

    /// Append one frame; returns its offset.
    pub fn write(&mut self, record: &Record) -> io::Result<u64> {
        self.buf.clear();
        encode(record, &mut self.buf);
        self.out.write_all(&self.buf)?;
        let at = self.written;
        self.written += self.buf.len() as u64;
        Ok(at)
    }

    /// Append the trailer and fsync; returns the file and its length.
    pub fn finish(mut self) -> io::Result<(File, u64)> {
        self.out.write_all(SNAPSHOT_TRAILER)?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok((file, self.written + SNAPSHOT_TRAILER.len() as u64))
    }
}

/// The newest WAL segment, opened (created when missing) for the committer,
/// which writes each batch at its own offset (`committer.rs`: the file may
/// extend past the frames, preallocated).
pub(crate) fn open_segment(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
}
