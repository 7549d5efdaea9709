//! `metadata.managedFields` for non-apply writes, in upstream's format: one entry per
//! (manager, operation, subresource) with a `FieldsV1` set of the fields that
//! manager set. A write by manager M takes ownership of every field it added or
//! changed; other managers keep what they owned and is still there, minus what M
//! changed; fields that disappeared belong to nobody; empty entries are dropped.
//!
//! A field set is a JSON object whose keys are path elements as upstream writes
//! them — `f:<field>`, `k:<json of the key fields>` for list-map elements,
//! `v:<json value>` for set elements, `i:<index>` for atomic-list positions never
//! appear because atomic lists are leaves — with `{}` for a leaf and a `.` key for
//! an element that has children. Server-side apply (a later issue) builds on it.

use kapi_machinery::schema::{FieldInfo, ListType, SchemaNav, TypeRef};
use serde_json::{json, Map, Value};

/// Metadata fields the server owns; never part of a manager's set.
const SYSTEM_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The field set of `obj` (without apiVersion, kind, system metadata and, when
/// `skip_status`, status).
pub fn field_set(
    obj: &Value,
    schema: &dyn SchemaNav,
    ty: &TypeRef,
    skip_status: bool,
) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(root) = obj.as_object() else {
        return out;
    };
    for (k, v) in root {
        if matches!(k.as_str(), "apiVersion" | "kind") || (skip_status && k == "status") {
            continue;
        }
        if k == "metadata" {
            let mut m = Map::new();
            for (mk, mv) in v.as_object().into_iter().flatten() {
                if !SYSTEM_META.contains(&mk.as_str()) {
                    let info = schema.field(
                        &TypeRef::new("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                        mk,
                    );
                    m.insert(format!("f:{mk}"), value_set(mv, schema, info.as_ref()));
                }
            }
            if !m.is_empty() {
                out.insert("f:metadata".into(), Value::Object(m));
            }
            continue;
        }
        let info = schema.field(ty, k);
        out.insert(format!("f:{k}"), value_set(v, schema, info.as_ref()));
    }
    out
}

fn value_set(v: &Value, schema: &dyn SchemaNav, info: Option<&FieldInfo>) -> Value {
    let elem = info.map(|i| i.elem.clone()).unwrap_or_default();
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, child) in map {
                let child_info = if elem.is_unknown() {
                    None
                } else {
                    schema.field(&elem, k)
                };
                let child_info = child_info.or_else(|| {
                    schema.map_value(&elem).map(|t| FieldInfo {
                        elem: t,
                        ..Default::default()
                    })
                });
                out.insert(
                    format!("f:{k}"),
                    value_set(child, schema, child_info.as_ref()),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => match info.map(|i| &i.list_type) {
            Some(ListType::Map(keys)) => {
                let mut out = Map::new();
                for item in items {
                    let key: Map<String, Value> = keys
                        .iter()
                        .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                        .collect();
                    let mut inner = match value_set(
                        item,
                        schema,
                        Some(&FieldInfo {
                            elem: elem.clone(),
                            ..Default::default()
                        }),
                    ) {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    inner.insert(".".into(), json!({}));
                    out.insert(format!("k:{}", Value::Object(key)), Value::Object(inner));
                }
                Value::Object(out)
            }
            Some(ListType::Set) => {
                let out: Map<String, Value> = items
                    .iter()
                    .map(|i| (format!("v:{i}"), json!({})))
                    .collect();
                Value::Object(out)
            }
            _ => json!({}),
        },
        _ => json!({}),
    }
}

/// The fields of `new` that are absent from or different in `old`, as a field set.
fn diff(
    new: &Value,
    old: Option<&Value>,
    schema: &dyn SchemaNav,
    info: Option<&FieldInfo>,
) -> Option<Value> {
    let Some(old) = old else {
        return Some(value_set(new, schema, info));
    };
    let elem = info.map(|i| i.elem.clone()).unwrap_or_default();
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            let mut out = Map::new();
            for (k, child) in n {
                let ci = child_info(schema, &elem, k);
                if let Some(d) = diff(child, o.get(k), schema, ci.as_ref()) {
                    out.insert(format!("f:{k}"), d);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Value::Array(n), Value::Array(o)) => match info.map(|i| &i.list_type) {
            Some(ListType::Map(keys)) => {
                let key_of = |item: &Value| -> Map<String, Value> {
                    keys.iter()
                        .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                        .collect()
                };
                let item_info = FieldInfo {
                    elem: elem.clone(),
                    ..Default::default()
                };
                let mut out = Map::new();
                for item in n {
                    let key = key_of(item);
                    let before = o.iter().find(|x| key_of(x) == key);
                    if let Some(mut d) = diff(item, before, schema, Some(&item_info)) {
                        if before.is_none() {
                            if let Some(m) = d.as_object_mut() {
                                m.insert(".".into(), json!({}));
                            }
                        }
                        out.insert(format!("k:{}", Value::Object(key)), d);
                    }
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
            Some(ListType::Set) => {
                let out: Map<String, Value> = n
                    .iter()
                    .filter(|v| !o.contains(v))
                    .map(|v| (format!("v:{v}"), json!({})))
                    .collect();
                (!out.is_empty()).then_some(Value::Object(out))
            }
            _ => (n != o).then(|| json!({})),
        },
        (n, o) if n == o => None,
        (n, _) => Some(value_set(n, schema, info)),
    }
}

fn child_info(schema: &dyn SchemaNav, elem: &TypeRef, k: &str) -> Option<FieldInfo> {
    let direct = if elem.is_unknown() {
        None
    } else {
        schema.field(elem, k)
    };
    direct.or_else(|| {
        schema.map_value(elem).map(|t| FieldInfo {
            elem: t,
            ..Default::default()
        })
    })
}

/// `diff` over whole objects, with `field_set`'s exclusions.
fn changed(
    new: &Value,
    old: Option<&Value>,
    schema: &dyn SchemaNav,
    ty: &TypeRef,
    skip_status: bool,
) -> Map<String, Value> {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
            if skip_status {
                m.remove("status");
            }
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| !SYSTEM_META.contains(&k.as_str()));
            }
        }
        v
    };
    let info = FieldInfo {
        elem: ty.clone(),
        ..Default::default()
    };
    let (n, o) = (strip(new), old.map(strip));
    let meta_ty = TypeRef::new("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    let mut out = Map::new();
    for (k, child) in n.as_object().into_iter().flatten() {
        let ci = if k == "metadata" {
            Some(FieldInfo {
                elem: meta_ty.clone(),
                ..Default::default()
            })
        } else {
            child_info(schema, &info.elem, k)
        };
        if let Some(d) = diff(
            child,
            o.as_ref().and_then(|o| o.get(k)),
            schema,
            ci.as_ref(),
        ) {
            out.insert(format!("f:{k}"), d);
        }
    }
    out
}

fn intersect(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, av) in a {
        if let Some(bv) = b.get(k) {
            match (av.as_object(), bv.as_object()) {
                (Some(am), Some(bm)) if !am.is_empty() && !bm.is_empty() => {
                    let sub = intersect(am, bm);
                    if !sub.is_empty() {
                        out.insert(k.clone(), Value::Object(sub));
                    }
                }
                _ => {
                    out.insert(k.clone(), av.clone());
                }
            }
        }
    }
    out
}

fn subtract(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, av) in a {
        match (av.as_object(), b.get(k).and_then(Value::as_object)) {
            (Some(am), Some(bm)) if !am.is_empty() && !bm.is_empty() => {
                let sub = subtract(am, bm);
                if !sub.is_empty() {
                    out.insert(k.clone(), Value::Object(sub));
                }
            }
            (_, Some(_)) => {}
            _ => {
                out.insert(k.clone(), av.clone());
            }
        }
    }
    out
}

fn union(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, bv) in b {
        match (a.get_mut(k).and_then(Value::as_object_mut), bv.as_object()) {
            (Some(am), Some(bm)) => union(am, bm),
            _ => {
                a.insert(k.clone(), bv.clone());
            }
        }
    }
}

/// What one write changes in `managedFields`.
pub struct Write<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: Option<&'a str>,
    pub time: &'a str,
}

/// The new `managedFields` for `new` (written by `w`), given the object before.
pub fn update(
    old: Option<&Value>,
    new: &Value,
    w: &Write,
    schema: &dyn SchemaNav,
    ty: &TypeRef,
    skip_status: bool,
) -> Value {
    let new_set = field_set(new, schema, ty, skip_status && w.subresource.is_none());
    let skip = skip_status && w.subresource.is_none();
    let mine = changed(new, old, schema, ty, skip);
    let mut entries: Vec<Value> = Vec::new();
    let mut own: Map<String, Value> = Map::new();
    let previous = old
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array);
    for e in previous.into_iter().flatten() {
        let set = e
            .get("fieldsV1")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let kept = subtract(&intersect(&set, &new_set), &mine);
        let same = e.get("manager").and_then(Value::as_str) == Some(w.manager)
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str) == w.subresource;
        if same {
            union(&mut own, &intersect(&set, &new_set));
        } else if !kept.is_empty() {
            let mut e = e.clone();
            e["fieldsV1"] = Value::Object(kept);
            entries.push(e);
        }
    }
    union(&mut own, &mine);
    if !own.is_empty() {
        let mut e = json!({"manager": w.manager, "operation": "Update", "apiVersion": w.api_version,
                           "time": w.time, "fieldsType": "FieldsV1", "fieldsV1": own});
        if let Some(s) = w.subresource {
            e["subresource"] = json!(s);
        }
        entries.push(e);
    }
    Value::Array(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_machinery::schema::NoSchema;

    fn write<'a>(manager: &'a str) -> Write<'a> {
        Write {
            manager,
            api_version: "v1",
            subresource: None,
            time: "2026-01-01T00:00:00Z",
        }
    }

    #[test]
    fn create_owns_every_field_but_system_metadata() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "uid": "u", "labels": {"a": "1"}}, "data": {"k": "v"}});
        let mf = update(None, &obj, &write("m"), &NoSchema, &TypeRef::UNKNOWN, false);
        assert_eq!(mf[0]["manager"], "m");
        assert_eq!(mf[0]["operation"], "Update");
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:data": {"f:k": {}}})
        );
    }

    #[test]
    fn an_update_takes_what_it_changed_from_others() {
        let old_obj = json!({"metadata": {"name": "x"}, "data": {"k": "v", "j": "w"}});
        let mf = update(
            None,
            &old_obj,
            &write("a"),
            &NoSchema,
            &TypeRef::UNKNOWN,
            false,
        );
        let mut old = old_obj.clone();
        old["metadata"]["managedFields"] = mf;
        let new = json!({"metadata": {"name": "x"}, "data": {"k": "changed", "j": "w", "n": "1"}});
        let mf = update(
            Some(&old),
            &new,
            &write("b"),
            &NoSchema,
            &TypeRef::UNKNOWN,
            false,
        );
        let entries = mf.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["manager"], "a");
        assert_eq!(entries[0]["fieldsV1"], json!({"f:data": {"f:j": {}}}));
        assert_eq!(entries[1]["manager"], "b");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:data": {"f:k": {}, "f:n": {}}})
        );
    }
}
