//! Decoding that sees what upstream's strict decoders see: keys repeated in
//! one object of a request body. JSON bodies report each repeat by its
//! dotted path (`spec.replicas`, `spec.containers[0].image`), in document
//! order, as sigs.k8s.io/json does; YAML bodies by the line of the repeated
//! key (`line 9: key "foo" already set in map`), as go-yaml does. The value
//! is the one a plain decode gives: the last of repeated keys wins, at the
//! place of the first.
//!
//! The state of a decode lives in a thread-local for the length of the
//! (synchronous) decode, as serde gives a `Deserialize` no other channel.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// A key repeated in a JSON body: its path, and how many keys came before
/// it in the document (its place among other findings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonDup {
    pub index: usize,
    pub path: String,
}

/// A key repeated in a YAML body, and the line it is repeated on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlDup {
    pub line: u64,
    pub key: String,
}

#[derive(Default)]
struct State {
    path: Vec<Segment>,
    /// Keys seen so far.
    keys: usize,
    json: Vec<JsonDup>,
    yaml: Vec<YamlDup>,
    /// The document index of each path's first key, when asked for.
    first: Option<HashMap<String, usize>>,
    yaml_mode: bool,
}

enum Segment {
    Key(String),
    Index(usize),
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(s.borrow_mut().as_mut().expect("a strict decode is running")))
}

fn path_string(path: &[Segment]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Segment::Key(k) if out.is_empty() => out.push_str(k),
            Segment::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Run `decode` with a fresh state; returns its result and the state.
fn run<T, E>(
    yaml_mode: bool,
    first: bool,
    decode: impl FnOnce() -> Result<T, E>,
) -> (Result<T, E>, State) {
    let state = State {
        yaml_mode,
        first: first.then(HashMap::new),
        ..State::default()
    };
    STATE.with(|s| *s.borrow_mut() = Some(state));
    let out = decode();
    let state = STATE.with(|s| s.borrow_mut().take()).expect("state");
    (out, state)
}

/// A JSON body and the keys repeated in it.
///
/// Most bodies repeat no key: they are parsed once, noting only whether some
/// object repeats a key. Only one that does is parsed again with the path of
/// every key kept, to report where.
pub fn json(body: &[u8]) -> Result<(Value, Vec<JsonDup>), JsonError> {
    let seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Plain {
        seen: &seen,
        depth: 0,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| match seen.too_deep.get() {
        true => JsonError::TooDeep,
        false => JsonError::Syntax(e),
    })?;
    if !seen.repeated.get() {
        return Ok((value, Vec::new()));
    }
    let (out, state) = run(false, false, || serde_json::from_slice::<Tracked>(body));
    Ok((out.map_err(JsonError::Syntax)?.0, state.json))
}

/// Objects and lists nested deeper than this are refused (see [`JsonError::TooDeep`]).
pub const MAX_DEPTH: usize = 100;

/// Why a JSON body did not decode.
#[derive(Debug)]
pub enum JsonError {
    /// Objects and lists nested more than [`MAX_DEPTH`] levels (refused
    /// before the stack of any later walk is at risk).
    TooDeep,
    /// Not JSON.
    Syntax(serde_json::Error),
}

/// What a plain decode noticed on the way.
#[derive(Default)]
struct Seen {
    repeated: Cell<bool>,
    too_deep: Cell<bool>,
}

/// A JSON value decoded as [`Tracked`] decodes it, noting only whether a key
/// repeats (no paths, no thread-local state), at `depth` containers down.
#[derive(Clone, Copy)]
struct Plain<'a> {
    seen: &'a Seen,
    depth: usize,
}

impl Plain<'_> {
    /// The seed for what a container at this depth holds, or the error when
    /// the container is one level too many.
    fn inside<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            self.seen.too_deep.set(true);
            return Err(E::custom(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(Plain {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Plain<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Plain<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        ValueVisitor.visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        ValueVisitor.visit_i64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        ValueVisitor.visit_u64(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        ValueVisitor.visit_f64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        ValueVisitor.visit_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        ValueVisitor.visit_string(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        ValueVisitor.visit_unit()
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        ValueVisitor.visit_none()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.inside()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.inside()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(inner)?;
            // A repeat's value replaces the first in its place, as `insert`.
            if out.insert(key, value).is_some() {
                self.seen.repeated.set(true);
            }
        }
        Ok(Value::Object(out))
    }
}

/// The document index of the first key of each path of a JSON body (to
/// order other findings among the repeats).
pub fn json_key_indexes(body: &[u8]) -> HashMap<String, usize> {
    let (_, state) = run(false, true, || serde_json::from_slice::<Tracked>(body));
    state.first.unwrap_or_default()
}

/// A YAML body and the keys repeated in it.
pub fn yaml(text: &str) -> Result<(Value, Vec<YamlDup>), serde_saphyr::Error> {
    let mut options = serde_saphyr::options::Options::default();
    options.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::PassThrough;
    let (out, state) = run(true, false, || {
        serde_saphyr::from_str_with_options::<Tracked>(text, options)
    });
    Ok((out?.0, state.yaml))
}

/// A decoded value that records repeated keys into the running state.
struct Tracked(Value);

impl<'de> Deserialize<'de> for Tracked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(Tracked)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            with(|s| s.path.push(Segment::Index(out.len())));
            let next = seq.next_element::<Tracked>();
            with(|s| s.path.pop());
            match next? {
                Some(Tracked(v)) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let yaml = with(|s| s.yaml_mode);
        while let Some((key, line)) = map.next_key_seed(KeySeed { yaml })? {
            // One look-up per key: the entry tells a repeat, and takes the value
            // (a repeat's value replaces the first in its place, as `insert`).
            let entry = out.entry(key);
            let repeated = matches!(entry, Entry::Occupied(_));
            with(|s| note_key(s, entry.key(), line, repeated));
            let value = map.next_value::<Tracked>();
            with(|s| s.path.pop());
            let value = value?.0;
            match entry {
                Entry::Vacant(e) => {
                    e.insert(value);
                }
                Entry::Occupied(mut e) => {
                    e.insert(value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Count `key`, record it if it repeats, and step into it.
fn note_key(s: &mut State, key: &str, line: u64, repeated: bool) {
    s.path.push(Segment::Key(key.to_owned()));
    let index = s.keys;
    s.keys += 1;
    if let Some(first) = s.first.as_mut() {
        first.entry(path_string(&s.path)).or_insert(index);
    }
    if !repeated {
        return;
    }
    if s.yaml_mode {
        s.yaml.push(YamlDup {
            line,
            key: key.to_owned(),
        });
    } else {
        let path = path_string(&s.path);
        s.json.push(JsonDup { index, path });
    }
}

/// A mapping key as a string (YAML keys may be other scalars), with its line
/// in YAML.
struct KeySeed {
    yaml: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (String, u64);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        if self.yaml {
            let k = serde_saphyr::Spanned::<KeyString>::deserialize(d)?;
            Ok((k.value.0, k.referenced.line()))
        } else {
            Ok((KeyString::deserialize(d)?.0, 0))
        }
    }
}

struct KeyString(String);

impl<'de> Deserialize<'de> for KeyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'a> Visitor<'a> for V {
            type Value = KeyString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar key")
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyString, E> {
                Ok(KeyString(v.to_owned()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<KeyString, E> {
                Ok(KeyString(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<KeyString, E> {
                Ok(KeyString("null".to_owned()))
            }
            fn visit_map<A: MapAccess<'a>>(self, _: A) -> Result<KeyString, A::Error> {
                Err(de::Error::custom("mapping keys must be scalars"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_repeats_are_reported_by_path_in_document_order() {
        let body =
            br#"{"metadata":{"labels":{"a":"1","a":"2"}},"spec":{"replicas":1,"x":1,"replicas":2,
            "containers":[{"name":"c","image":"i","image":"j"}]}}"#;
        let (v, dups) = json(body).unwrap();
        assert_eq!(v["spec"]["replicas"], 2);
        assert_eq!(v["metadata"]["labels"], json!({"a": "2"}));
        let paths: Vec<&str> = dups.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels.a",
                "spec.replicas",
                "spec.containers[0].image"
            ]
        );
        let first = json_key_indexes(body);
        assert!(first["spec.x"] > dups[1].index - 2 && first["spec.x"] < dups[1].index);
        assert_eq!(v, serde_json::from_slice::<Value>(body).unwrap());
        // A repeat's value takes the first one's place, as serde_json's own
        // parse keeps it.
        let keys: Vec<&String> = v["spec"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["replicas", "x", "containers"]);
    }

    /// A body without repeats decodes as serde_json decodes it, to the last
    /// detail of number and string, and reports nothing.
    #[test]
    fn json_without_repeats_is_the_plain_decode() {
        for body in [
            r#"{"a":[1,-2,3.5,1e300,18446744073709551615,null,true,"\u003c\n"],"b":{"c":{},"d":[]}}"#,
            r#"[{"x":1},{"x":1}]"#,
            r#""s""#,
            "12",
        ] {
            let (v, dups) = json(body.as_bytes()).unwrap();
            assert!(dups.is_empty(), "{body}");
            assert_eq!(v, serde_json::from_str::<Value>(body).unwrap(), "{body}");
        }
        for bad in [r#"{"a":1"#, r#"{"a":1} x"#, r#"{"a":}"#, ""] {
            let want = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            let Err(JsonError::Syntax(e)) = json(bad.as_bytes()) else {
                panic!("{bad}: not a syntax error");
            };
            assert_eq!(e.to_string(), want, "{bad}");
        }
    }

    /// Only brackets outside strings count; the limit is the depth of the
    /// deepest container, reached or not before a syntax error.
    #[test]
    fn depth_is_counted_while_decoding() {
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(json(nested(MAX_DEPTH).as_bytes()).is_ok());
        assert!(matches!(
            json(nested(MAX_DEPTH + 1).as_bytes()),
            Err(JsonError::TooDeep)
        ));
        let objects = format!(
            "{}1{}",
            r#"{"a":"#.repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(matches!(json(objects.as_bytes()), Err(JsonError::TooDeep)));
        let in_string = format!(r#"{{"a":"{}","b":[]}}"#, "[{".repeat(300));
        assert!(json(in_string.as_bytes()).is_ok());
        let early = format!("[1,}}{}", nested(MAX_DEPTH + 1));
        assert!(matches!(json(early.as_bytes()), Err(JsonError::Syntax(_))));
        let repeated = format!(r#"{{"a":1,"a":{}}}"#, nested(MAX_DEPTH));
        assert!(matches!(json(repeated.as_bytes()), Err(JsonError::TooDeep)));
    }

    #[test]
    fn yaml_repeats_are_reported_by_line() {
        let text = "a: 1\nb:\n  c: 1\n  c: 2\nd: [1, 2]\nb: {}\n";
        let (v, dups) = yaml(text).unwrap();
        assert_eq!(v, json!({"a": 1, "b": {}, "d": [1, 2]}));
        assert_eq!(
            dups,
            vec![
                YamlDup {
                    line: 4,
                    key: "c".into()
                },
                YamlDup {
                    line: 6,
                    key: "b".into()
                }
            ]
        );
    }
}
