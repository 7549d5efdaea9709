//! Reading an object's members by name, cheaply. `serde_json`'s map keeps its
//! keys in order with a SipHash table beside them, and each `get` hashes the
//! key: a few hundred instructions. The maps objects are made of are small
//! (`metadata` has about ten members, most others fewer), and a scan that
//! compares lengths first finds a member in a fraction of that. Larger maps
//! are still looked up through the table.

use serde_json::{Map, Value};

/// Up to this many members a map is scanned, not hashed.
const SCAN: usize = 16;

/// `map[key]`.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() > SCAN {
        return map.get(key);
    }
    map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// `map[key]`, to change.
pub fn get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() > SCAN {
        return map.get_mut(key);
    }
    map.iter_mut()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v)
}

/// `map[key] = value`: replaced where it is (as `insert` would, keeping its
/// place) without hashing the key or allocating a new one, else added.
pub fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    match get_mut(map, key) {
        Some(v) => *v = value,
        None => {
            map.insert(key.into(), value);
        }
    }
}

/// `map.remove(key)`: a small map is scanned first, as most removals find
/// nothing and the map's own removal hashes the key.
pub fn remove(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    if map.len() <= SCAN {
        get(map, key)?;
    }
    map.remove(key)
}

/// `v.pointer(ptr)`: the value at a JSON pointer (RFC 6901), with array
/// indexes as `serde_json` reads them, and no allocation unless a token is
/// escaped (`~0`, `~1`).
pub fn pointer<'a>(v: &'a Value, ptr: &str) -> Option<&'a Value> {
    if ptr.is_empty() {
        return Some(v);
    }
    let rest = ptr.strip_prefix('/')?;
    rest.split('/').try_fold(v, |v, token| {
        if token.contains('~') {
            step(v, &token.replace("~1", "/").replace("~0", "~"))
        } else {
            step(v, token)
        }
    })
}

/// One step of a pointer: an object's member or an array's element.
fn step<'a>(v: &'a Value, token: &str) -> Option<&'a Value> {
    match v {
        Value::Object(map) => get(map, token),
        Value::Array(items) => {
            // As serde_json: no sign, no leading zero.
            if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                return None;
            }
            items.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

/// Members of JSON values read by name: `obj.member("metadata")` is
/// `obj.get("metadata")` for an object, found as [`get`] finds it.
pub trait Members {
    /// The member `key` of an object; `None` for anything else.
    fn member(&self, key: &str) -> Option<&Value>;

    /// The value at `path`, one member name per step (a JSON pointer's
    /// tokens, unescaped): `obj.member_at(&["metadata", "uid"])`.
    fn member_at(&self, path: &[&str]) -> Option<&Value>;

    /// The string member `key`.
    fn member_str(&self, key: &str) -> Option<&str> {
        self.member(key)?.as_str()
    }
}

impl Members for Value {
    fn member(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => get(map, key),
            _ => None,
        }
    }

    fn member_at(&self, path: &[&str]) -> Option<&Value> {
        path.iter().try_fold(self, |v, key| v.member(key))
    }
}

impl Members for Map<String, Value> {
    fn member(&self, key: &str) -> Option<&Value> {
        get(self, key)
    }

    fn member_at(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        get(self, first)?.member_at(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A map of `n` members named `k0`, `k1`, … with their index as value.
    fn map_of(n: usize) -> Map<String, Value> {
        (0..n).map(|i| (format!("k{i}"), json!(i))).collect()
    }

    #[test]
    fn scanned_and_hashed_maps_find_the_same_members() {
        for n in [0, 1, SCAN - 1, SCAN, SCAN + 1, 3 * SCAN] {
            let mut map = map_of(n);
            for key in (0..n + 2)
                .map(|i| format!("k{i}"))
                .chain(["".into(), "k".into()])
            {
                assert_eq!(get(&map, &key), map.get(&key), "{n} members, key {key:?}");
                let want = map.get(&key).cloned();
                assert_eq!(get_mut(&mut map, &key).map(|v| v.clone()), want);
            }
        }
    }

    #[test]
    fn members_change_in_place() {
        for n in [3, 3 * SCAN] {
            let mut map = map_of(n);
            *get_mut(&mut map, "k2").unwrap() = json!("two");
            assert_eq!(map["k2"], json!("two"));
            assert_eq!(map.len(), n);
        }
    }

    /// Setting and removing through the scan change the map as `insert` and
    /// `remove` do.
    #[test]
    fn members_set_and_removed_as_the_map_does() {
        for n in [3, 3 * SCAN] {
            let mut map = map_of(n);
            let mut want = map.clone();
            set(&mut map, "k1", json!("one"));
            want.insert("k1".into(), json!("one"));
            set(&mut map, "new", json!(true));
            want.insert("new".into(), json!(true));
            assert_eq!(map, want);
            assert_eq!(
                map.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>()
            );
            assert_eq!(remove(&mut map, "k0"), want.remove("k0"));
            assert_eq!(remove(&mut map, "missing"), None);
            assert_eq!(
                map.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn pointers_read_as_serde_json_reads_them() {
        let obj = json!({
            "metadata": {"name": "a", "labels": {"x/y": "z", "t~u": "v", "": "empty"}},
            "items": [{"n": 0}, {"n": 1}],
            "spec": {"0": "zero", "01": "one"},
            "": {"": "nested empty"},
        });
        let ptrs = [
            "",
            "/",
            "//",
            "metadata",
            "/metadata",
            "/metadata/name",
            "/metadata/name/x",
            "/metadata/labels/x~1y",
            "/metadata/labels/t~0u",
            "/metadata/labels/x/y",
            "/metadata/labels/",
            "/metadata/labels/~2",
            "/items/0",
            "/items/1/n",
            "/items/2",
            "/items/01",
            "/items/+1",
            "/items/-1",
            "/items/",
            "/items/n",
            "/spec/0",
            "/spec/01",
            "/missing/deeper",
        ];
        for ptr in ptrs {
            assert_eq!(pointer(&obj, ptr), obj.pointer(ptr), "pointer {ptr:?}");
        }
    }

    #[test]
    fn members_of_values_and_paths() {
        let obj = json!({"metadata": {"name": "a", "labels": {"x/y": "z"}}, "n": 1});
        assert_eq!(obj.member("n"), Some(&json!(1)));
        assert_eq!(obj.member_str("n"), None);
        assert_eq!(obj.member_at(&["metadata", "name"]), Some(&json!("a")));
        assert_eq!(
            obj.member_at(&["metadata", "labels", "x/y"]),
            Some(&json!("z"))
        );
        assert_eq!(obj.member_at(&["metadata", "name", "deeper"]), None);
        assert_eq!(obj.member_at(&[]), Some(&obj));
        assert_eq!(json!([1]).member("0"), None);
        assert_eq!(json!("s").member_at(&["a"]), None);
        let map = obj.as_object().unwrap();
        assert_eq!(map.member_at(&["metadata", "name"]), Some(&json!("a")));
        assert_eq!(map.member_at(&[]), None);
    }
}
