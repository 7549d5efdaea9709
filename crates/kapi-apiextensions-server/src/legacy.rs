//! Custom objects stored by kapi before it took upstream's layout: they sat
//! under `/customresources/<group>/<plural>/`, upstream keeps them at
//! `/<group>/<plural>/`. On start, before any definition is installed, each old
//! key is moved — created at its new key with the same value, then deleted
//! where it was, compare-and-swap on its revision — so a data directory or etcd
//! an older kapi wrote serves its custom objects after an upgrade.
//!
//! Invariants: a key that already exists at the new place is left there and the
//! old one kept (nothing is overwritten; the log names it); a crash between the
//! create and the delete leaves both, and the next start deletes the old one.
//! The move goes through the server's own backend stack, so values encrypted at
//! rest are decrypted under their old key and sealed again under the new one.
//! Moved objects get new resourceVersions (new revisions), as any write.

use kapi_storage::{Backend, ListOptions, StorageError};

/// Where an older kapi kept custom objects.
pub const OLD_PREFIX: &str = "/customresources/";

/// Keys read per page.
const PAGE: usize = 500;

/// What a move did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub moved: usize,
    /// Old keys left because their new key holds another value.
    pub kept: usize,
}

/// Move every key under [`OLD_PREFIX`] to upstream's place.
pub async fn move_custom_objects(backend: &dyn Backend) -> Result<Moved, StorageError> {
    let mut done = Moved::default();
    let mut from: Option<String> = None;
    loop {
        let opts = ListOptions {
            limit: PAGE,
            continue_from: from.take(),
            skip_count: true,
            ..ListOptions::default()
        };
        let page = backend.list(OLD_PREFIX, opts).await?;
        for kv in &page.kvs {
            let new_key = format!("/{}", &kv.key[OLD_PREFIX.len()..]);
            match backend.create(&new_key, kv.value.clone()).await {
                Ok(_) => done.moved += 1,
                Err(StorageError::AlreadyExists { .. }) => {
                    let there = backend.get(&new_key, None).await?;
                    if there.is_some_and(|t| t.value != kv.value) {
                        tracing::warn!(old = %kv.key, new = %new_key,
                            "a custom object is stored at both kapi's old and upstream's key; the old one is kept");
                        done.kept += 1;
                        continue;
                    }
                    // Created by an earlier, interrupted move.
                    done.moved += 1;
                }
                Err(e) => return Err(e),
            }
            match backend.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) | Err(StorageError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        match page.kvs.last() {
            Some(last) if page.more => from = Some(format!("{}\0", last.key)),
            _ => break,
        }
    }
    Ok(done)
}
