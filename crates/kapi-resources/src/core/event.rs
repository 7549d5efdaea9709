//! core/v1 Events: upstream's legacy event validation (namespace must match the
//! involved object; new-style events need reportingComponent, reportingInstance,
//! action and reason), create-on-update, the involvedObject / reason / source / type
//! field selectors, the `LAST SEEN TYPE REASON OBJECT MESSAGE` table, and the
//! TTL every event is written with (`--event-ttl`, one hour by default, as
//! upstream: set on create and on every update).
//!
//! Where to look next: `table.rs` for the time columns.

use std::time::Duration;

use kapi_machinery::validation::{
    is_dns1123_subdomain, is_qualified_name, ErrorList, FieldError, FieldPath,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::table::{since, string_column, NAME_DOC};
use super::util::{i64_at, present, str_at};

/// Events: the strategy, with how long each write lives (`--event-ttl`;
/// `None` keeps events until deleted). Upstream counts whole seconds.
pub struct EventStrategy {
    ttl: Option<Duration>,
}

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

impl EventStrategy {
    /// Events living `ttl` after each write (a zero TTL: until deleted).
    pub fn new(ttl: Duration) -> EventStrategy {
        let secs = ttl.as_secs();
        EventStrategy {
            ttl: (secs > 0).then(|| Duration::from_secs(secs)),
        }
    }

    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }
}

const SELECTABLE: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// The members Go's encoder always writes for a core `v1` Event (no `omitempty`, or
/// struct-typed): zero timestamps as `null`, empty reporter strings, `source: {}`.
pub fn core_zero_fields(obj: &mut Value) {
    for (key, zero) in [
        ("involvedObject", json!({})),
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
    ] {
        if let Some(root) = obj.as_object_mut() {
            root.entry(key).or_insert(zero);
        }
    }
}

impl Strategy for EventStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        core_zero_fields(obj);
    }

    fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Events take no part in garbage collection, as upstream.
    fn gc_policy(&self) -> kapi_registry::GcPolicy {
        kapi_registry::GcPolicy::Unsupported
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        legacy_errors(obj, "reportingComponent")
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> ErrorList {
        self.validate(new)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        SELECTABLE
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let value = match field {
            "source" => match str_at(obj, "/source/component") {
                "" => str_at(obj, "/reportingComponent"),
                s => s,
            },
            f if SELECTABLE.contains(&f) => str_at(obj, &format!("/{}", f.replace('.', "/"))),
            _ => return None,
        };
        Some(value.to_string())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            string_column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
            string_column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
            string_column("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
            string_column("Object", "The object that this event is about."),
            string_column("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].").wide(),
            string_column("Source", "The component reporting this event. Should be a short machine understandable string.").wide(),
            string_column("Message", "A human-readable description of the status of this operation."),
            string_column("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)").wide(),
            string_column("Count", "The number of times this event has occurred.").wide(),
            string_column("Name", NAME_DOC).format("name").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let first = match present(obj, "/firstTimestamp") {
            Some(_) => since(obj, "/firstTimestamp"),
            None => since(obj, "/eventTime"),
        };
        let mut last = match present(obj, "/lastTimestamp") {
            Some(_) => since(obj, "/lastTimestamp"),
            None => first.clone(),
        };
        let mut count = i64_at(obj, "/count").unwrap_or(0);
        if present(obj, "/series").is_some() {
            last = since(obj, "/series/lastObservedTime");
            count = i64_at(obj, "/series/count").unwrap_or(0);
        } else if count == 0 {
            count = 1;
        }
        let kind = str_at(obj, "/involvedObject/kind").to_lowercase();
        let target = match str_at(obj, "/involvedObject/name") {
            "" => kind,
            name => format!("{kind}/{name}"),
        };
        let source = match (
            first_non_empty(obj, "/source/component", "/reportingComponent"),
            first_non_empty(obj, "/source/host", "/reportingInstance"),
        ) {
            (c, "") => c.to_string(),
            (c, i) => format!("{c}, {i}"),
        };
        vec![
            json!(last),
            json!(str_at(obj, "/type")),
            json!(str_at(obj, "/reason")),
            json!(target),
            json!(str_at(obj, "/involvedObject/fieldPath")),
            json!(source),
            json!(str_at(obj, "/message").trim()),
            json!(first),
            json!(count),
            obj.pointer("/metadata/name").cloned().unwrap_or(json!("")),
        ]
    }
}

fn first_non_empty<'a>(obj: &'a Value, a: &str, b: &str) -> &'a str {
    match str_at(obj, a) {
        "" => str_at(obj, b),
        s => s,
    }
}

/// Upstream `legacyValidateEvent` on the core form; `controller_field` names the
/// reporting controller in paths (`reportingComponent` for core `v1` requests,
/// `reportingController` for `events.k8s.io`).
pub fn legacy_errors(obj: &Value, controller_field: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let ns = str_at(obj, "/metadata/namespace");
    let involved_ns = str_at(obj, "/involvedObject/namespace");
    let mismatch = |errs: &mut ErrorList| {
        let path = FieldPath::new("involvedObject").child("namespace");
        errs.push(FieldError::invalid(
            &path,
            involved_ns,
            "does not match event.namespace",
        ));
    };
    if present(obj, "/eventTime").is_none() {
        if (involved_ns.is_empty() && !ns.is_empty() && ns != "default")
            || (!involved_ns.is_empty() && ns != involved_ns)
        {
            mismatch(&mut errs);
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            mismatch(&mut errs);
        }
        errs.extend(new_style_errors(obj, controller_field));
    }
    for msg in is_dns1123_subdomain(ns) {
        errs.push(FieldError::invalid(&FieldPath::new("namespace"), ns, msg));
    }
    errs
}

/// The rules upstream applies to events that carry `eventTime`.
fn new_style_errors(obj: &Value, controller_field: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let controller = str_at(obj, "/reportingComponent");
    let path = FieldPath::new(controller_field);
    if controller.is_empty() {
        errs.push(FieldError::required(&path, ""));
    }
    errs.extend(
        is_qualified_name(controller)
            .into_iter()
            .map(|m| FieldError::invalid(&path, controller, m)),
    );
    let limits = [("reportingInstance", 128), ("action", 128), ("reason", 128)];
    for (field, max) in limits {
        let value = str_at(obj, &format!("/{field}"));
        if value.is_empty() {
            errs.push(FieldError::required(&FieldPath::new(field), ""));
        }
        if value.len() > max {
            let msg = format!("can have at most {max} characters");
            errs.push(FieldError::invalid(&FieldPath::new(field), "", msg));
        }
    }
    if str_at(obj, "/message").len() > 1024 {
        errs.push(FieldError::invalid(
            &FieldPath::new("message"),
            "",
            "can have at most 1024 characters",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Value {
        json!({
            "metadata": {"name": "p.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u1",
                "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{c}"},
            "reason": "Pulled", "message": " done \n", "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"}, "count": 3,
            "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z"
        })
    }

    #[test]
    fn namespace_must_match_involved_object() {
        assert!(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
            .validate(&event())
            .is_empty());
        let mut e = event();
        e["involvedObject"]["namespace"] = json!("other");
        let errs: Vec<String> = EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
            .validate(&e)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]);
        e["involvedObject"]["namespace"] = json!("default");
        e["eventTime"] = json!("2020-01-01T00:00:00.000000Z");
        let errs: Vec<String> = EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
            .validate(&e)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errs.contains(&"reportingComponent: Required value".to_string()),
            "{errs:?}"
        );
        assert!(errs.contains(&"action: Required value".to_string()));
    }

    #[test]
    fn field_values() {
        let e = event();
        let expect = [
            ("involvedObject.kind", "Pod"),
            ("involvedObject.namespace", "default"),
            ("involvedObject.name", "p"),
            ("involvedObject.uid", "u1"),
            ("involvedObject.apiVersion", "v1"),
            ("involvedObject.resourceVersion", "7"),
            ("involvedObject.fieldPath", "spec.containers{c}"),
            ("reason", "Pulled"),
            ("reportingComponent", ""),
            ("source", "kubelet"),
            ("type", "Normal"),
        ];
        for (field, want) in expect {
            assert_eq!(
                EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
                    .field_value(&e, field)
                    .unwrap(),
                want,
                "{field}"
            );
        }
        let mut e2 = event();
        e2["source"] = json!({});
        e2["reportingComponent"] = json!("ctrl");
        assert_eq!(
            EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
                .field_value(&e2, "source")
                .unwrap(),
            "ctrl"
        );
    }

    #[test]
    fn table_cells() {
        let cells = EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL).cells(&event());
        assert_eq!(
            cells.len(),
            EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)
                .columns()
                .len()
        );
        assert_eq!(cells[1], "Normal");
        assert_eq!(cells[2], "Pulled");
        assert_eq!(cells[3], "pod/p");
        assert_eq!(cells[4], "spec.containers{c}");
        assert_eq!(cells[5], "kubelet, node-1");
        assert_eq!(cells[6], "done");
        assert_eq!(cells[8], 3);
        assert_eq!(cells[9], "p.1");
    }
}
