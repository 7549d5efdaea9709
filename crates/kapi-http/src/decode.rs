//! Request bodies: JSON, YAML or Kubernetes protobuf by content type, with
//! the keys a JSON or YAML body repeats for `fieldValidation`
//! (`crate::strict`), and upstream's limits on nesting.

use kapi_machinery::status::ApiError;
use kapi_registry::ResourceDef;
use serde_json::Value;

use crate::negotiate::protobuf_kind;
use crate::strict::{JsonError, MAX_DEPTH};

/// Decode a request body as JSON, YAML or protobuf, by content type.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "application/json".into());
    match media.as_str() {
        "application/json" | "" => decode_json(body),
        "application/yaml" => decode_yaml(body),
        "application/vnd.kubernetes.protobuf" => decode_protobuf(body),
        _ => Err(ApiError::unsupported_media_type(
            crate::negotiate::SERIALIZER_TYPES,
        )),
    }
}

/// A request body holding an object of `def`'s resource: as [`decode_body`], but
/// protobuf only where the resource is served as protobuf — upstream's custom
/// resource handler accepts JSON and YAML bodies only (415 otherwise).
pub fn decode_object_body(
    def: &ResourceDef,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ApiError> {
    let is_protobuf = content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/vnd.kubernetes.protobuf")
        });
    if is_protobuf && !protobuf_kind(def) {
        return Err(ApiError::unsupported_media_type(&[
            "application/json",
            "application/yaml",
        ]));
    }
    decode_body(content_type, body)
}

/// Keys a request body repeats (`crate::strict`), as its format reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Duplicates {
    Json(Vec<crate::strict::JsonDup>),
    Yaml(Vec<crate::strict::YamlDup>),
}

impl Duplicates {
    pub const NONE: Duplicates = Duplicates::Json(Vec::new());

    pub fn is_empty(&self) -> bool {
        match self {
            Duplicates::Json(d) => d.is_empty(),
            Duplicates::Yaml(d) => d.is_empty(),
        }
    }
}

/// [`decode_object_body`], with the keys a JSON or YAML body repeats (the
/// last of them wins, as in a plain decode).
pub fn decode_object_body_checked(
    def: &ResourceDef,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(Value, Duplicates), ApiError> {
    let unrecognized = |e: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {e} ({})",
            def.kind,
            kapi_machinery::gojson::summarize(body)
        ))
    };
    let (value, dups) = match media_of(content_type).as_str() {
        "application/json" | "" => {
            let (v, d) = crate::strict::json(body).map_err(|e| match e {
                JsonError::TooDeep => too_deep(),
                JsonError::Syntax(e) => {
                    let go = kapi_machinery::gojson::syntax_error(&e, body);
                    unrecognized(format!("couldn't get version/kind; json parse error: {go}"))
                }
            })?;
            (v, Duplicates::Json(d))
        }
        "application/yaml" => {
            check_depth(body)?;
            let (v, d) = crate::strict::yaml(yaml_text(body)?)
                .map_err(|e| unrecognized(go_yaml_error(&e)))?;
            (v, Duplicates::Yaml(d))
        }
        _ => {
            return Ok((
                decode_object_body(def, content_type, body)?,
                Duplicates::NONE,
            ))
        }
    };
    // Go decodes `null` into a struct as nothing at all: the object is empty
    // (its kind then comes from the URL).
    let value = match value {
        Value::Null => Value::Object(Default::default()),
        v => v,
    };
    if !value.is_object() {
        let go = kapi_machinery::gojson::type_error(&value, kapi_machinery::gojson::KIND_FINDER);
        return Err(unrecognized(format!(
            "couldn't get version/kind; json parse error: {go}"
        )));
    }
    Ok((value, dups))
}

/// A YAML syntax error as go-yaml words it (`yaml: line 1: <what>`); the
/// description is the parser's own.
fn go_yaml_error(e: &serde_saphyr::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("");
    let line = first
        .split_once("line ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or("0");
    let what = first.rsplit_once(": ").map_or(first, |(_, w)| w);
    format!("yaml: line {line}: {what}")
}

/// A patch body (JSON, merge or strategic merge patch) with the keys it
/// repeats; what does not parse is upstream's `error decoding patch`.
pub fn decode_patch(body: &[u8]) -> Result<(Value, Vec<crate::strict::JsonDup>), ApiError> {
    crate::strict::json(body).map_err(|e| match e {
        JsonError::TooDeep => too_deep(),
        JsonError::Syntax(e) => ApiError::bad_request(format!(
            "error decoding patch: {}",
            kapi_machinery::gojson::syntax_error(&e, body)
        )),
    })
}

/// A YAML body (an apply configuration) with the keys it repeats.
pub fn decode_yaml_checked(body: &[u8]) -> Result<(Value, Vec<crate::strict::YamlDup>), ApiError> {
    check_depth(body)?;
    crate::strict::yaml(yaml_text(body)?).map_err(|e| yaml_error(&e))
}

fn media_of(content_type: Option<&str>) -> String {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "application/json".into())
}

/// An enveloped protobuf body, typed by its envelope; a wrong kind for the URL
/// is caught later by the same identity check JSON bodies get.
pub fn decode_protobuf(body: &[u8]) -> Result<Value, ApiError> {
    kapi_protobuf::decode_object(body, None).map_err(|e| {
        let msg = match e {
            kapi_protobuf::Error::Magic => format!(
                "provided data does not appear to be a protobuf message, expected prefix {:?}",
                kapi_protobuf::MAGIC
            ),
            other => other.to_string(),
        };
        ApiError::bad_request(msg)
    })
}

/// The answer to a body nested deeper than [`MAX_DEPTH`].
fn too_deep() -> ApiError {
    ApiError::bad_request(format!(
        "the body of the request is nested deeper than {MAX_DEPTH} levels"
    ))
}

pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    check_depth(body)?;
    serde_json::from_slice(body).map_err(|e| json_error(&e))
}

fn json_error(e: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml: {e}"
    ))
}

pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    decode_yaml_checked(body).map(|(v, _)| v)
}

fn yaml_text(body: &[u8]) -> Result<&str, ApiError> {
    std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the body of the request is not valid UTF-8"))
}

fn yaml_error(e: &serde_saphyr::Error) -> ApiError {
    ApiError::bad_request(format!("error converting YAML to JSON: {e}"))
}

/// Reject absurd nesting before parsing, so a hostile body cannot exhaust the stack.
fn check_depth(body: &[u8]) -> Result<(), ApiError> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                // A string ends at the next quote not escaped: found by a
                // search for quotes and backslashes, not byte by byte.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', body.get(i..).unwrap_or_default()) {
                        // Unterminated: the parser says so.
                        None => return Ok(()),
                        Some(n) if body[i + n] == b'\\' => i += n + 2,
                        Some(n) => {
                            i += n + 1;
                            break;
                        }
                    }
                }
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep());
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize, inside: &str) -> String {
        format!("{}{inside}{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// Only brackets outside strings count, whatever the strings hold.
    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert!(check_depth(nested(MAX_DEPTH, "1").as_bytes()).is_ok());
        let err = check_depth(nested(MAX_DEPTH + 1, "1").as_bytes()).unwrap_err();
        assert_eq!(err.code, 400);
        let s = format!(
            r#"{{"a":"{}\"{}\\","b":[]}}"#,
            "[".repeat(300),
            "{".repeat(300)
        );
        assert!(check_depth(s.as_bytes()).is_ok(), "{s}");
        // An escaped backslash ends before the quote, which closes the string.
        let s = format!(r#"["\\",{}]"#, nested(MAX_DEPTH, "1"));
        assert!(check_depth(s.as_bytes()).is_err());
        let s = format!(r#"["\\\"{}"]"#, nested(MAX_DEPTH, "1"));
        assert!(check_depth(s.as_bytes()).is_ok());
        // Unterminated strings and a trailing backslash end the scan quietly.
        for s in [r#"["abc"#, "[\"\\", "\"", ""] {
            assert!(check_depth(s.as_bytes()).is_ok(), "{s}");
        }
    }
}
