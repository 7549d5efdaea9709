//! The bridge between client-side apply (`kubectl apply` without
//! `--server-side`, which keeps its configuration in the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation) and
//! server-side apply, as upstream's `lastappliedmanager.go` and
//! `lastappliedupdater.go`: the `kubectl` applier may take, without conflicts,
//! the fields the annotation records and the live object still has as recorded;
//! and when the object carries the annotation, an apply by `kubectl` rewrites it
//! to the configuration just applied, so a later client-side apply diffs against
//! the right thing.

use kapi_machinery::fieldpath::Set;
use serde_json::{Map, Value};

use super::FieldManager;
use crate::meta;

pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn annotation(obj: &Value) -> Option<&str> {
    meta::meta(obj)?
        .get("annotations")?
        .get(LAST_APPLIED)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// JSON with object keys sorted, as Go encodes maps.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let out: Map<String, Value> = keys
                .into_iter()
                .map(|k| (k.clone(), sorted(&m[k])))
                .collect();
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Keep the annotation (when `obj` has one) in step with the applied `config`.
pub fn update_annotation(obj: &mut Value, config: &Value) {
    if annotation(obj).is_none() {
        return;
    }
    let mut config = config.clone();
    if let Some(a) = config
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED);
    }
    let text = format!("{}\n", go_escape(&sorted(&config).to_string()));
    let annotations = meta::meta_mut(obj)
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(LAST_APPLIED.into(), Value::String(text));
        // Upstream drops the annotation rather than exceed the annotations' limit.
        let size: usize = a
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum();
        if size > TOTAL_ANNOTATION_SIZE_LIMIT {
            a.remove(LAST_APPLIED);
        }
    }
}

/// The total size of an object's annotations (keys and values), as upstream's
/// `ValidateAnnotationsSize`.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// JSON as Go's encoder writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped
/// (they only occur inside strings, so a plain replacement is exact).
pub(crate) fn go_escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

impl FieldManager<'_> {
    /// The fields the last client-side apply set and the live object still has
    /// unchanged; `None` without a usable annotation.
    pub(super) fn allowed_from_last_applied(&self, live: &Value) -> Option<Set> {
        let last: Value = serde_json::from_str(annotation(live)?).ok()?;
        if last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version) {
            return None;
        }
        let typed = self.typed();
        let set = typed.to_field_set(&last, false).ok()?;
        let cmp = typed.compare(&last, live).ok()?;
        Some(
            set.difference(&cmp.modified)
                .difference(&cmp.added)
                .difference(&cmp.removed),
        )
    }
}
