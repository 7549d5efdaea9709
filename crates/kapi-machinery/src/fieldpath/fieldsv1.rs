//! The `FieldsV1` wire format of a [`Set`]: a JSON object per node whose keys are
//! path elements — `f:<name>`, `k:<JSON object of the key fields>`,
//! `v:<JSON value>`, `i:<index>` — and whose values are the nodes below, `{}` for
//! a plain member, and a `.` key marking a node that is a member and has children.

use serde_json::{Map, Value};

use super::{PathElement, Set};

/// A `FieldsV1` document that is not a field set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsV1Error(pub String);

/// The wire form of one element (`f:name`, `k:{"name":"x"}`, …).
pub fn element_key(pe: &PathElement) -> String {
    match pe {
        PathElement::Field(name) => field_key(name),
        PathElement::Key(fields) => {
            let m: Map<String, Value> = fields.iter().cloned().collect();
            format!("k:{}", Value::Object(m))
        }
        PathElement::Value(v) => format!("v:{v}"),
        PathElement::Index(i) => format!("i:{i}"),
    }
}

/// The wire form of field `name`, `f:name`: the common element, joined by
/// hand (`format!` costs several times more).
pub fn field_key(name: &str) -> String {
    let mut k = String::with_capacity(name.len() + 2);
    k.push_str("f:");
    k.push_str(name);
    k
}

fn parse_element(key: &str) -> Result<PathElement, FieldsV1Error> {
    let bad = |why: &str| FieldsV1Error(format!("parsing path element {key:?}: {why}"));
    let (prefix, rest) = key
        .split_once(':')
        .ok_or_else(|| bad("missing type prefix"))?;
    match prefix {
        "f" => Ok(PathElement::Field(rest.to_string())),
        "k" => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) if !m.is_empty() => Ok(PathElement::key(m.into_iter().collect())),
            _ => Err(bad("key is not a non-empty JSON object")),
        },
        "v" => serde_json::from_str(rest)
            .map(PathElement::Value)
            .map_err(|e| bad(&e.to_string())),
        "i" => rest
            .parse::<usize>()
            .map(PathElement::Index)
            .map_err(|e| bad(&e.to_string())),
        _ => Err(bad("unknown type prefix")),
    }
}

/// Encode a set as `FieldsV1` JSON, elements in upstream's order.
pub fn to_fields_v1(set: &Set) -> Value {
    let mut out = Map::new();
    fill_fields_v1(set, &mut out);
    Value::Object(out)
}

/// `set`'s elements into `out`, each child's written straight into its node.
fn fill_fields_v1(set: &Set, out: &mut Map<String, Value>) {
    let mut keys: Vec<&PathElement> = set.members().chain(set.children().map(|c| c.0)).collect();
    keys.sort();
    keys.dedup();
    for pe in keys {
        let mut node = Map::new();
        if let Some(child) = set.child(pe) {
            if set.has(std::slice::from_ref(pe)) {
                node.insert(".".into(), Value::Object(Map::new()));
            }
            fill_fields_v1(child, &mut node);
        }
        out.insert(element_key(pe), Value::Object(node));
    }
}

/// Decode `FieldsV1` JSON.
pub fn from_fields_v1(v: &Value) -> Result<Set, FieldsV1Error> {
    let Value::Object(m) = v else {
        return Err(FieldsV1Error("fieldsV1 is not a JSON object".into()));
    };
    let mut set = Set::new();
    for (k, child) in m {
        if k == "." {
            continue;
        }
        let pe = parse_element(k)?;
        let Value::Object(cm) = child else {
            return Err(FieldsV1Error(format!("value of {k:?} is not an object")));
        };
        if cm.is_empty() || cm.contains_key(".") {
            set.insert_member(pe.clone());
        }
        let sub = from_fields_v1(child)?;
        set.set_child(pe, sub);
    }
    Ok(set)
}
