//! JSON values as CEL sees them, following upstream's CEL type model: declared
//! properties under their escaped names (`__namespace__`, `foo__dash__bar`), map
//! entries under their keys, a resource's `metadata` with only `name` and
//! `generateName`, and typed strings — `date`/`date-time` are timestamps,
//! `duration` durations, `byte` bytes. A string that does not parse as its format
//! stays a string (schema validation reports it).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, FixedOffset, NaiveDate};
use kapi_machinery::cel::is_reserved;
use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::Value as Cel;
use serde_json::Value;

use super::Node;

/// The CEL value of string `s` with schema format `format`.
pub(super) fn typed_string(format: &str, s: &str) -> Cel {
    let typed = match format {
        "date-time" | "datetime" => DateTime::parse_from_rfc3339(s).ok().map(Cel::Timestamp),
        "date" => NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .and_then(|t| t.and_local_timezone(FixedOffset::east_opt(0)?).single())
            .map(Cel::Timestamp),
        "duration" => go_duration(s).map(Cel::Duration),
        "byte" => base64_decode(s).map(|b| Cel::Bytes(Arc::new(b))),
        _ => None,
    };
    typed.unwrap_or_else(|| Cel::String(Arc::new(s.to_string())))
}

/// Go's `time.ParseDuration`: `1h30m`, `-1.5s`, `300ms`, `2us`, `0`.
pub(super) fn go_duration(s: &str) -> Option<Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total_ns: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total_ns += n * scale;
    }
    if total_ns > i64::MAX as f64 {
        return None;
    }
    let d = Duration::nanoseconds(total_ns.round() as i64);
    Some(if neg { -d } else { d })
}

/// Standard base64 with padding (Go's `base64.StdEncoding`).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    if !super::formats::base64_std(s) {
        return None;
    }
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            _ => 63,
        }
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|c| **c == b'=').count();
        let n = chunk
            .iter()
            .map(|c| if *c == b'=' { 0 } else { val(*c) })
            .fold(0u32, |acc, x| (acc << 6) | x);
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Upstream's CEL property-name escaping; `None` when the name cannot be exposed.
pub fn escape(name: &str) -> Option<String> {
    if is_reserved(name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c == '_' || c.is_ascii_alphanumeric() => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    let first_ok = out
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok.then_some(out)
}

/// The inverse of [`escape`].
pub fn unescape(name: &str) -> String {
    if let Some(inner) = name.strip_prefix("__").and_then(|n| n.strip_suffix("__")) {
        if is_reserved(inner) {
            return inner.to_string();
        }
    }
    name.replace("__underscores__", "\u{0}")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace('\u{0}', "__")
}

/// JSON → CEL with the schema: declared properties by escaped name, map entries by
/// key; at a resource root only `metadata.name`/`generateName` are visible.
pub(super) fn to_cel(v: &Value, s: Option<&Node>, resource_root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        // A `type: number` field is a double in CEL even when written as `1`.
        Value::Number(n) if s.is_some_and(|s| s.ty == "number") => {
            Cel::Float(n.as_f64().unwrap_or(0.0))
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => match n.as_u64() {
                Some(u) => Cel::UInt(u),
                None => Cel::Float(n.as_f64().unwrap_or(0.0)),
            },
        },
        Value::String(st) => match s.filter(|n| !n.format.is_empty() && !n.x_int_or_string) {
            Some(n) => typed_string(&n.format, st),
            None => Cel::String(Arc::new(st.clone())),
        },
        Value::Array(a) => {
            let item = s.and_then(|s| s.items.as_deref());
            Cel::List(Arc::new(a.iter().map(|x| to_cel(x, item, false)).collect()))
        }
        Value::Object(m) => {
            let mut out = HashMap::new();
            let declared = s.is_some_and(|s| !s.properties.is_empty());
            for (k, x) in m {
                if resource_root && k == "metadata" {
                    out.insert(Key::String(Arc::new(k.clone())), root_meta(x));
                    continue;
                }
                let (name, sub) = match s {
                    Some(s) if s.properties.contains_key(k) => {
                        let Some(e) = escape(k) else { continue };
                        (e, s.properties.get(k))
                    }
                    Some(s) if declared && s.additional_properties.is_none() => match escape(k) {
                        Some(e) => (e, None),
                        None => continue,
                    },
                    Some(s) => (k.clone(), s.additional_schema()),
                    None => (k.clone(), None),
                };
                let embedded = sub.is_some_and(|n| n.x_embedded_resource);
                out.insert(Key::String(Arc::new(name)), to_cel(x, sub, embedded));
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

fn root_meta(v: &Value) -> Cel {
    let mut out = HashMap::new();
    for k in ["name", "generateName"] {
        if let Some(Value::String(s)) = v.get(k) {
            out.insert(
                Key::String(Arc::new(k.to_string())),
                Cel::String(Arc::new(s.clone())),
            );
        }
    }
    Cel::Map(CelMap { map: Arc::new(out) })
}
