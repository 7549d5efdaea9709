//! The swagger 2.0 document in gnostic's protobuf form (`openapi.v2.Document`
//! of `github.com/google/gnostic/openapiv2/OpenAPIv2.proto`), which kubectl up
//! to 1.2x asks `/openapi/v2` for first (`Accept:
//! application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and decodes for
//! client-side validation, `explain` and its `fieldValidation` check.
//!
//! What this module owns: a hand-written encoder from the JSON document
//! (`kapi_resources::openapi`) to protobuf wire format, message by message, with
//! gnostic's field numbers. Upstream (`kube-openapi` `ToProtoBinary`) parses the
//! JSON with gnostic and marshals it; we walk the JSON the same way.
//!
//! Invariants: keys keep the JSON document's order (gnostic's named lists are
//! ordered); `x-*` keys become `NamedAny` vendor extensions whose `Any.yaml`
//! holds the value as JSON text (JSON is YAML, which is how kubectl reads them);
//! proto3 defaults (empty strings, `false`, `0`) are not written, except for
//! `oneof` members and sub-messages, which are written whenever present.
//! Unknown keys are ignored. Where to look next: `openapi.rs` (serving and
//! caching), gnostic's `OpenAPIv2.proto` (the field numbers).

use serde_json::{Map, Value};

/// One message being written in protobuf wire format.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// A bool, written even when false (for `oneof` members).
    fn bool_always(&mut self, field: u32, b: bool) {
        self.key(field, 0);
        self.varint(u64::from(b));
    }

    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.bool_always(field, b);
        }
    }

    fn int64(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }

    fn double(&mut self, field: u32, v: f64) {
        if v != 0.0 {
            self.key(field, 1);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// How a JSON keyword is written.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bool,
    Int,
    Double,
    /// An `Any` (its `yaml`).
    Any,
    /// A repeated `Any`, from a JSON array.
    AnyList,
    /// A repeated string, from a JSON array.
    StrList,
}

use Kind::*;

/// A JSON keyword, its field number, and how it is written.
type Field = (&'static str, u32, Kind);

/// Writes the keywords of `table` found in `obj`, field numbers shifted by
/// `offset` (the parameter messages repeat `PrimitivesItems` at an offset).
fn scalars(m: &mut Msg, obj: &Map<String, Value>, table: &[Field], offset: u32) {
    for &(name, field, kind) in table {
        let Some(v) = obj.get(name) else { continue };
        let field = field + offset;
        match kind {
            Str => m.string(field, v.as_str().unwrap_or_default()),
            Bool => m.bool(field, v.as_bool().unwrap_or_default()),
            Int => m.int64(field, v.as_i64().unwrap_or_default()),
            Double => m.double(field, v.as_f64().unwrap_or_default()),
            Any => m.message(field, any(v)),
            AnyList => each(v, |item| m.message(field, any(item))),
            StrList => each(v, |item| m.string(field, item.as_str().unwrap_or_default())),
        }
    }
}

/// Calls `f` on each element of an array (or on a lone value).
fn each<'a>(v: &'a Value, mut f: impl FnMut(&'a Value)) {
    match v {
        Value::Array(items) => items.iter().for_each(f),
        other => f(other),
    }
}

/// `Any`: the value as YAML text (field 2); JSON text is YAML.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    let mut text = v.to_string();
    text.push('\n');
    m.string(2, &text);
    m
}

/// The `x-*` keys of `obj` as repeated `NamedAny` at `field`.
fn extensions(m: &mut Msg, obj: &Map<String, Value>, field: u32) {
    for (name, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.message(field, named(name, any(v)));
    }
}

/// A `Named*` pair: name (1), value (2).
fn named(name: &str, value: Msg) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, value);
    m
}

/// A map of named values (`Definitions`, `Properties`, ...): each non-`x-` key
/// of `v` as a `Named*` at `field`, its value encoded by `f`.
fn named_map(v: &Value, field: u32, f: fn(&Value) -> Msg) -> Msg {
    let mut m = Msg::default();
    if let Some(obj) = v.as_object() {
        for (name, item) in obj.iter().filter(|(k, _)| !k.starts_with("x-")) {
            m.message(field, named(name, f(item)));
        }
    }
    m
}

/// A message of scalar keywords (`table`) and extensions (at `ext`).
fn simple(obj: &Map<String, Value>, table: &[Field], ext: u32) -> Msg {
    let mut m = Msg::default();
    scalars(&mut m, obj, table, 0);
    extensions(&mut m, obj, ext);
    m
}

/// `v` as an object; non-objects read as empty.
fn object(v: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    v.as_object().unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

const SCHEMA: &[Field] = &[
    ("$ref", 1, Str),
    ("format", 2, Str),
    ("title", 3, Str),
    ("description", 4, Str),
    ("default", 5, Any),
    ("multipleOf", 6, Double),
    ("maximum", 7, Double),
    ("exclusiveMaximum", 8, Bool),
    ("minimum", 9, Double),
    ("exclusiveMinimum", 10, Bool),
    ("maxLength", 11, Int),
    ("minLength", 12, Int),
    ("pattern", 13, Str),
    ("maxItems", 14, Int),
    ("minItems", 15, Int),
    ("uniqueItems", 16, Bool),
    ("maxProperties", 17, Int),
    ("minProperties", 18, Int),
    ("required", 19, StrList),
    ("enum", 20, AnyList),
    ("discriminator", 26, Str),
    ("readOnly", 27, Bool),
    ("example", 30, Any),
];

/// `Schema`.
fn schema(v: &Value) -> Msg {
    let obj = object(v);
    let mut m = Msg::default();
    scalars(&mut m, obj, SCHEMA, 0);
    match obj.get("additionalProperties") {
        // AdditionalPropertiesItem: schema (1) or boolean (2), a oneof.
        Some(Value::Bool(b)) => {
            let mut item = Msg::default();
            item.bool_always(2, *b);
            m.message(21, item);
        }
        Some(s @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(s));
            m.message(21, item);
        }
        _ => {}
    }
    if let Some(t) = obj.get("type") {
        // TypeItem: repeated string value (1).
        let mut item = Msg::default();
        each(t, |s| item.string(1, s.as_str().unwrap_or_default()));
        m.message(22, item);
    }
    if let Some(items) = obj.get("items") {
        // ItemsItem: repeated Schema schema (1).
        let mut item = Msg::default();
        each(items, |s| item.message(1, schema(s)));
        m.message(23, item);
    }
    if let Some(all_of) = obj.get("allOf") {
        each(all_of, |s| m.message(24, schema(s)));
    }
    if let Some(props) = obj.get("properties") {
        m.message(25, named_map(props, 1, schema));
    }
    extensions(&mut m, obj, 31);
    m
}

/// `PrimitivesItems`' fields; the non-body parameters carry them shifted.
const PRIMITIVE: &[Field] = &[
    ("type", 1, Str),
    ("format", 2, Str),
    ("collectionFormat", 4, Str),
    ("default", 5, Any),
    ("maximum", 6, Double),
    ("exclusiveMaximum", 7, Bool),
    ("minimum", 8, Double),
    ("exclusiveMinimum", 9, Bool),
    ("maxLength", 10, Int),
    ("minLength", 11, Int),
    ("pattern", 12, Str),
    ("maxItems", 13, Int),
    ("minItems", 14, Int),
    ("uniqueItems", 15, Bool),
    ("enum", 16, AnyList),
    ("multipleOf", 17, Double),
];

/// The `PrimitivesItems` fields of `obj` (items at 3, extensions at 18), shifted
/// by `offset`.
fn primitive(m: &mut Msg, obj: &Map<String, Value>, offset: u32) {
    scalars(m, obj, PRIMITIVE, offset);
    if let Some(items) = obj.get("items") {
        let mut item = Msg::default();
        primitive(&mut item, object(items), 0);
        m.message(3 + offset, item);
    }
    extensions(m, obj, 18 + offset);
}

/// `Parameter`: a `BodyParameter` (1) or a `NonBodyParameter` (2) holding the
/// sub-schema of its location.
fn parameter(v: &Value) -> Msg {
    let obj = object(v);
    let location = obj.get("in").and_then(Value::as_str).unwrap_or_default();
    let mut m = Msg::default();
    if location == "body" {
        const BODY: &[Field] = &[("description", 1, Str), ("name", 2, Str), ("in", 3, Str)];
        let mut body = simple(obj, BODY, 6);
        scalars(&mut body, obj, &[("required", 4, Bool)], 0);
        if let Some(s) = obj.get("schema") {
            body.message(5, schema(s));
        }
        m.message(1, body);
        return m;
    }
    let mut sub = Msg::default();
    let head: &[Field] = &[
        ("required", 1, Bool),
        ("in", 2, Str),
        ("description", 3, Str),
        ("name", 4, Str),
    ];
    scalars(&mut sub, obj, head, 0);
    // Query and formData have allowEmptyValue (5) before the primitive fields.
    let (oneof_field, offset) = match location {
        "header" => (1, 4),
        "formData" => (2, 5),
        "path" => (4, 4),
        _ => (3, 5),
    };
    if offset == 5 {
        scalars(&mut sub, obj, &[("allowEmptyValue", 5, Bool)], 0);
    }
    primitive(&mut sub, obj, offset);
    let mut non_body = Msg::default();
    non_body.message(oneof_field, sub);
    m.message(2, non_body);
    m
}

/// `JsonReference`: `$ref` (1), description (2).
fn json_reference(obj: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    scalars(&mut m, obj, &[("$ref", 1, Str), ("description", 2, Str)], 0);
    m
}

/// `ParametersItem`: a parameter (1) or a reference (2).
fn parameters_item(v: &Value) -> Msg {
    let obj = object(v);
    let mut m = Msg::default();
    if obj.contains_key("$ref") {
        m.message(2, json_reference(obj));
    } else {
        m.message(1, parameter(v));
    }
    m
}

/// `Response`: description (1), schema (2, a `SchemaItem` holding a schema),
/// extensions (5).
fn response(v: &Value) -> Msg {
    let obj = object(v);
    let mut m = Msg::default();
    scalars(&mut m, obj, &[("description", 1, Str)], 0);
    if let Some(s) = obj.get("schema") {
        let mut item = Msg::default();
        item.message(1, schema(s));
        m.message(2, item);
    }
    extensions(&mut m, obj, 5);
    m
}

/// `Responses`: each status code as a `NamedResponseValue` (1) holding a
/// response (1) or a reference (2); extensions (2).
fn responses(v: &Value) -> Msg {
    let obj = object(v);
    let mut m = Msg::default();
    for (code, r) in obj.iter().filter(|(k, _)| !k.starts_with("x-")) {
        let mut value = Msg::default();
        match r.as_object() {
            Some(ro) if ro.contains_key("$ref") => value.message(2, json_reference(ro)),
            _ => value.message(1, response(r)),
        }
        m.message(1, named(code, value));
    }
    extensions(&mut m, obj, 2);
    m
}

const OPERATION: &[Field] = &[
    ("tags", 1, StrList),
    ("summary", 2, Str),
    ("description", 3, Str),
    ("operationId", 5, Str),
    ("produces", 6, StrList),
    ("consumes", 7, StrList),
    ("schemes", 10, StrList),
    ("deprecated", 11, Bool),
];

/// `Operation`.
fn operation(v: &Value) -> Msg {
    let obj = object(v);
    let mut m = Msg::default();
    scalars(&mut m, obj, OPERATION, 0);
    if let Some(params) = obj.get("parameters") {
        each(params, |p| m.message(8, parameters_item(p)));
    }
    if let Some(r) = obj.get("responses") {
        m.message(9, responses(r));
    }
    if let Some(sec) = obj.get("security") {
        each(sec, |s| m.message(12, security_requirement(s)));
    }
    extensions(&mut m, obj, 13);
    m
}

/// `PathItem`: `$ref` (1), the operations (2..=8), parameters (9), extensions (10).
fn path_item(v: &Value) -> Msg {
    const METHODS: [(&str, u32); 7] = [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ];
    let obj = object(v);
    let mut m = Msg::default();
    scalars(&mut m, obj, &[("$ref", 1, Str)], 0);
    for (method, field) in METHODS {
        if let Some(op) = obj.get(method) {
            m.message(field, operation(op));
        }
    }
    if let Some(params) = obj.get("parameters") {
        each(params, |p| m.message(9, parameters_item(p)));
    }
    extensions(&mut m, obj, 10);
    m
}

/// `Paths`: extensions (1), each path as a `NamedPathItem` (2).
fn paths(v: &Value) -> Msg {
    let mut m = Msg::default();
    extensions(&mut m, object(v), 1);
    m.0.extend(named_map(v, 2, path_item).0);
    m
}

/// `SecurityRequirement`: each scheme as a `NamedStringArray` (1) whose
/// `StringArray` holds the scopes (1).
fn security_requirement(v: &Value) -> Msg {
    named_map(v, 1, |scopes| {
        let mut m = Msg::default();
        each(scopes, |s| m.string(1, s.as_str().unwrap_or_default()));
        m
    })
}

/// `SecurityDefinitionsItem`: basic (1) or apiKey (2); OAuth2 schemes are left
/// out (kapi declares none).
fn security_definition(v: &Value) -> Msg {
    const BASIC: &[Field] = &[("type", 1, Str), ("description", 2, Str)];
    const API_KEY: &[Field] = &[("type", 1, Str), ("name", 2, Str), ("in", 3, Str)];
    let obj = object(v);
    let mut m = Msg::default();
    match obj.get("type").and_then(Value::as_str) {
        Some("basic") => m.message(1, simple(obj, BASIC, 3)),
        Some("apiKey") => {
            let mut sub = simple(obj, API_KEY, 5);
            scalars(&mut sub, obj, &[("description", 4, Str)], 0);
            m.message(2, sub);
        }
        _ => {}
    }
    m
}

/// `Info` (title, version, description, termsOfService, extensions).
fn info(v: &Value) -> Msg {
    const INFO: &[Field] = &[
        ("title", 1, Str),
        ("version", 2, Str),
        ("description", 3, Str),
    ];
    let mut m = simple(object(v), INFO, 7);
    scalars(&mut m, object(v), &[("termsOfService", 4, Str)], 0);
    m
}

/// Encodes a swagger 2.0 document as gnostic's `openapi.v2.Document`.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let obj = object(doc);
    let mut m = Msg::default();
    let table = [
        ("swagger", 1, Str),
        ("host", 3, Str),
        ("basePath", 4, Str),
        ("schemes", 5, StrList),
        ("consumes", 6, StrList),
        ("produces", 7, StrList),
    ];
    scalars(&mut m, obj, &table, 0);
    let mut sub = |key: &str, field: u32, f: &dyn Fn(&Value) -> Msg| {
        if let Some(v) = obj.get(key) {
            m.message(field, f(v));
        }
    };
    sub("info", 2, &info);
    sub("paths", 8, &paths);
    sub("definitions", 9, &|v| named_map(v, 1, schema));
    sub("parameters", 10, &|v| named_map(v, 1, parameter));
    sub("responses", 11, &|v| named_map(v, 1, response));
    sub("securityDefinitions", 13, &|v| {
        named_map(v, 1, security_definition)
    });
    if let Some(sec) = obj.get("security") {
        each(sec, |s| m.message(12, security_requirement(s)));
    }
    extensions(&mut m, obj, 16);
    m.0
}

#[cfg(test)]
mod tests;
