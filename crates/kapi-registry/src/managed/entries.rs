//! The wire format of `metadata.managedFields`: entries decoded into ownership
//! by manager identifier plus each manager's time, and encoded back sorted as
//! upstream sorts them (Apply before Update, then by time, manager, apiVersion,
//! subresource).
//!
//! A manager identifier is the entry without `time`, `fieldsType` and
//! `fieldsV1` (and, for Apply, without `apiVersion`), as upstream's JSON of
//! it: two entries are the same manager exactly when their identifiers match.

use std::collections::BTreeMap;

use kapi_machinery::apply::{ManagedFields, VersionedSet};
use kapi_machinery::fieldpath::{from_fields_v1, to_fields_v1};
use serde_json::{json, Map, Value};

/// Ownership and the time each manager last changed something.
#[derive(Debug, Clone, Default)]
pub struct Managed {
    pub fields: ManagedFields,
    pub times: BTreeMap<String, Option<String>>,
}

/// The identifier of a manager.
pub fn manager_id(
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: Option<&str>,
) -> String {
    // The compact JSON of {manager, operation, apiVersion?, subresource?},
    // written directly (a map built and serialized took 5,000 instructions).
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut id = format!(
        "{{\"manager\":{},\"operation\":{}",
        quoted(manager),
        quoted(operation)
    );
    if operation != "Apply" && !api_version.is_empty() {
        id.push_str(",\"apiVersion\":");
        id.push_str(&quoted(api_version));
    }
    if let Some(s) = subresource.filter(|s| !s.is_empty()) {
        id.push_str(",\"subresource\":");
        id.push_str(&quoted(s));
    }
    id.push('}');
    id
}

/// What an entry takes from its manager identifier beside the fields it
/// keeps itself (parsed into these two, not into a map).
#[derive(serde::Deserialize, Default)]
pub(super) struct Identity {
    #[serde(default)]
    pub manager: String,
    #[serde(default)]
    pub subresource: Option<String>,
}

impl Identity {
    fn of(id: &str) -> Identity {
        serde_json::from_str(id).unwrap_or_default()
    }
}

/// One `managedFields` entry, members in upstream's order.
pub(super) fn entry(
    id: Identity,
    applied: bool,
    api_version: &str,
    time: Option<&str>,
    fields_v1: Value,
) -> Value {
    let mut e = Map::with_capacity(7);
    e.insert("manager".into(), Value::String(id.manager));
    let op = if applied { "Apply" } else { "Update" };
    e.insert("operation".into(), op.into());
    e.insert("apiVersion".into(), api_version.into());
    if let Some(t) = time {
        e.insert("time".into(), t.into());
    }
    e.insert("fieldsType".into(), "FieldsV1".into());
    e.insert("fieldsV1".into(), fields_v1);
    // An empty subresource is none, as `manager_id` names it.
    if let Some(s) = id.subresource.filter(|s| !s.is_empty()) {
        e.insert("subresource".into(), Value::String(s));
    }
    Value::Object(e)
}

fn str_of<'a>(e: &'a Value, k: &str) -> &'a str {
    e.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Decode `managedFields` (absent means none).
pub fn decode(entries: Option<&Value>) -> Result<Managed, String> {
    let mut out = Managed::default();
    let Some(entries) = entries.filter(|v| !v.is_null()) else {
        return Ok(out);
    };
    let list = entries.as_array().ok_or("managedFields is not a list")?;
    for (i, e) in list.iter().enumerate() {
        let operation = str_of(e, "operation");
        if !matches!(operation, "Apply" | "Update") {
            return Err("operation must be `Apply` or `Update`".into());
        }
        let api_version = str_of(e, "apiVersion");
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match str_of(e, "fieldsType") {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {other:?} in managed fields entry {i}"
                ))
            }
        }
        let sub = e.get("subresource").and_then(Value::as_str);
        let id = manager_id(str_of(e, "manager"), operation, api_version, sub);
        let empty = json!({});
        let set = from_fields_v1(e.get("fieldsV1").unwrap_or(&empty))
            .map_err(|err| format!("error decoding set: {err}"))?;
        out.fields.insert(
            id.clone(),
            VersionedSet {
                set,
                api_version: api_version.to_string(),
                applied: operation == "Apply",
            },
        );
        let time = e.get("time").and_then(Value::as_str).map(str::to_string);
        out.times.insert(id, time);
    }
    Ok(out)
}

/// Encode ownership as `managedFields` entries (an empty list when none).
pub fn encode(managed: &Managed) -> Vec<Value> {
    let mut entries: Vec<Value> = managed
        .fields
        .iter()
        .map(|(id, vs)| {
            let time = managed.times.get(id).and_then(Option::as_deref);
            let fields = to_fields_v1(&vs.set);
            entry(Identity::of(id), vs.applied, &vs.api_version, time, fields)
        })
        .collect();
    entries.sort_by(|p, q| {
        // RFC 3339 UTC seconds sort as strings; no time sorts first.
        let key = |e: &Value| {
            (
                str_of(e, "operation").to_string(),
                str_of(e, "time").to_string(),
                str_of(e, "manager").to_string(),
                str_of(e, "apiVersion").to_string(),
                str_of(e, "subresource").to_string(),
            )
        };
        key(p).cmp(&key(q))
    });
    entries
}

/// Upstream's reset request: an empty list, or one empty entry.
pub fn is_reset(entries: Option<&Value>) -> bool {
    match entries.and_then(Value::as_array) {
        Some(list) if list.is_empty() => true,
        Some(list) if list.len() == 1 => list[0].as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// How a conflict message names a manager: `"kubectl"`, or for updates
/// `"m" using apps/v1`, with ` with subresource "status"` when there is one.
pub fn print_manager(id: &str) -> String {
    let Ok(parsed) = serde_json::from_str::<Value>(id) else {
        return format!("{id:?}");
    };
    let mut out = Value::String(str_of(&parsed, "manager").to_string()).to_string();
    if let Some(s) = parsed.get("subresource").and_then(Value::as_str) {
        out.push_str(&format!(" with subresource {}", Value::String(s.into())));
    }
    if str_of(&parsed, "operation") == "Update" {
        out.push_str(&format!(" using {}", str_of(&parsed, "apiVersion")));
    }
    out
}

/// The number of update managers kept before the oldest merge into
/// `ancient-changes`.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// Merge the oldest update entries into one `ancient-changes` entry per
/// apiVersion until at most [`MAX_UPDATE_MANAGERS`] update entries remain.
pub fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let time_of = |id: &String| managed.times.get(id).cloned().flatten().unwrap_or_default();
    updaters.sort_by(|a, b| time_of(a).cmp(&time_of(b)).then_with(|| a.cmp(b)));
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let vs = managed.fields[&id].clone();
        let time = managed.times.get(&id).cloned().flatten();
        let bucket = manager_id("ancient-changes", "Update", &vs.api_version, None);
        match first_of_version.get(&vs.api_version) {
            Some(first) => {
                if !managed.fields.contains_key(&bucket) {
                    let s = managed.fields.remove(first).expect("first is kept");
                    managed.times.remove(first);
                    managed.fields.insert(bucket.clone(), s);
                }
                let merged = vs.set.union(&managed.fields[&bucket].set);
                managed.fields.insert(
                    bucket.clone(),
                    VersionedSet {
                        set: merged,
                        ..vs.clone()
                    },
                );
                managed.fields.remove(&id);
                managed.times.remove(&id);
                managed.times.insert(bucket, time);
                length -= 1;
            }
            None => {
                first_of_version.insert(vs.api_version.clone(), id);
            }
        }
    }
}
