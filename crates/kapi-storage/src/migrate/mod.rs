//! `kapi migrate`: copy every key with its value from one store to another —
//! an embedded store's directory or etcd, either way — in pages, resumable
//! after a kill, verified at the end.
//!
//! The copy reads the source at one revision (the source's current revision
//! when the migration starts, recorded in the progress file), a page of keys
//! at a time in key order (`source.rs`), and writes each page durably
//! (`target.rs`) before it records the last key copied. After a kill the same
//! command goes on from that key (it needs the source still at that revision:
//! nobody may write to it meanwhile). At the end both sides are walked in key
//! order and compared key by key and value by value (`verify.rs`); counts and
//! hashes of both walks are reported and must agree.
//!
//! What changes: into a directory, nothing (revisions, versions and expiries
//! are kept: the snapshot is at the source's revision). Into etcd, revisions
//! are etcd's own, so resourceVersions change and clients' watches and cached
//! resourceVersions from before mean nothing there (`docs/storage.md`).

mod progress;
mod source;
mod target;
mod verify;

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;

use crate::embedded::frames::Record;
use crate::etcd::EtcdConfig;
use crate::{Result, Revision, StorageError};
use progress::Progress;
use source::Source;
use target::Target;
pub use verify::Verified;

/// One side of a migration.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// An embedded store's directory (a data directory's `store/`).
    Dir(PathBuf),
    Etcd(EtcdConfig),
}

impl Endpoint {
    fn describe(&self) -> String {
        match self {
            Endpoint::Dir(d) => format!("dir:{}", d.display()),
            Endpoint::Etcd(c) => format!("etcd:{}{}", c.endpoints.join(","), c.prefix),
        }
    }
}

/// A key as read from the source.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub key: String,
    pub value: Bytes,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    /// Unix ms the key expires at; 0 for never.
    pub expires: i64,
}

impl Item {
    pub fn record(&self) -> Record {
        Record::Put {
            revision: self.mod_revision,
            create_revision: self.create_revision,
            version: self.version,
            expires: self.expires,
            key: self.key.clone(),
            value: self.value.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct MigrateOptions {
    pub from: Endpoint,
    pub to: Endpoint,
    /// Keys per page.
    pub page: usize,
    /// Where progress is recorded (resume state).
    pub progress: PathBuf,
}

/// What a migration did.
#[derive(Debug, Clone)]
pub struct MigrateReport {
    pub source_revision: Revision,
    /// Keys and value bytes copied by this run (a resumed run: since the resume).
    pub keys: u64,
    pub bytes: u64,
    /// Keys copied before this run started (from the progress file).
    pub resumed_at: u64,
    pub copy_seconds: f64,
    pub verified: Verified,
}

/// Copy `opts.from` into `opts.to`; `say` hears progress lines.
pub async fn migrate(opts: &MigrateOptions, say: impl Fn(&str)) -> Result<MigrateReport> {
    let mut source = Source::open(&opts.from).await?;
    let (mut progress, target) = start_or_resume(&mut source, opts, &say).await?;
    let resumed_at = progress.keys;
    let started = Instant::now();
    let (keys, bytes) = match target {
        Some(target) => copy(&mut source, target, &mut progress, opts, &say).await?,
        None => (0, 0),
    };
    let copy_seconds = started.elapsed().as_secs_f64();
    say(&format!("copied {} keys; verifying", progress.keys));
    let rev = progress.source_revision;
    let verified = verify::verify(&mut source, rev, &opts.to, opts.page).await?;
    if !verified.matches() {
        return Err(StorageError::Internal(format!(
            "verification failed: {verified}"
        )));
    }
    progress::remove(&opts.progress)?;
    Ok(MigrateReport {
        source_revision: rev,
        keys,
        bytes,
        resumed_at,
        copy_seconds,
        verified,
    })
}

/// The progress of a migration under way (and its target, unless the copy is
/// complete), or of a new one at the source's current revision.
async fn start_or_resume(
    source: &mut Source,
    opts: &MigrateOptions,
    say: &impl Fn(&str),
) -> Result<(Progress, Option<Target>)> {
    let Some(p) = Progress::load(&opts.progress)? else {
        let rev = source.revision().await?;
        let mut target = Target::open(&opts.to, None).await?;
        target.begin(rev)?;
        let p = Progress::new(&opts.from, &opts.to, rev, target.len());
        p.save(&opts.progress)?;
        say(&format!("copying at revision {rev}"));
        return Ok((p, Some(target)));
    };
    p.check(&opts.from, &opts.to)?;
    if p.finished || target::dir_finished(&opts.to, p.source_revision) {
        say("the copy is complete");
        return Ok((p, None));
    }
    if source.revision().await? < p.source_revision {
        return Err(StorageError::Internal(format!(
            "the source is at an older revision than the one being copied ({})",
            p.source_revision
        )));
    }
    say(&format!(
        "resuming after {} keys at revision {}",
        p.keys, p.source_revision
    ));
    let target = Target::open(&opts.to, Some(p.partial_len)).await?;
    Ok((p, Some(target)))
}

/// Copy page by page from the last key recorded; returns the keys and value
/// bytes copied.
async fn copy(
    source: &mut Source,
    mut target: Target,
    progress: &mut Progress,
    opts: &MigrateOptions,
    say: &impl Fn(&str),
) -> Result<(u64, u64)> {
    let page = opts.page.max(1);
    let (mut keys, mut bytes, mut pages) = (0u64, 0u64, 0u32);
    loop {
        let after = progress.last_key.clone();
        let (items, more) = source
            .page(progress.source_revision, after.as_deref(), page)
            .await?;
        target.write(&items).await?;
        keys += items.len() as u64;
        bytes += items.iter().map(|i| i.value.len() as u64).sum::<u64>();
        progress.advance(&items, target.len());
        progress.save(&opts.progress)?;
        if !more || items.is_empty() {
            break;
        }
        pages += 1;
        if pages == 20 {
            say(&format!("{} keys copied", progress.keys));
            pages = 0;
        }
    }
    target.finish(progress.source_revision)?;
    progress.finished = true;
    progress.save(&opts.progress)?;
    Ok((keys, bytes))
}
