//! What upstream's Go types make of a value of the wrong JSON type: a built-in
//! object is decoded into Go structs, so a string where an `int32` goes, or an
//! object where a list goes, is refused by the decoder before anything else
//! looks at the object. [`type_mismatch`] finds the first such value (in
//! document order, as Go's decoder meets it) by the built-in OpenAPI
//! definitions, and words it as the two decoders upstream uses do:
//! `encoding/json` for request bodies, JSON and merge patches
//! ([`Mismatch::json`]: `json: cannot unmarshal string into Go struct field
//! DeploymentSpec.spec.replicas of type int32`), and the unstructured
//! converter for strategic merge patches ([`Mismatch::unstructured`]: `cannot
//! restore map from string`).
//!
//! Types with their own decoding are upstream's: `IntOrString` takes strings
//! and numbers (else an `int32` error), `Quantity` strings and numbers (else
//! its regular-expression error), `Time` and `MicroTime` strings that Go's
//! `time.Parse` reads in their layouts (else its `ParseError`, unwrapped);
//! `RawExtension` and other free-form types take anything.

use kapi_machinery::member::Members;
use serde_json::{Map, Value};

use crate::openapi::defs::{definition, INT_OR_STRING, QUANTITY};

/// The first value of the wrong type, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// How Go's JSON decoder names what it found (`string`, `number 1.5`).
    found_json: String,
    /// How the unstructured converter names it (`string`, `int64`, `slice`).
    found_kind: &'static str,
    /// The Go struct holding the field, and the field's JSON path.
    struct_name: String,
    path: String,
    /// The Go type of the field (or of its elements).
    go_type: String,
    shape: Shape,
    /// For [`Shape::Time`]: `time.Parse`'s error.
    parse_error: String,
}

/// What the field is, for the unstructured converter's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Struct,
    Map,
    Slice,
    Str,
    Scalar,
    Quantity,
    /// A `Time` or `MicroTime` string `time.Parse` refuses.
    Time,
}

const QUANTITY_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Mismatch {
    /// Go `encoding/json`'s words.
    pub fn json(&self) -> String {
        match self.shape {
            Shape::Quantity => return QUANTITY_ERROR.to_owned(),
            Shape::Time => return self.parse_error.clone(),
            _ => {}
        }
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
            self.found_json, self.struct_name, self.path, self.go_type
        )
    }

    /// The unstructured converter's words.
    pub fn unstructured(&self) -> String {
        let kind = self.found_kind;
        match self.shape {
            Shape::Struct => format!("cannot restore struct from: {kind}"),
            Shape::Map => format!("cannot restore map from {kind}"),
            Shape::Slice => format!("cannot restore slice from {kind}"),
            Shape::Str => format!("cannot convert {kind} to string"),
            Shape::Scalar => format!("unrecognized type: {}", self.go_type),
            Shape::Quantity => QUANTITY_ERROR.to_owned(),
            Shape::Time => self.parse_error.clone(),
        }
    }
}

/// The first value of `obj` (an object of definition `def_name`) that its
/// Go type cannot hold.
pub fn type_mismatch(def_name: &str, obj: &Value) -> Option<Mismatch> {
    let obj = obj.as_object()?;
    Walker.walk_struct(def_name, obj, &Path::Root)
}

struct Walker;

fn short(def_name: &str) -> &str {
    def_name.rsplit('.').next().unwrap_or(def_name)
}

/// `v1.PodTemplateSpec` for `io.k8s.api.core.v1.PodTemplateSpec`.
fn qualified(def_name: &str) -> String {
    let mut parts = def_name.rsplit('.');
    let name = parts.next().unwrap_or(def_name);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{name}"),
        None => name.to_owned(),
    }
}

fn ref_name(schema: &Value) -> Option<&str> {
    schema.member("$ref")?.as_str()?.rsplit('/').next()
}

/// Where a value is: the keys from the object down to it, joined only for a
/// mismatch (formatting every field's path took more than the check).
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
}

impl Path<'_> {
    /// `spec.template.spec`.
    fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Field(Path::Root, key) => (*key).to_owned(),
            Path::Field(parent, key) => format!("{}.{key}", parent.render()),
        }
    }
}

/// Whether definition `name` is `metav1.MicroTime` (`Some(true)`) or
/// `metav1.Time` (`Some(false)`).
fn time_kind(name: &str) -> Option<bool> {
    match name {
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => Some(false),
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => Some(true),
        _ => None,
    }
}

/// Go's JSON name of a value's type, and the unstructured converter's.
fn names(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::String(_) => ("string", "string"),
        Value::Number(n) if n.is_f64() => ("number", "float64"),
        Value::Number(_) => ("number", "int64"),
        Value::Bool(_) => ("bool", "bool"),
        Value::Array(_) => ("array", "slice"),
        Value::Object(_) => ("object", "map"),
        Value::Null => ("null", "nil"),
    }
}

impl Walker {
    fn walk_struct(
        &self,
        def_name: &str,
        obj: &Map<String, Value>,
        path: &Path<'_>,
    ) -> Option<Mismatch> {
        let props = definition(def_name)?.member("properties")?.as_object()?;
        let struct_name = short(def_name);
        obj.iter().find_map(|(k, v)| {
            let prop = props.member(k)?;
            self.check(prop, v, struct_name, &Path::Field(path, k))
        })
    }

    /// Whether `v` fits `schema`; the field is `path` of Go struct `owner`.
    fn check(&self, schema: &Value, v: &Value, owner: &str, path: &Path<'_>) -> Option<Mismatch> {
        if v.is_null() {
            return None;
        }
        let miss = |go_type: String, shape: Shape| {
            let (json, kind) = names(v);
            Some(Mismatch {
                found_json: json.to_owned(),
                found_kind: kind,
                struct_name: owner.to_owned(),
                path: path.render(),
                go_type,
                shape,
                parse_error: String::new(),
            })
        };
        if let Some(name) = ref_name(schema) {
            return self.check_ref(name, v, owner, path, miss);
        }
        match schema.member("type").and_then(Value::as_str) {
            Some("string") if schema.member("format").and_then(Value::as_str) == Some("byte") => {
                (!v.is_string())
                    .then(|| miss("[]uint8".into(), Shape::Str))
                    .flatten()
            }
            Some("string") => (!v.is_string())
                .then(|| miss("string".into(), Shape::Str))
                .flatten(),
            Some("boolean") => (!v.is_boolean())
                .then(|| miss("bool".into(), Shape::Scalar))
                .flatten(),
            Some("number") => (!v.is_number())
                .then(|| miss("float64".into(), Shape::Scalar))
                .flatten(),
            Some("integer") => self.check_integer(schema, v, miss),
            Some("array") => {
                let items = schema.member("items")?;
                let Some(list) = v.as_array() else {
                    return miss(format!("[]{}", self.go_type(items)), Shape::Slice);
                };
                list.iter()
                    .find_map(|item| self.check(items, item, owner, path))
            }
            Some("object") => {
                let values = schema
                    .member("additionalProperties")
                    .filter(|a| a.is_object())?;
                let Some(map) = v.as_object() else {
                    return miss(self.map_type(values), Shape::Map);
                };
                map.values()
                    .find_map(|item| self.check(values, item, owner, path))
            }
            _ => None,
        }
    }

    fn check_integer(
        &self,
        schema: &Value,
        v: &Value,
        miss: impl Fn(String, Shape) -> Option<Mismatch>,
    ) -> Option<Mismatch> {
        let go = match schema.member("format").and_then(Value::as_str) {
            Some("int32") => "int32",
            _ => "int64",
        };
        let Some(n) = v.as_number() else {
            return miss(go.into(), Shape::Scalar);
        };
        let fits = match (n.as_i64(), go) {
            (Some(i), "int32") => i32::try_from(i).is_ok(),
            (Some(_), _) => true,
            (None, _) => false,
        };
        if fits {
            return None;
        }
        let mut m = miss(go.into(), Shape::Scalar)?;
        m.found_json = format!("number {n}");
        Some(m)
    }

    fn check_ref(
        &self,
        name: &str,
        v: &Value,
        owner: &str,
        path: &Path<'_>,
        miss: impl Fn(String, Shape) -> Option<Mismatch>,
    ) -> Option<Mismatch> {
        if name == INT_OR_STRING {
            return (!(v.is_string() || v.is_number()))
                .then(|| miss("int32".into(), Shape::Scalar))
                .flatten();
        }
        if name == QUANTITY {
            return (!(v.is_string() || v.is_number()))
                .then(|| miss(String::new(), Shape::Quantity))
                .flatten();
        }
        if let (Some(micro), Some(text)) = (time_kind(name), v.as_str()) {
            let error = kapi_machinery::gotime::parse(text, micro).err()?;
            let mut m = miss(String::new(), Shape::Time)?;
            m.parse_error = error;
            return Some(m);
        }
        let def = definition(name)?;
        if def.member("properties").is_some() {
            let Some(obj) = v.as_object() else {
                return miss(qualified(name), Shape::Struct);
            };
            return self.walk_struct(name, obj, path);
        }
        // Types with their own JSON form (Time is a string; RawExtension,
        // FieldsV1 and the like take anything).
        match def.member("type").and_then(Value::as_str) {
            Some("string") => (!v.is_string())
                .then(|| miss("string".into(), Shape::Str))
                .flatten(),
            _ => {
                let _ = (owner, path);
                None
            }
        }
    }

    /// The Go type of values of `schema` as the decoder names it.
    fn go_type(&self, schema: &Value) -> String {
        if let Some(name) = ref_name(schema) {
            return match name {
                INT_OR_STRING => "intstr.IntOrString".into(),
                QUANTITY => "resource.Quantity".into(),
                _ => qualified(name),
            };
        }
        let format = schema.member("format").and_then(Value::as_str);
        match (schema.member("type").and_then(Value::as_str), format) {
            (Some("string"), Some("byte")) => "[]uint8".into(),
            (Some("string"), _) => "string".into(),
            (Some("boolean"), _) => "bool".into(),
            (Some("integer"), Some("int32")) => "int32".into(),
            (Some("integer"), _) => "int64".into(),
            (Some("number"), _) => "float64".into(),
            (Some("array"), _) => match schema.member("items") {
                Some(items) => format!("[]{}", self.go_type(items)),
                None => "[]interface {}".into(),
            },
            (Some("object"), _) => match schema.member("additionalProperties") {
                Some(values) if values.is_object() => self.map_type(values),
                _ => "map[string]interface {}".into(),
            },
            _ => "interface {}".into(),
        }
    }

    /// A map's Go type: `map[string]T`, or upstream's named `v1.ResourceList`.
    fn map_type(&self, values: &Value) -> String {
        match ref_name(values) {
            Some(QUANTITY) => "v1.ResourceList".into(),
            _ => format!("map[string]{}", self.go_type(values)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: &str = "io.k8s.api.core.v1.Pod";
    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

    fn json_of(def: &str, obj: Value) -> Option<String> {
        type_mismatch(def, &obj).map(|m| m.json())
    }

    #[test]
    fn body_values_of_the_wrong_type_are_named_as_go_names_them() {
        let cases = [
            (POD, json!({"spec": {"containers": [{"name": "c", "image": 1}]}}),
             "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string"),
            (POD, json!({"spec": {"containers": {"a": 1}}}),
             "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
            (DEPLOYMENT, json!({"spec": {"replicas": 1.5}}),
             "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
            (DEPLOYMENT, json!({"spec": {"replicas": 99999999999i64}}),
             "json: cannot unmarshal number 99999999999 into Go struct field DeploymentSpec.spec.replicas of type int32"),
            (DEPLOYMENT, json!({"spec": {"template": "x"}}),
             "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec"),
            (POD, json!({"spec": {"containers": [{"resources": {"requests": [1]}}]}}),
             "json: cannot unmarshal array into Go struct field ResourceRequirements.spec.containers.resources.requests of type v1.ResourceList"),
            ("io.k8s.api.core.v1.ConfigMap", json!({"binaryData": {"a": 1}}),
             "json: cannot unmarshal number into Go struct field ConfigMap.binaryData of type []uint8"),
            ("io.k8s.api.core.v1.ConfigMap", json!({"metadata": {"labels": 1}}),
             "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
            ("io.k8s.api.core.v1.ConfigMap", json!({"metadata": {"creationTimestamp": 5}}),
             "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"),
            ("io.k8s.api.core.v1.Service", json!({"spec": {"ports": [{"port": 80, "targetPort": {}}]}}),
             "json: cannot unmarshal object into Go struct field ServicePort.spec.ports.targetPort of type int32"),
            (POD, json!({"spec": {"containers": [{"resources": {"limits": {"cpu": {}}}}]}}), QUANTITY_ERROR),
        ];
        for (def, obj, want) in cases {
            assert_eq!(json_of(def, obj.clone()).as_deref(), Some(want), "{obj}");
        }
        assert_eq!(
            json_of(
                POD,
                json!({"spec": {"containers": [{"name": "c", "x": {}}]}})
            ),
            None
        );
    }

    #[test]
    fn the_unstructured_converter_has_its_own_words() {
        let words = |def: &str, obj: Value| type_mismatch(def, &obj).map(|m| m.unstructured());
        let cm = "io.k8s.api.core.v1.ConfigMap";
        assert_eq!(
            words(cm, json!({"metadata": {"labels": "x"}})).unwrap(),
            "cannot restore map from string"
        );
        assert_eq!(
            words(cm, json!({"metadata": {"labels": [1]}})).unwrap(),
            "cannot restore map from slice"
        );
        assert_eq!(
            words(cm, json!({"data": {"a": 1}})).unwrap(),
            "cannot convert int64 to string"
        );
        assert_eq!(
            words(DEPLOYMENT, json!({"spec": {"template": "x"}})).unwrap(),
            "cannot restore struct from: string"
        );
        assert_eq!(
            words(DEPLOYMENT, json!({"spec": {"replicas": true}})).unwrap(),
            "unrecognized type: int32"
        );
        assert_eq!(
            words(DEPLOYMENT, json!({"spec": {"paused": "x"}})).unwrap(),
            "unrecognized type: bool"
        );
        assert_eq!(
            words(
                DEPLOYMENT,
                json!({"spec": {"template": {"spec": {"containers": {"a": 1}}}}})
            )
            .unwrap(),
            "cannot restore slice from map"
        );
    }

    #[test]
    fn times_are_read_as_go_reads_them() {
        const CM: &str = "io.k8s.api.core.v1.ConfigMap";
        const EVENT: &str = "io.k8s.api.events.v1.Event";
        assert_eq!(
            json_of(CM, json!({"metadata": {"creationTimestamp": "yesterday"}})).unwrap(),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            json_of(
                CM,
                json!({"metadata": {"managedFields": [{"time": "2026-13-01T00:00:00Z"}]}})
            )
            .unwrap(),
            r#"parsing time "2026-13-01T00:00:00Z": month out of range"#
        );
        assert_eq!(
            json_of(
                CM,
                json!({"metadata": {"creationTimestamp": "2026-12-05T07:16:11Z"}})
            ),
            None
        );
        assert_eq!(
            json_of(CM, json!({"metadata": {"creationTimestamp": null}})),
            None
        );
        // A MicroTime needs its six fractional digits.
        assert_eq!(
            json_of(EVENT, json!({"eventTime": "2026-12-05T07:16:11Z"})).unwrap(),
            r#"parsing time "2026-12-05T07:16:11Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        assert_eq!(
            json_of(EVENT, json!({"eventTime": "2026-12-05T07:16:11.000001Z"})),
            None
        );
        // The strategic merge patch path words it the same way.
        let m = type_mismatch(CM, &json!({"metadata": {"creationTimestamp": "bad"}})).unwrap();
        assert_eq!(m.unstructured(), m.json());
    }
}
