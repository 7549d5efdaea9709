//! Field-level validation errors and the name / object-metadata rules every resource shares.
//!
//! This module owns three things:
//! - [`FieldPath`], the path to a field (`spec.containers[0].image`, `metadata.labels[foo]`);
//! - [`FieldError`] / [`ErrorList`], one failed rule each, whose `Display` is byte-for-byte the
//!   upstream `field.Error` text (`metadata.name: Invalid value: "A_b": a lowercase RFC 1123 ...`)
//!   and whose [`ErrorType::as_str`] is the `metav1.StatusCause` type (`FieldValueInvalid`);
//! - name validators (`is_dns1123_subdomain`, `is_qualified_name`, ...) that return upstream's
//!   human-readable messages, plus [`validate_object_meta`] / [`validate_object_meta_update`].
//!
//! Invariants: validators never panic on any input, report every failed rule (not just the
//! first), and match upstream's regexes by hand over ASCII bytes (any non-ASCII byte fails).
//! Lengths are byte lengths, as in Go. Messages follow the upstream release line where
//! `MaxLenError` says "characters" and `TooLong` says "must have at most N bytes".
//!
//! Layout: this file holds paths, errors and aggregation; `validation/names.rs` the name
//! validators and name functions; `validation/meta.rs` the `ObjectMeta` rules.
//!
//! Where to look next: `status.rs` turns an [`ErrorList`] into a 422 `Invalid` status
//! (`ApiError::invalid`); resource strategies call [`validate_object_meta`] with a name rule.

use serde_json::Value;
use std::fmt;
use std::sync::Arc;

mod meta;
mod names;

pub use meta::*;
pub use names::*;

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;

/// Upstream `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// Upstream `TotalAnnotationSizeLimitB` (256 KiB).
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
/// Upstream `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;

// ---------------------------------------------------------------------------------------------
// FieldPath

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Name(String),
    Subscript(String),
}

/// Path from an object's root to one field. Cheap to clone; builders return
/// new paths that share their parent's segments (a validation builds a path
/// for every field it looks at, and needs its text only for an error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath {
    last: Option<Arc<Link>>,
}

/// One segment of a [`FieldPath`] and the path before it.
#[derive(Debug, PartialEq, Eq)]
struct Link {
    parent: Option<Arc<Link>>,
    segment: Segment,
}

impl FieldPath {
    /// A root path (`FieldPath::new("metadata")`).
    pub fn new(name: &str) -> Self {
        FieldPath::default().child(name)
    }

    /// `self.name`
    pub fn child(&self, name: &str) -> Self {
        self.push(Segment::Name(name.to_string()))
    }

    /// `self[index]`
    pub fn index(&self, index: usize) -> Self {
        self.push(Segment::Subscript(index.to_string()))
    }

    /// `self[key]` (keys are not quoted, as upstream).
    pub fn key(&self, key: &str) -> Self {
        self.push(Segment::Subscript(key.to_string()))
    }

    fn push(&self, segment: Segment) -> Self {
        FieldPath {
            last: Some(Arc::new(Link {
                parent: self.last.clone(),
                segment,
            })),
        }
    }

    /// The segments from the root.
    fn segments(&self) -> Vec<&Segment> {
        let mut out = Vec::new();
        let mut at = self.last.as_deref();
        while let Some(link) = at {
            out.push(&link.segment);
            at = link.parent.as_deref();
        }
        out.reverse();
        out
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments().into_iter().enumerate() {
            match segment {
                Segment::Name(n) if i > 0 && !n.is_empty() => write!(f, ".{n}")?,
                Segment::Name(n) => f.write_str(n)?,
                Segment::Subscript(s) => write!(f, "[{s}]")?,
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// FieldError

/// Upstream `field.ErrorType`; [`ErrorType::as_str`] is the `StatusCause` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl ErrorType {
    /// Machine-readable cause type (`FieldValueRequired`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// Human-readable prefix (`Required value`, `Invalid value`, ...).
    pub fn message(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// One failed validation rule on one field. `bad_value: None` means "omit the value".
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    pub bad_value: Option<Value>,
    pub detail: String,
}

/// Upstream `field.ErrorList`.
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn new(kind: ErrorType, path: &FieldPath, bad_value: Option<Value>, detail: String) -> Self {
        FieldError {
            kind,
            field: path.to_string(),
            bad_value,
            detail,
        }
    }

    pub fn required(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, None, detail.into())
    }

    pub fn invalid(path: &FieldPath, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, Some(value.into()), detail.into())
    }

    pub fn type_invalid(
        path: &FieldPath,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            ErrorType::TypeInvalid,
            path,
            Some(value.into()),
            detail.into(),
        )
    }

    /// Detail lists the valid values quoted: `supported values: "a", "b"`.
    pub fn not_supported(path: &FieldPath, value: impl Into<Value>, valid_values: &[&str]) -> Self {
        let detail = if valid_values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid_values.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, Some(value.into()), detail)
    }

    pub fn forbidden(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, None, detail.into())
    }

    pub fn duplicate(path: &FieldPath, value: impl Into<Value>) -> Self {
        Self::new(
            ErrorType::Duplicate,
            path,
            Some(value.into()),
            String::new(),
        )
    }

    pub fn not_found(path: &FieldPath, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::NotFound, path, Some(value.into()), String::new())
    }

    /// The value is kept for callers but never printed.
    pub fn too_long(path: &FieldPath, value: impl Into<Value>, max_bytes: usize) -> Self {
        let detail = format!("must have at most {max_bytes} bytes");
        Self::new(ErrorType::TooLong, path, Some(value.into()), detail)
    }

    /// `actual`/`max` of `None` mean unknown (upstream passes -1).
    pub fn too_many(path: &FieldPath, actual: Option<usize>, max: Option<usize>) -> Self {
        let detail = match max {
            Some(m) => format!("must have at most {m} items"),
            None => "has too many items".to_string(),
        };
        Self::new(ErrorType::TooMany, path, actual.map(Value::from), detail)
    }

    pub fn internal(path: &FieldPath, err: impl fmt::Display) -> Self {
        Self::new(ErrorType::Internal, path, None, err.to_string())
    }

    /// The message without the field name (upstream `ErrorBody`); used as a cause message.
    pub fn error_body(&self) -> String {
        let mut s = self.kind.message().to_string();
        let omits_value = matches!(
            self.kind,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        );
        if let Some(value) = self.bad_value.as_ref().filter(|_| !omits_value) {
            s.push_str(": ");
            s.push_str(&format_bad_value(value));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_body())
    }
}

impl std::error::Error for FieldError {}

/// Render a bad value the way Go's `%q` / `%v` / `%#v` would for the equivalent Go value.
pub(crate) fn format_bad_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let quoted: Vec<String> = items
                .iter()
                .map(|v| go_quote(v.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
        _ => value.to_string(),
    }
}

/// Go `strconv.Quote`: double-quoted with Go escapes; printable Unicode stays literal.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => match c as u32 {
                n if n <= 0xffff => out.push_str(&format!("\\u{n:04x}")),
                n => out.push_str(&format!("\\U{n:08x}")),
            },
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Upstream aggregate formatting: messages de-duplicated; one shown as-is, several as `[a, b]`.
/// Returns `None` for an empty list.
pub fn aggregate_messages(messages: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for m in messages {
        if !seen.contains(&m.as_str()) {
            seen.push(m);
        }
    }
    match seen.len() {
        0 => None,
        1 => Some(seen[0].to_string()),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// `ErrorList.ToAggregate().Error()`; `None` when the list is empty.
pub fn aggregate(errs: &[FieldError]) -> Option<String> {
    let messages: Vec<String> = errs.iter().map(ToString::to_string).collect();
    aggregate_messages(&messages)
}
