//! The progress file of a migration: which source and target, the source
//! revision being copied, the last key copied (hex, so any key fits on a
//! line), counts, the length of the partial snapshot of a directory target,
//! and whether the copy is complete. Written to a temporary name, fsynced and
//! renamed after every page, so after a kill it names a page that is durable
//! in the target.

use std::io::Write;
use std::path::Path;

use super::{Endpoint, Item};
use crate::{Result, Revision, StorageError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Progress {
    pub from: String,
    pub to: String,
    pub source_revision: Revision,
    pub keys: u64,
    pub partial_len: u64,
    pub last_key: Option<String>,
    pub finished: bool,
}

fn err(path: &Path, e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(format!("progress file {}: {e}", path.display()))
}

impl Progress {
    pub fn new(from: &Endpoint, to: &Endpoint, rev: Revision, partial_len: u64) -> Self {
        Progress {
            from: from.describe(),
            to: to.describe(),
            source_revision: rev,
            keys: 0,
            partial_len,
            last_key: None,
            finished: false,
        }
    }

    /// The same migration as asked for now, or an error naming the file.
    pub fn check(&self, from: &Endpoint, to: &Endpoint) -> Result<()> {
        if self.from != from.describe() || self.to != to.describe() {
            return Err(StorageError::Internal(format!(
                "a migration from {} to {} is in progress (remove its progress file to start another)",
                self.from, self.to
            )));
        }
        Ok(())
    }

    pub fn advance(&mut self, items: &[Item], partial_len: u64) {
        self.keys += items.len() as u64;
        if let Some(last) = items.last() {
            self.last_key = Some(last.key.clone());
        }
        self.partial_len = partial_len;
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let last = self.last_key.as_deref().map(hex).unwrap_or_default();
        let text = format!(
            "from {}\nto {}\nrevision {}\nkeys {}\npartial_len {}\nfinished {}\nlast_key {last}\n",
            self.from, self.to, self.source_revision, self.keys, self.partial_len, self.finished
        );
        let tmp = path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            std::fs::File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
        };
        write().map_err(|e| err(path, e))
    }

    pub fn load(path: &Path) -> Result<Option<Progress>> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(path, e)),
        };
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .ok_or_else(|| err(path, format!("no {name}")))
        };
        let num = |name: &str| -> Result<i64> {
            field(name)?
                .parse()
                .map_err(|e| err(path, format!("{name}: {e}")))
        };
        let last = field("last_key")?;
        let last_key = if last.is_empty() {
            None
        } else {
            Some(unhex(last).ok_or_else(|| err(path, "last_key is not hex"))?)
        };
        Ok(Some(Progress {
            from: field("from")?.to_owned(),
            to: field("to")?.to_owned(),
            source_revision: num("revision")?,
            keys: num("keys")? as u64,
            partial_len: num("partial_len")? as u64,
            last_key,
            finished: field("finished")? == "true",
        }))
    }
}

pub(crate) fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(err(path, e)),
        _ => Ok(()),
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        assert_eq!(Progress::load(&path).unwrap(), None);
        let from = Endpoint::Dir("/a".into());
        let to = Endpoint::Dir("/b".into());
        let mut p = Progress::new(&from, &to, 42, 17);
        p.save(&path).unwrap();
        assert_eq!(Progress::load(&path).unwrap(), Some(p.clone()));
        p.last_key = Some("/configmaps/ns/a b".into());
        p.keys = 500;
        p.finished = true;
        p.save(&path).unwrap();
        let back = Progress::load(&path).unwrap().unwrap();
        assert_eq!(back, p);
        assert!(back.check(&from, &to).is_ok());
        assert!(back.check(&to, &from).is_err());
    }
}
