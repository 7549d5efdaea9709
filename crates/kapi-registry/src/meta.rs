//! Object metadata helpers over `serde_json::Value`: reading and writing the
//! fields of `metadata` the store manages, timestamps, names and uids.

use kapi_machinery::member::Members;
use serde_json::{Map, Value};

pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.member("metadata")?.as_object()
}

/// `metadata`, created (and made an object) if needed.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    use kapi_machinery::member::{get, get_mut};
    let root = obj.as_object_mut().expect("objects are JSON objects");
    // Found by a scan (`entry` hashed, and allocated its key); a missing or
    // non-object `metadata` is made `{}` in its place, as `insert` keeps it.
    if !get(root, "metadata").is_some_and(Value::is_object) {
        root.insert("metadata".into(), Value::Object(Map::new()));
    }
    get_mut(root, "metadata")
        .and_then(Value::as_object_mut)
        .expect("just made an object")
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.member_str(field)
}

pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace").filter(|s| !s.is_empty())
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion").filter(|s| !s.is_empty())
}

pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid").filter(|s| !s.is_empty())
}

pub fn set_str(obj: &mut Value, field: &str, value: &str) {
    kapi_machinery::member::set(meta_mut(obj), field, Value::String(value.into()));
}

pub fn remove(obj: &mut Value, field: &str) -> Option<Value> {
    kapi_machinery::member::remove(meta_mut(obj), field)
}

/// Remove the object's `kind` and `apiVersion` (its TypeMeta), as an item
/// of a typed list holds it.
pub fn remove_type_meta(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.remove("kind");
        o.remove("apiVersion");
    }
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    string_items(meta(obj).and_then(|m| m.member("finalizers")))
}

/// Append `finalizer` to the object's finalizers unless it is there (a null
/// list counts as none); whether that changed the object.
pub fn add_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let list = meta_mut(obj)
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    match list.as_array_mut() {
        Some(items) if !items.iter().any(|f| f.as_str() == Some(finalizer)) => {
            items.push(Value::from(finalizer));
            true
        }
        _ => false,
    }
}

/// Remove `finalizer` from the object's finalizers (a list left empty goes,
/// as Go omits it); whether that changed the object.
pub fn remove_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let m = meta_mut(obj);
    let Some(list) = m.get_mut("finalizers").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f != finalizer);
    let changed = list.len() != before;
    if list.is_empty() {
        m.remove("finalizers");
    }
    changed
}

/// The items of list `v` that are strings, in order (none when `v` is no list).
pub(crate) fn string_items(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    meta(obj).is_some_and(|m| m.member("deletionTimestamp").is_some_and(|v| !v.is_null()))
}

/// Now, as upstream formats `metav1.Time` (RFC 3339, seconds, UTC).
///
/// The text changes once a second and a create asks for it twice (the
/// creation timestamp, the managedFields entry): each thread keeps the last
/// second's text and formats only when the second has moved on.
pub fn now_rfc3339() -> String {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<(u64, String)> = const { RefCell::new((0, String::new())) };
    }
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    LAST.with_borrow_mut(|(second, text)| {
        if *second != since || text.is_empty() {
            *text = rfc3339_of(since);
            *second = since;
        }
        text.clone()
    })
}

/// Now, as upstream formats `metav1.MicroTime` (RFC 3339, six fractional
/// digits, UTC).
pub fn now_micro_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
        ))
        .unwrap_or_default()
}

/// The RFC 3339 text (seconds, UTC) of `seconds` after the Unix epoch.
fn rfc3339_of(seconds: u64) -> String {
    rfc3339_text(
        i64::try_from(seconds)
            .ok()
            .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
    )
}

/// `now_rfc3339` plus `seconds`.
pub fn rfc3339_after(seconds: i64) -> String {
    rfc3339_text(time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds))
}

/// The RFC 3339 time `ts` moved by `seconds` (in `rfc3339_after`'s form);
/// `None` when `ts` is no such time.
pub fn rfc3339_shifted(ts: &str, seconds: i64) -> Option<String> {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339).ok()?;
    Some(rfc3339_text(t + time::Duration::seconds(seconds)))
}

/// `t` as metadata times are written: UTC, whole seconds, `Z`.
fn rfc3339_text(t: time::OffsetDateTime) -> String {
    let f = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.to_offset(time::UtcOffset::UTC)
        .format(&f)
        .expect("formattable time")
}

pub fn new_uid() -> String {
    // Random bytes from the thread's generator (seeded from the OS), not a
    // system call per UID as `Uuid::new_v4` makes: one per request and object.
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

/// Upstream's `SimpleNameGenerator`: five characters from an alphabet without
/// vowels or look-alikes, appended to the (truncated) prefix.
pub fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX_PREFIX: usize = 63 - 5;
    let prefix = if prefix.len() > MAX_PREFIX {
        &prefix[..MAX_PREFIX]
    } else {
        prefix
    };
    let mut rng = rand::rng();
    let mut name = String::with_capacity(prefix.len() + 5);
    name.push_str(prefix);
    name.extend((0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char));
    name
}

/// Everything but `metadata` and `status`: what `generation` counts.
pub fn spec_part(obj: &Value) -> Map<String, Value> {
    obj.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(obj: &Value) -> Vec<&str> {
        meta(obj).unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn set_str_replaces_in_place_or_appends() {
        let mut obj = json!({"metadata": {"name": "a", "resourceVersion": "1", "uid": "u"}});
        set_str(&mut obj, "resourceVersion", "2");
        assert_eq!(keys(&obj), ["name", "resourceVersion", "uid"]);
        assert_eq!(resource_version(&obj), Some("2"));
        set_str(&mut obj, "namespace", "ns");
        assert_eq!(keys(&obj), ["name", "resourceVersion", "uid", "namespace"]);
        assert_eq!(namespace(&obj), Some("ns"));
    }

    #[test]
    fn finalizers_are_added_once_after_the_others_and_removed() {
        let mut obj = json!({"metadata": {"name": "c"}});
        assert!(add_finalizer(&mut obj, "a/x"));
        assert!(!add_finalizer(&mut obj, "a/x"));
        assert_eq!(obj["metadata"]["finalizers"], json!(["a/x"]));
        let mut other = json!({"metadata": {"finalizers": ["a/b"]}});
        assert!(add_finalizer(&mut other, "a/x"));
        assert_eq!(other["metadata"]["finalizers"], json!(["a/b", "a/x"]));
        let mut null = json!({"metadata": {"finalizers": null}});
        assert!(add_finalizer(&mut null, "a/x"));
        assert_eq!(null["metadata"]["finalizers"], json!(["a/x"]));
        assert!(remove_finalizer(&mut other, "a/b"));
        assert!(!remove_finalizer(&mut other, "a/b"));
        assert_eq!(other["metadata"]["finalizers"], json!(["a/x"]));
        // A list left empty goes.
        assert!(remove_finalizer(&mut other, "a/x"));
        assert!(other["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn meta_mut_makes_metadata_an_object() {
        for mut obj in [
            json!({}),
            json!({"metadata": null}),
            json!({"metadata": "x"}),
        ] {
            set_str(&mut obj, "name", "a");
            assert_eq!(obj["metadata"], json!({"name": "a"}));
        }
        // A non-object `metadata` is replaced where it is.
        let mut obj = json!({"kind": "K", "metadata": null, "data": {}});
        set_str(&mut obj, "name", "a");
        let order: Vec<&str> = obj
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(order, ["kind", "metadata", "data"]);
        let mut obj = json!({"kind": "K", "metadata": {"name": "a"}});
        meta_mut(&mut obj).insert("uid".into(), json!("u"));
        assert_eq!(
            obj,
            json!({"kind": "K", "metadata": {"name": "a", "uid": "u"}})
        );
    }

    #[test]
    fn now_is_the_clock_in_rfc3339_seconds() {
        assert_eq!(rfc3339_of(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_of(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_of(951_782_400), "2000-02-29T00:00:00Z");
        let fmt =
            time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
        let before = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap();
        let (a, b) = (now_rfc3339(), now_rfc3339());
        let after = time::OffsetDateTime::now_utc();
        for t in [a, b] {
            let at = time::PrimitiveDateTime::parse(&t, &fmt)
                .unwrap()
                .assume_utc();
            assert!(before <= at && at <= after, "{t}");
        }
    }
}
