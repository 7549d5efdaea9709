//! An object's identity and ownership metadata, typed: what the garbage
//! collector's informers read of every object they are told about
//! ([`super::Store::identity_at`]) without building a JSON object per event.

use serde_json::{Map, Value};

/// The metadata fields that identify an object (`name`, `namespace`, `uid`,
/// and its `resourceVersion`) and those that place it in the ownership graph
/// (`ownerReferences`, `finalizers`, `deletionTimestamp`,
/// `deletionGracePeriodSeconds`), the latter kept as stored and only when the
/// object has them. Empty strings read as absent, as `meta::namespace`,
/// `meta::uid` and `meta::resource_version` read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectIdentity {
    pub name: String,
    pub namespace: Option<String>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub ownership: Map<String, Value>,
}

/// The ownership members [`ObjectIdentity::ownership`] keeps.
const OWNERSHIP: [&str; 4] = [
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

impl ObjectIdentity {
    /// Take metadata member `key` with `value`; members that are neither
    /// identity nor ownership are ignored.
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        let text = |v: Value| match v {
            Value::String(s) if !s.is_empty() => Some(s),
            _ => None,
        };
        match key {
            "name" => self.name = text(value).unwrap_or_default(),
            "namespace" => self.namespace = text(value),
            "uid" => self.uid = text(value),
            "resourceVersion" => self.resource_version = text(value),
            k if OWNERSHIP.contains(&k) => {
                self.ownership.insert(k.to_owned(), value);
            }
            _ => {}
        }
    }

    /// The identity of a whole object (its `metadata`).
    pub fn of(obj: &Value) -> ObjectIdentity {
        let mut id = ObjectIdentity::default();
        if let Some(Value::Object(m)) = obj.get("metadata") {
            for (k, v) in m {
                id.set(k, v.clone());
            }
        }
        id
    }

    /// The `ownerReferences` items (none when absent or not a list).
    pub fn owner_references(&self) -> &[Value] {
        self.ownership
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The finalizers that are strings, in order.
    pub fn finalizers(&self) -> Vec<String> {
        crate::meta::string_items(self.ownership.get("finalizers"))
    }

    /// Whether a deletion has begun (`deletionTimestamp` set).
    pub fn is_deleting(&self) -> bool {
        self.ownership
            .get("deletionTimestamp")
            .is_some_and(|v| !v.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_as_the_meta_helpers_read_the_object() {
        let obj = json!({"metadata": {
            "name": "a", "namespace": "", "uid": "u", "resourceVersion": "7",
            "labels": {"x": "y"},
            "ownerReferences": [{"uid": "o", "name": "p"}],
            "finalizers": ["f/a", 3, "f/b"],
            "deletionTimestamp": "2026-12-04T00:00:00Z",
        }});
        let id = ObjectIdentity::of(&obj);
        assert_eq!(id.name, crate::meta::name(&obj));
        assert_eq!(id.namespace.as_deref(), crate::meta::namespace(&obj));
        assert_eq!(id.uid.as_deref(), crate::meta::uid(&obj));
        assert_eq!(
            id.resource_version.as_deref(),
            crate::meta::resource_version(&obj)
        );
        assert_eq!(id.finalizers(), crate::meta::finalizers(&obj));
        assert_eq!(id.is_deleting(), crate::meta::is_deleting(&obj));
        assert_eq!(id.owner_references(), &[json!({"uid": "o", "name": "p"})]);
        assert!(!id.ownership.contains_key("labels"));
        let bare = ObjectIdentity::of(&json!({"metadata": {"name": "b",
            "deletionTimestamp": null}}));
        assert!(!bare.is_deleting());
        assert!(bare.owner_references().is_empty() && bare.finalizers().is_empty());
        assert_eq!((bare.namespace, bare.uid), (None, None));
    }
}
