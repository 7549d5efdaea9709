//! Parsing only part of a stored object's `metadata`: [`Picked`] keeps the
//! fields its [`Pick`] names and skips the rest without allocating.

use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::json_scan;

/// Which metadata fields a [`Picked`] parse keeps.
pub(super) trait Pick {
    /// Whether to keep the member named `key` (its UTF-8 bytes).
    fn keep(key: &[u8]) -> bool;
}

/// Every field but `managedFields`.
pub(super) struct AllButManagedFields;

impl Pick for AllButManagedFields {
    fn keep(key: &[u8]) -> bool {
        key != b"managedFields"
    }
}

/// What identifies an object and its place in the ownership graph.
pub(super) struct Identity;

impl Pick for Identity {
    fn keep(key: &[u8]) -> bool {
        matches!(
            key,
            b"name"
                | b"namespace"
                | b"uid"
                | b"ownerReferences"
                | b"finalizers"
                | b"deletionTimestamp"
                | b"deletionGracePeriodSeconds"
        )
    }
}

/// A metadata object cut to what `P` keeps as it is parsed: the other
/// fields are skipped, their keys and values never allocated.
pub(super) struct Picked<P>(pub Map<String, Value>, PhantomData<P>);

impl<P> Default for Picked<P> {
    fn default() -> Self {
        Picked(Map::new(), PhantomData)
    }
}

#[cfg(test)]
impl<P: Pick> Picked<P> {
    /// [`scan_kept`] collected into a map: what the tests compare with the
    /// parse.
    pub(super) fn scan(json: &[u8]) -> Option<Self> {
        let mut m = Map::new();
        scan_kept::<P>(json, |key, value| {
            m.insert(key.to_owned(), value);
        })?;
        Some(Picked(m, PhantomData))
    }
}

/// The members of the metadata object `json` (its first byte the opening
/// brace) that `P` keeps, as parsing it gives them, handed to `f` in order:
/// found by a scan that skips the members `P` does not keep over their bytes
/// (the parse walks them token by token: most of a metadata object is
/// usually `managedFields`) and parses only the kept values. `None` when the
/// scan cannot tell what the parse would give (a key with an escape, or
/// bytes that are not one whole object); `f` may have been called already.
pub(super) fn scan_kept<P: Pick>(json: &[u8], mut f: impl FnMut(&str, Value)) -> Option<()> {
    let mut members = json_scan::members(json);
    for (quoted, start) in members.by_ref() {
        let key = quoted.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if key.contains(&b'\\') {
            return None;
        }
        if P::keep(key) {
            let key = std::str::from_utf8(key).ok()?;
            let end = json_scan::skip_value(json, start)?;
            let raw = &json[start..end];
            // A string without escapes is its bytes between the quotes.
            let plain = raw
                .strip_prefix(b"\"")
                .and_then(|r| r.strip_suffix(b"\""))
                .filter(|r| !r.contains(&b'\\'))
                .and_then(|r| std::str::from_utf8(r).ok());
            let value = match plain {
                Some(s) => Value::String(s.to_owned()),
                None => serde_json::from_slice(raw).ok()?,
            };
            f(key, value);
        }
    }
    members.closed().then_some(())
}

/// A metadata key, owned only when `P` keeps it.
struct Key<P>(Option<String>, PhantomData<P>);

impl<'de, P: Pick> Deserialize<'de> for Key<P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<P>(PhantomData<P>);
        impl<P: Pick> Visitor<'_> for V<P> {
            type Value = Key<P>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<Key<P>, E> {
                Ok(Key(
                    P::keep(k.as_bytes()).then(|| k.to_owned()),
                    PhantomData,
                ))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

impl<'de, P: Pick> Deserialize<'de> for Picked<P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<P>(PhantomData<P>);
        impl<'de, P: Pick> Visitor<'de> for V<P> {
            type Value = Picked<P>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut m = Map::new();
                while let Some(Key(k, _)) = a.next_key::<Key<P>>()? {
                    match k {
                        Some(k) => {
                            let v = a.next_value::<Value>()?;
                            m.insert(k, v);
                        }
                        None => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Picked(m, PhantomData))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}
