//! The `events.k8s.io/v1` group: Events as the newer API shapes them, served from
//! the core `v1` events (the same objects, stored as core `v1`, converted on every
//! read and write by [`EventsConversion`]); creation through this group meets
//! upstream's strict rules (`ValidateEventCreate` for `events.k8s.io/v1`) on top of
//! the core rules; the table is the core one.
//!
//! Where to look next: `core/event.rs` (the core strategy reused here).

use kapi_machinery::validation::{is_qualified_name, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Conversion, Strategy};
use serde_json::{Map, Value};

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

const MAX_FIELD: usize = 128;
const MAX_NOTE: usize = 1024;

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
    obj
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

pub struct EventsV1Strategy;

impl EventsV1Strategy {
    /// Upstream's strict checks for events created through `events.k8s.io/v1`.
    fn strict(obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let path = FieldPath::new;
        if present(obj, "/eventTime").is_none() {
            errs.push(FieldError::required(&path("eventTime"), ""));
        }
        let ty = str_at(obj, "/type");
        if ty != "Normal" && ty != "Warning" {
            errs.push(FieldError::invalid(
                &path("type"),
                "",
                format!("has invalid value: {ty}"),
            ));
        }
        for field in [
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedSource",
        ] {
            let set = match present(obj, &format!("/{field}")) {
                Some(Value::Object(m)) => m
                    .values()
                    .any(|v| v.as_str().is_some_and(|s| !s.is_empty())),
                Some(_) => true,
                None => false,
            };
            if set {
                errs.push(FieldError::invalid(&path(field), "", "needs to be unset"));
            }
        }
        if i64_at(obj, "/deprecatedCount").unwrap_or(0) != 0 {
            errs.push(FieldError::invalid(
                &path("deprecatedCount"),
                "",
                "needs to be unset",
            ));
        }
        let controller = str_at(obj, "/reportingController");
        errs.extend(
            is_qualified_name(controller)
                .into_iter()
                .map(|m| FieldError::invalid(&path("reportingController"), controller, m)),
        );
        for field in [
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
        ] {
            let value = str_at(obj, &format!("/{field}"));
            if value.is_empty() && (field == "action" || field == "reason") {
                errs.push(FieldError::required(&path(field), ""));
            }
            if value.len() > MAX_FIELD {
                errs.push(FieldError::too_long(&path(field), "", MAX_FIELD));
            }
        }
        if str_at(obj, "/note").len() > MAX_NOTE {
            errs.push(FieldError::too_long(&path("note"), "", MAX_NOTE));
        }
        errs
    }
}

impl Strategy for EventsV1Strategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = Self::strict(obj);
        if errs.is_empty() {
            errs.extend(EventStrategy.validate(&to_core(obj)));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        EventStrategy.validate_update(&to_core(new), &to_core(old))
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        EventStrategy.columns()
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        EventStrategy.cells(&to_core(obj))
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
        assert_eq!(EventsConversion.convert(core, "events.k8s.io/v1"), event());
    }

    #[test]
    fn strict_rules() {
        assert!(
            EventsV1Strategy.validate(&event()).is_empty(),
            "{:?}",
            EventsV1Strategy.validate(&event())
        );
        let mut bad = event();
        bad.as_object_mut().unwrap().remove("eventTime");
        bad["type"] = json!("Odd");
        bad["deprecatedCount"] = json!(2);
        let got: Vec<String> = EventsV1Strategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "deprecatedCount: Invalid value: \"\": needs to be unset",
            ]
        );
    }
}
