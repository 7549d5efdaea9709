//! OpenAPI value validation of custom objects, as kube-openapi's `SchemaValidator`
//! run by the apiextensions server, with its messages and its mapping to field errors
//! (`kubeOpenAPIResultToFieldErrors`).
//!
//! Paths are kube-openapi's strings: `spec.items[0].name` for array items and
//! `spec.labels.key` for map entries (a dot, not a subscript); the root is the empty
//! name. Per node the validators run in kube-openapi's order (type, junctors, string,
//! format, number, array, enum, object) and each reports on its own; an object that
//! fails min/maxProperties is not looked into further, and a string reports only its
//! first failed check (length, then pattern), as upstream.
//!
//! Errors without a field (the junctor summaries) carry the path `<nil>`, which is what
//! upstream prints for them.

use kapi_machinery::validation::{ErrorType, FieldError, FieldPath};
use serde_json::Value;

use super::{canon, formats, Additional, Node};

/// Validate `obj` (the whole object) against `root`.
pub(super) fn validate(root: &Node, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut out = Outcome::default();
    node(root, "", obj, old, &mut out);
    out.errs
}

/// Errors plus kube-openapi's match count (used to pick the best failed alternative).
#[derive(Default)]
struct Outcome {
    errs: Vec<FieldError>,
    matches: usize,
}

fn path_of(name: &str) -> FieldPath {
    let trimmed = name.strip_prefix('.').unwrap_or(name);
    if trimmed.is_empty() {
        // Upstream's root path is nil, printed `<nil>`.
        FieldPath::new("<nil>")
    } else {
        FieldPath::new(trimmed)
    }
}

/// `name in body` (kube-openapi's `%s in %s`).
fn subject(name: &str) -> String {
    format!("{name} in body")
}

fn invalid(name: &str, value: Value, msg: String) -> FieldError {
    FieldError::invalid(&path_of(name), value, msg)
}

fn type_invalid(name: &str, value: Value, msg: String) -> FieldError {
    FieldError::type_invalid(&path_of(name), value, msg)
}

/// A field-less error (upstream's `field.Invalid(nil, "", msg)`).
fn nil_path(msg: String) -> FieldError {
    FieldError::invalid(&FieldPath::new("<nil>"), "", msg)
}

/// The JSON type name kube-openapi infers for a value.
pub(super) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` for a float64: the shortest digits, in exponent form when the exponent
/// is below -4 or at least 6 (`1e+06`, `1.5`, `0.0001`).
pub(super) fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        go_exp(mant, exp)
    } else {
        format!("{f}")
    }
}

fn go_exp(mant: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

fn types_of(n: &Node) -> Vec<&str> {
    if n.x_int_or_string {
        vec!["integer", "string"]
    } else if n.ty.is_empty() {
        Vec::new()
    } else {
        vec![n.ty.as_str()]
    }
}

/// Validate `v` at `name`. With `old` (the correlated old value on update), an
/// unchanged value is not validated at all: upstream's validation ratcheting lets
/// objects keep values a newer schema would reject, as long as they do not change.
fn node(n: &Node, name: &str, v: &Value, old: Option<&Value>, out: &mut Outcome) {
    if old.is_some_and(|o| json_equal(o, v)) {
        out.matches += 1;
        return;
    }
    if v.is_null() {
        type_check(n, name, v, out);
        enum_check(n, name, v, out);
        return;
    }
    let before = out.errs.len();
    type_check(n, name, v, out);
    junctors(n, name, v, out);
    match v {
        Value::String(s) => {
            string_checks(n, name, s, out);
            if !formats::is_valid(&n.format, s) {
                let m = format!(
                    "{} must be of type {}: {}",
                    subject(name),
                    n.format,
                    quote(s)
                );
                out.errs
                    .push(type_invalid(name, Value::String(s.clone()), m));
            }
        }
        Value::Number(_) => number_checks(n, name, v, out),
        Value::Array(items) => array_checks(n, name, items, old, out),
        _ => {}
    }
    enum_check(n, name, v, out);
    if let Value::Object(m) = v {
        object_checks(n, name, m, old, out);
    }
    if out.errs.len() == before {
        out.matches += 1;
    }
}

fn quote(s: &str) -> String {
    kapi_machinery::validation::go_quote(s)
}

fn type_check(n: &Node, name: &str, v: &Value, out: &mut Outcome) {
    let types = types_of(n);
    if types.is_empty() && n.format.is_empty() {
        return;
    }
    let joined = types.join(",");
    if v.is_null() {
        if !types.is_empty() && !n.nullable {
            let m = format!("{} must be of type {joined}: \"null\"", subject(name));
            out.errs.push(type_invalid(name, Value::from("null"), m));
        }
        return;
    }
    let actual = json_type(v);
    let contains = |t: &str| types.contains(&t);
    let is_float_int = actual == "number"
        && v.as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15)
        && contains("integer");
    let is_int_float = actual == "integer" && contains("number");
    let string_like = matches!(v, Value::String(_) | Value::Array(_));
    if !(contains("number") || contains("integer") || n.format.is_empty()) && string_like {
        return;
    }
    if types.is_empty() {
        return;
    }
    if !(contains(actual) || is_float_int || is_int_float) {
        let m = format!(
            "{} must be of type {joined}: {}",
            subject(name),
            quote(actual)
        );
        out.errs.push(type_invalid(name, Value::from(actual), m));
    } else {
        out.matches += 1;
    }
}

fn string_checks(n: &Node, name: &str, s: &str, out: &mut Outcome) {
    let len = s.chars().count() as i64;
    if let Some(max) = n.max_length.filter(|m| len > *m) {
        // Upstream maps kube-openapi's TooLong to `field.TooLongMaxLength`.
        out.errs.push(FieldError {
            kind: ErrorType::TooLong,
            field: path_of(name).to_string(),
            bad_value: Some(Value::from(s)),
            detail: format!("may not be longer than {max}"),
        });
        return;
    }
    if let Some(min) = n.min_length.filter(|m| len < *m) {
        let m = format!("{} should be at least {min} chars long", subject(name));
        out.errs.push(invalid(name, Value::from(s), m));
        return;
    }
    if let (Some(p), Some(re)) = (&n.pattern, &n.pattern_re) {
        if !re.0.is_match(s) {
            let m = format!("{} should match '{p}'", subject(name));
            out.errs.push(invalid(name, Value::from(s), m));
        }
    }
}

fn number_checks(n: &Node, name: &str, v: &Value, out: &mut Outcome) {
    let as_int = v
        .as_i64()
        .filter(|_| !v.as_number().is_some_and(|x| x.is_f64()));
    let f = v.as_f64().unwrap_or(0.0);
    if let Some(factor) = n.multiple_of.filter(|f| *f < 0.0) {
        // kube-openapi reports the factor as the int64 or float64 it compared with.
        let (shown, value) = match as_int {
            Some(_) if factor.fract() == 0.0 => {
                (format!("{}", factor as i64), Value::from(factor as i64))
            }
            _ => (go_float(factor), Value::from(factor)),
        };
        let m = format!("factor MultipleOf declared for {name} must be positive: {shown}");
        out.errs.push(invalid(name, value, m));
    } else if let Some(factor) = n.multiple_of {
        let bad = match as_int {
            Some(i) if factor >= 1.0 || factor.fract() == 0.0 => {
                let fi = factor as i64;
                fi != 0 && i.checked_rem(fi).is_some_and(|r| r != 0)
            }
            _ if factor > 0.0 => {
                let mult = if factor < 1.0 {
                    1.0 / factor * f
                } else {
                    f / factor
                };
                mult.fract() != 0.0
            }
            _ => false,
        };
        if bad {
            let shown = match as_int {
                Some(_) if factor.fract() == 0.0 => format!("{}", factor as i64),
                _ => go_float(factor),
            };
            let m = format!("{} should be a multiple of {shown}", subject(name));
            out.errs.push(invalid(name, v.clone(), m));
        }
    }
    if let Some(max) = n.maximum {
        let excl = n.exclusive_maximum;
        let (bad, shown) = match as_int {
            Some(i) => {
                let m = max as i64;
                ((!excl && i > m) || (excl && i >= m), m.to_string())
            }
            None => ((!excl && f > max) || (excl && f >= max), go_float(max)),
        };
        if bad {
            let rel = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            let m = format!("{} should be {rel} {shown}", subject(name));
            out.errs.push(invalid(name, v.clone(), m));
        }
    }
    if let Some(min) = n.minimum {
        let excl = n.exclusive_minimum;
        let (bad, shown) = match as_int {
            Some(i) => {
                let m = min as i64;
                ((!excl && i < m) || (excl && i <= m), m.to_string())
            }
            None => ((!excl && f < min) || (excl && f <= min), go_float(min)),
        };
        if bad {
            let rel = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let m = format!("{} should be {rel} {shown}", subject(name));
            out.errs.push(invalid(name, v.clone(), m));
        }
    }
}

fn array_checks(n: &Node, name: &str, items: &[Value], old: Option<&Value>, out: &mut Outcome) {
    if let Some(item_schema) = &n.items {
        // Ratcheting correlates items of map lists by key and of sets by value.
        let olds = canon::old_items(n, old, true);
        for (i, item) in items.iter().enumerate() {
            let o = olds
                .as_ref()
                .and_then(|m| m.get(&canon::item_key(n, item)).copied());
            node(item_schema, &format!("{name}[{i}]"), item, o, out);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = n.min_items.filter(|m| size < *m) {
        let m = format!("{} should have at least {min} items", subject(name));
        out.errs.push(invalid(name, Value::from(size), m));
    }
    if let Some(max) = n.max_items.filter(|m| size > *m) {
        let max = usize::try_from(max).ok();
        out.errs
            .push(FieldError::too_many(&path_of(name), Some(items.len()), max));
    }
    if n.unique_items && has_duplicates(items) {
        let m = format!("{} shouldn't contain duplicates", subject(name));
        out.errs.push(invalid(name, Value::from(""), m));
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    !items.iter().all(|x| seen.insert(canon::canonical(x)))
}

/// Deep equality with numbers compared by value (`1` equals `1.0`).
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn enum_check(n: &Node, name: &str, v: &Value, out: &mut Outcome) {
    let Some(values) = n.enum_values.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    if values.iter().any(|e| json_equal(e, v)) {
        return;
    }
    let shown: Vec<String> = values
        .iter()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let refs: Vec<&str> = shown.iter().map(String::as_str).collect();
    out.errs
        .push(FieldError::not_supported(&path_of(name), v.clone(), &refs));
}

fn object_checks(
    n: &Node,
    name: &str,
    m: &serde_json::Map<String, Value>,
    old: Option<&Value>,
    out: &mut Outcome,
) {
    let num = m.len() as i64;
    if let Some(min) = n.min_properties.filter(|x| num < *x) {
        let msg = format!("{} should have at least {min} properties", subject(name));
        out.errs.push(invalid(name, Value::from(num), msg));
        return;
    }
    if let Some(max) = n.max_properties.filter(|x| num > *x) {
        let max = usize::try_from(max).ok();
        out.errs
            .push(FieldError::too_many(&path_of(name), Some(m.len()), max));
        return;
    }
    match &n.additional_properties {
        Some(Additional::Bool(false)) => {
            for k in m.keys().filter(|k| !n.properties.contains_key(*k)) {
                let msg = format!("{name}.{k} in body is a forbidden property");
                out.errs.push(invalid(name, Value::from(k.as_str()), msg));
            }
        }
        Some(Additional::Schema(s)) => {
            for (k, v) in m.iter().filter(|(k, _)| !n.properties.contains_key(*k)) {
                let o = old.and_then(|o| o.get(k));
                node(s, &format!("{name}.{k}"), v, o, out);
            }
        }
        _ => {}
    }
    for (k, s) in &n.properties {
        if let Some(v) = m.get(k) {
            let child = if name.is_empty() {
                k.clone()
            } else {
                format!("{name}.{k}")
            };
            node(s, &child, v, old.and_then(|o| o.get(k)), out);
        }
    }
    for k in n.required.iter().filter(|k| !m.contains_key(*k)) {
        out.errs
            .push(FieldError::required(&path_of(&format!("{name}.{k}")), ""));
    }
}

fn run(n: &Node, name: &str, v: &Value) -> Outcome {
    let mut o = Outcome::default();
    node(n, name, v, None, &mut o);
    o
}

fn junctors(n: &Node, name: &str, v: &Value, out: &mut Outcome) {
    if n.any_of.is_empty() && n.one_of.is_empty() && n.all_of.is_empty() && n.not.is_none() {
        return;
    }
    let shown = quote(name);
    if !n.any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut ok = false;
        for s in &n.any_of {
            let r = run(s, name, v);
            if r.errs.is_empty() {
                ok = true;
                best = None;
                break;
            }
            if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if !ok {
            out.errs.push(nil_path(format!(
                "{shown} must validate at least one schema (anyOf)"
            )));
        }
        if let Some(b) = best {
            out.errs.extend(b.errs);
        }
    }
    if !n.one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut valid = 0;
        for s in &n.one_of {
            let r = run(s, name, v);
            if r.errs.is_empty() {
                valid += 1;
                best = None;
                continue;
            }
            if valid == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if valid != 1 {
            let extra = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.errs.push(nil_path(format!(
                "{shown} must validate one and only one schema (oneOf). {extra}"
            )));
            if let Some(b) = best {
                out.errs.extend(b.errs);
            }
        }
    }
    if !n.all_of.is_empty() {
        let mut valid = 0;
        for s in &n.all_of {
            let r = run(s, name, v);
            if r.errs.is_empty() {
                valid += 1;
            }
            out.errs.extend(r.errs);
        }
        if valid != n.all_of.len() {
            let extra = if valid == 0 { ". None validated" } else { "" };
            out.errs.push(nil_path(format!(
                "{shown} must validate all the schemas (allOf){extra}"
            )));
        }
    }
    if let Some(not) = &n.not {
        if run(not, name, v).errs.is_empty() {
            out.errs.push(nil_path(format!(
                "{shown} must not validate the schema (not)"
            )));
        }
    }
}
