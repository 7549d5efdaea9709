//! What a read of one prefix cache visits: the current objects a filter lets
//! through, the values keys had at an older revision, the whole list kept for
//! the next reader.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use kapi_storage::Revision;

use super::State;
use crate::cache::index::{self, Indexer, KeyFilter};
use crate::cache::items::{Shared, MEMO_MIN};
use crate::cache::object::CachedObject;

/// Keys with their object (`None`: absent), in key order.
pub(super) type Entries<'a> =
    Box<dyn Iterator<Item = (&'a str, Option<&'a Arc<CachedObject>>)> + 'a>;

impl State {
    /// Every current object under `prefix` (`end` its end key), kept in the memo
    /// for the readers after this one; `None` for fewer than [`MEMO_MIN`]. Only
    /// for a reader that saw nothing under the prefix change since its revision,
    /// so the current objects are the ones at that revision.
    pub(super) fn whole_list(&self, prefix: &str, end: &str) -> Option<Shared> {
        let list: Vec<_> = self
            .objects
            .range::<str, _>((Bound::Included(prefix), Bound::Excluded(end)))
            .map(|(_, o)| o.clone())
            .collect();
        if list.len() < MEMO_MIN {
            return None;
        }
        let list: Shared = list.into();
        self.memo.put(prefix, list.clone());
        Some(list)
    }

    /// Current objects in `[from, …)` under `prefix` that `filter` lets through,
    /// in key order; `None` when it names a field without an index. `end` is the
    /// prefix's end key (`range::prefix_end`), when it has one.
    pub(super) fn candidates<'a>(
        &'a self,
        filter: &'a KeyFilter,
        from: &'a str,
        prefix: &'a str,
        end: Option<&str>,
        indexer: Option<&Arc<Indexer>>,
    ) -> Option<Entries<'a>> {
        let under = move |k: &String| k.starts_with(prefix);
        // Bounded by the first key past the prefix, so the walk compares
        // no key (a cluster-wide list walks every object of the resource).
        let all = move || -> Entries<'a> {
            match end {
                Some(end) if from < end => Box::new(
                    self.objects
                        .range::<str, _>((Bound::Included(from), Bound::Excluded(end)))
                        .map(|(k, v)| (k.as_str(), Some(v))),
                ),
                Some(_) => Box::new(std::iter::empty()),
                None => Box::new(
                    self.objects
                        .range::<str, _>((Bound::Included(from), Bound::Unbounded))
                        .take_while(move |(k, _)| under(k))
                        .map(|(k, v)| (k.as_str(), Some(v))),
                ),
            }
        };
        Some(match filter {
            KeyFilter::All => all(),
            KeyFilter::Name(name) => {
                Box::new(all().filter(move |(k, _)| index::last_segment(k) == name))
            }
            KeyFilter::Key(key) => Box::new(
                self.objects
                    .get_key_value(key.as_str())
                    .filter(|(k, _)| k.as_str() >= from && under(k))
                    .map(|(k, v)| (k.as_str(), Some(v)))
                    .into_iter(),
            ),
            KeyFilter::Field { field, value } => {
                if !indexer.is_some_and(|ix| ix.fields.iter().any(|f| f == field)) {
                    return None;
                }
                let keys = self.index.keys(field, value);
                Box::new(
                    keys.into_iter()
                        .flat_map(move |set| {
                            set.range::<str, _>((Bound::Included(from), Bound::Unbounded))
                        })
                        .take_while(move |k| under(k))
                        .filter_map(|k| self.objects.get_key_value(k.as_str()))
                        .map(|(k, v)| (k.as_str(), Some(v))),
                )
            }
        })
    }

    /// For keys in `[from, …)` under `prefix` changed after `at`: their value at `at`.
    pub(super) fn overlay<'a>(
        &'a self,
        at: Revision,
        from: &str,
        prefix: &str,
    ) -> BTreeMap<&'a str, Option<Arc<CachedObject>>> {
        let mut out = BTreeMap::new();
        // Newest first, so the oldest change after `at` decides.
        for e in self.history.iter().rev() {
            if e.revision() <= at {
                break;
            }
            let key = e.key();
            if key.starts_with(prefix) && key >= from {
                out.insert(key, e.prev.clone());
            }
        }
        out
    }
}
