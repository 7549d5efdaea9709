//! Parsing only part of a stored object's `metadata`: [`Picked`] keeps the
//! fields its [`Pick`] names and skips the rest without allocating.

use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

/// Which metadata fields a [`Picked`] parse keeps.
pub(super) trait Pick {
    fn keep(key: &str) -> bool;
}

/// Every field but `managedFields`.
pub(super) struct AllButManagedFields;

impl Pick for AllButManagedFields {
    fn keep(key: &str) -> bool {
        key != "managedFields"
    }
}

/// What identifies an object and its place in the ownership graph.
pub(super) struct Identity;

impl Pick for Identity {
    fn keep(key: &str) -> bool {
        matches!(
            key,
            "name"
                | "namespace"
                | "uid"
                | "ownerReferences"
                | "finalizers"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
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
                Ok(Key(P::keep(k).then(|| k.to_owned()), PhantomData))
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
