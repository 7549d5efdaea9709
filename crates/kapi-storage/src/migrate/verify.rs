//! The end of a migration: the source (at the revision copied) and the target
//! (as it is now) walked side by side in key order, a page at a time, key by
//! key and value by value, with a count and a hash (64-bit FNV-1a over each
//! key's and value's length and bytes) of each side. A key the source has with
//! an expiry that has passed may be gone from the target (it expired there,
//! or was not copied as already gone); any other difference fails.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fmt;

use super::source::Source;
use super::{Endpoint, Item};
use crate::embedded::{unix_ms, EmbeddedBackend, EmbeddedConfig};
use crate::etcd::EtcdBackend;
use crate::{Backend, KeyValue, ListOptions, Result, Revision};

/// What the comparison found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    pub source_keys: u64,
    pub target_keys: u64,
    /// Source keys with a passed expiry, absent from the target.
    pub expired: u64,
    pub source_hash: u64,
    pub target_hash: u64,
    /// The first difference, if any.
    pub mismatch: Option<String>,
}

impl Verified {
    pub fn matches(&self) -> bool {
        self.mismatch.is_none()
            && self.source_keys - self.expired == self.target_keys
            && self.source_hash == self.target_hash
    }
}

impl fmt::Display for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "source {} keys (hash {:016x}, {} expired), target {} keys (hash {:016x})",
            self.source_keys, self.source_hash, self.expired, self.target_keys, self.target_hash
        )?;
        if let Some(m) = &self.mismatch {
            write!(f, "; first difference: {m}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, data: &[u8]) {
        for b in (data.len() as u64).to_le_bytes().iter().chain(data) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn pair(&mut self, key: &str, value: &[u8]) {
        self.bytes(key.as_bytes());
        self.bytes(value);
    }
}

/// The target's keys in order, a page at a time.
struct TargetWalk {
    backend: Box<dyn Backend>,
    prefix: &'static str,
    page: usize,
    buf: VecDeque<KeyValue>,
    after: Option<String>,
    done: bool,
}

impl TargetWalk {
    async fn open(to: &Endpoint, page: usize) -> Result<Self> {
        let (backend, prefix): (Box<dyn Backend>, _) = match to {
            Endpoint::Dir(d) => (Box::new(EmbeddedBackend::open(EmbeddedConfig::new(d))?), ""),
            Endpoint::Etcd(c) => (Box::new(EtcdBackend::connect(c).await?), "/"),
        };
        Ok(TargetWalk {
            backend,
            prefix,
            page,
            buf: VecDeque::new(),
            after: None,
            done: false,
        })
    }

    async fn peek(&mut self) -> Result<Option<&KeyValue>> {
        if self.buf.is_empty() && !self.done {
            let opts = ListOptions {
                limit: self.page,
                continue_from: self.after.as_ref().map(|k| format!("{k}\0")),
                skip_count: true,
                ..Default::default()
            };
            let page = self.backend.list(self.prefix, opts).await?;
            self.done = !page.more || page.kvs.is_empty();
            self.after = page.kvs.last().map(|kv| kv.key.clone());
            self.buf.extend(page.kvs);
        }
        Ok(self.buf.front())
    }
}

/// The source's keys in order at `rev`.
struct SourceWalk<'a> {
    source: &'a mut Source,
    rev: Revision,
    page: usize,
    buf: VecDeque<Item>,
    after: Option<String>,
    done: bool,
}

impl SourceWalk<'_> {
    async fn peek(&mut self) -> Result<Option<&Item>> {
        if self.buf.is_empty() && !self.done {
            let (items, more) = self
                .source
                .page(self.rev, self.after.as_deref(), self.page)
                .await?;
            self.done = !more || items.is_empty();
            self.after = items.last().map(|i| i.key.clone());
            self.buf.extend(items);
        }
        Ok(self.buf.front())
    }
}

pub(crate) async fn verify(
    source: &mut Source,
    rev: Revision,
    to: &Endpoint,
    page: usize,
) -> Result<Verified> {
    let page = page.max(1);
    let mut s = SourceWalk {
        source,
        rev,
        page,
        buf: VecDeque::new(),
        after: None,
        done: false,
    };
    let mut t = TargetWalk::open(to, page).await?;
    let (mut sh, mut th) = (Fnv::new(), Fnv::new());
    let mut out = Verified::default();
    let now = unix_ms();
    loop {
        let a = s.peek().await?.cloned();
        let b = t.peek().await?.cloned();
        let order = match (&a, &b) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => a.key.cmp(&b.key),
        };
        if order != Ordering::Greater {
            let a = a.expect("a source key");
            out.source_keys += 1;
            s.buf.pop_front();
            if order == Ordering::Less && a.expires != 0 && a.expires <= now {
                out.expired += 1;
                continue;
            }
            sh.pair(&a.key, &a.value);
            if order == Ordering::Less {
                out.mismatch
                    .get_or_insert_with(|| format!("{}: missing from the target", a.key));
                continue;
            }
            if b.as_ref().is_some_and(|b| b.value != a.value) {
                out.mismatch
                    .get_or_insert_with(|| format!("{}: values differ", a.key));
            }
        }
        if order != Ordering::Less {
            let b = b.expect("a target key");
            th.pair(&b.key, &b.value);
            out.target_keys += 1;
            t.buf.pop_front();
            if order == Ordering::Greater {
                out.mismatch
                    .get_or_insert_with(|| format!("{}: not in the source", b.key));
            }
        }
    }
    out.source_hash = sh.0;
    out.target_hash = th.0;
    Ok(out)
}
