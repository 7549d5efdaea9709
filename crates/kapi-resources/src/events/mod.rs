//! The `events.k8s.io/v1` group: Events as the newer API shapes them, served from
//! the core `v1` events (the same objects, stored as core `v1`, converted on every
//! read and write by [`EventsConversion`]); creation through this group meets
//! upstream's strict rules (`ValidateEventCreate` for `events.k8s.io/v1`) on top of
//! the core rules; the table is the core one.
//!
//! Where to look next: `core/event.rs` (the core strategy reused here).

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG};
use kapi_registry::{Column, Conversion, Strategy};
use serde_json::{Map, Value};

use crate::core::event::{core_zero_fields, legacy_errors};
use crate::core::util::{i64_at, present, str_at};
use crate::core::EventStrategy;

/// Core field ⇄ events.k8s.io field, for the members that were renamed.
const RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Renames members of `obj` (`from` → `to` for each pair) and sets `apiVersion`.
fn rename(mut obj: Value, to_events: bool, api_version: &str) -> Value {
    if let Some(root) = obj.as_object_mut() {
        let mut moved = Map::new();
        for (core, events) in RENAMED {
            let (from, to) = if to_events {
                (core, events)
            } else {
                (events, core)
            };
            if let Some(v) = root.remove(from) {
                moved.insert(to.to_string(), v);
            }
        }
        root.extend(moved);
        root.insert("apiVersion".into(), Value::from(api_version));
    }
    if to_events {
        events_zero_fields(&mut obj);
    } else {
        core_zero_fields(&mut obj);
    }
    obj
}

/// What Go writes for an `events.k8s.io/v1` Event: `eventTime` and the deprecated
/// timestamps as `null`, `deprecatedSource` and `regarding` as objects; the reporter
/// strings are `omitempty` here (unlike core), so empty ones are left out.
fn events_zero_fields(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for key in ["reportingController", "reportingInstance"] {
        if root.get(key).and_then(Value::as_str) == Some("") {
            root.remove(key);
        }
    }
    for (key, zero) in [
        ("eventTime", Value::Null),
        ("deprecatedFirstTimestamp", Value::Null),
        ("deprecatedLastTimestamp", Value::Null),
        ("deprecatedSource", Value::Object(Map::new())),
        ("regarding", Value::Object(Map::new())),
    ] {
        root.entry(key).or_insert(zero);
    }
}

/// Events live in core `v1` storage.
pub struct EventsConversion;

impl Conversion for EventsConversion {
    fn storage_api_version(&self) -> &str {
        "v1"
    }

    fn convert(&self, obj: Value, api_version: &str) -> Value {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        match (from, api_version) {
            ("v1", "events.k8s.io/v1") => rename(obj, true, api_version),
            ("events.k8s.io/v1", "v1") => rename(obj, false, api_version),
            _ => obj,
        }
    }
}

/// An events.k8s.io object in its core form.
fn to_core(obj: &Value) -> Value {
    rename(obj.clone(), false, "v1")
}

/// `events.k8s.io/v1` events, stored as core events with the same TTL.
pub struct EventsV1Strategy {
    core: EventStrategy,
}

impl EventsV1Strategy {
    pub fn new(core: EventStrategy) -> EventsV1Strategy {
        EventsV1Strategy { core }
    }

    /// Upstream's strict checks for events written through `events.k8s.io/v1`, on
    /// the core form (so paths name core fields: `count`, `source`, ...).
    fn strict(core: &Value) -> ErrorList {
        let mut errs = series_errors(core);
        let path = FieldPath::new;
        if present(core, "/eventTime").is_none() {
            errs.push(FieldError::required(&path("eventTime"), ""));
        }
        let ty = str_at(core, "/type");
        if ty != "Normal" && ty != "Warning" {
            errs.push(FieldError::invalid(
                &path("type"),
                "",
                format!("has invalid value: {ty}"),
            ));
        }
        for field in ["firstTimestamp", "lastTimestamp"] {
            if present(core, &format!("/{field}")).is_some() {
                errs.push(FieldError::invalid(&path(field), "", "needs to be unset"));
            }
        }
        if i64_at(core, "/count").unwrap_or(0) != 0 {
            errs.push(FieldError::invalid(&path("count"), "", "needs to be unset"));
        }
        if !str_at(core, "/source/component").is_empty() || !str_at(core, "/source/host").is_empty()
        {
            errs.push(FieldError::invalid(
                &path("source"),
                "",
                "needs to be unset",
            ));
        }
        errs
    }
}

/// Upstream `validateV1EventSeries`.
fn series_errors(core: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(series) = present(core, "/series") {
        if i64_at(series, "/count").unwrap_or(0) < 2 {
            let path = FieldPath::new("series.count");
            errs.push(FieldError::invalid(&path, "", "should be at least 2"));
        }
        if present(series, "/lastObservedTime").is_none() {
            errs.push(FieldError::required(
                &FieldPath::new("series.lastObservedTime"),
                "",
            ));
        }
    }
    errs
}

/// Core fields an `events.k8s.io/v1` update may not change, in upstream's order
/// (`reason` is checked twice there, so it is here).
const IMMUTABLE: [&str; 14] = [
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

/// The fields upstream's `events.k8s.io/v1` field label conversion accepts.
const SELECTABLE: &[&str] = &[
    "reason",
    "reportingController",
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "type",
];

impl Strategy for EventsV1Strategy {
    /// Stored as core events, with the same TTL.
    fn ttl(&self) -> Option<std::time::Duration> {
        self.core.ttl()
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        SELECTABLE
    }

    /// The value of an `events.k8s.io` field from the object as stored (core
    /// names) or as served (this group's names), as upstream maps this
    /// group's labels onto the core event's field set.
    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        if !SELECTABLE.contains(&field) {
            return None;
        }
        let served = format!("/{}", field.replace('.', "/"));
        let stored = match field {
            "reportingController" => "/reportingComponent".to_owned(),
            f => format!(
                "/{}",
                f.replacen("regarding", "involvedObject", 1)
                    .replace('.', "/")
            ),
        };
        let value = obj.pointer(&served).or_else(|| obj.pointer(&stored));
        Some(value.and_then(Value::as_str).unwrap_or("").to_owned())
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let core = to_core(obj);
        let mut errs = legacy_errors(&core, "reportingController");
        errs.extend(Self::strict(&core));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let (new, old) = (to_core(new), to_core(old));
        let mut errs = legacy_errors(&new, "reportingController");
        if new.get("series") != old.get("series") {
            errs.extend(series_errors(&new));
        }
        for field in IMMUTABLE {
            let ptr = format!("/{field}");
            let (n, o) = (present(&new, &ptr), present(&old, &ptr));
            if n != o {
                // The path names the field as the internal type does.
                let name = if field == "reportingComponent" {
                    "reportingController"
                } else {
                    field
                };
                errs.push(FieldError::invalid(
                    &FieldPath::new(name),
                    n.cloned().unwrap_or(Value::Null),
                    FIELD_IMMUTABLE_ERROR_MSG,
                ));
            }
        }
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        self.core.columns()
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        self.core.cells(&to_core(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "type": "Normal", "reason": "Started",
            "action": "Start", "note": "hello", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})
    }

    #[test]
    fn conversion_round_trips() {
        let core = EventsConversion.convert(event(), "v1");
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["reportingComponent"], "example.com/ctl");
        assert!(core.get("note").is_none());
        assert_eq!(core["source"], json!({}));
        assert_eq!(core["firstTimestamp"], Value::Null);
        let mut back = EventsConversion.convert(core, "events.k8s.io/v1");
        assert_eq!(back["deprecatedSource"], json!({}));
        for key in [
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedSource",
        ] {
            back.as_object_mut().unwrap().remove(key);
        }
        assert_eq!(back, event());
        let bare = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x"}});
        let events = EventsConversion.convert(bare, "events.k8s.io/v1");
        assert!(events.get("reportingController").is_none());
        assert_eq!(events["eventTime"], Value::Null);
    }

    #[test]
    fn strict_rules() {
        assert!(
            EventsV1Strategy::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL))
                .validate(&event())
                .is_empty(),
            "{:?}",
            EventsV1Strategy::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL))
                .validate(&event())
        );
        let mut bad = event();
        bad.as_object_mut().unwrap().remove("eventTime");
        bad["type"] = json!("Odd");
        bad["deprecatedCount"] = json!(2);
        bad["regarding"]["namespace"] = json!("");
        let got: Vec<String> =
            EventsV1Strategy::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL))
                .validate(&bad)
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            got,
            vec![
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "count: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut no_controller = event();
        no_controller["reportingController"] = json!("");
        no_controller["metadata"]["namespace"] = json!("other");
        no_controller["regarding"]["namespace"] = json!("");
        let got: Vec<String> =
            EventsV1Strategy::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL))
                .validate(&no_controller)
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            got[0],
            "involvedObject.namespace: Invalid value: \"\": does not match event.namespace"
        );
        assert_eq!(got[1], "reportingController: Required value");
    }

    #[test]
    fn updates_keep_the_event_fixed() {
        let old = event();
        let mut new = event();
        new["note"] = json!("changed");
        new["series"] = json!({"count": 1});
        let got: Vec<String> =
            EventsV1Strategy::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL))
                .validate_update(&new, &old)
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            got,
            vec![
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "message: Invalid value: \"changed\": field is immutable",
            ]
        );
    }
}
