//! What decoding any of the API server's own configuration files shares
//! (authentication, authorization, tracing, egress selection): the
//! `apiVersion` and `kind` checked against a group's served versions, and
//! serde's errors worded as upstream's strict decoder words them.

use serde_json::{Map, Value};

/// Remove `apiVersion` and `kind` from `obj` and check them: `kind` of
/// `group` at one of `versions`. `kind_first` says which missing member is
/// named first when both are absent (decoders differ upstream).
pub fn check_type(
    obj: &mut Map<String, Value>,
    group: &str,
    kind: &str,
    versions: &[&str],
    kind_first: bool,
) -> Result<(), String> {
    let take = |obj: &mut Map<String, Value>, k: &str| {
        obj.remove(k)
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let api_version = take(obj, "apiVersion");
    let found_kind = take(obj, "kind");
    let missing_kind = found_kind.is_empty().then_some("Object 'Kind' is missing");
    let missing_version = api_version
        .is_empty()
        .then_some("Object 'apiVersion' is missing");
    let first = if kind_first {
        missing_kind.or(missing_version)
    } else {
        missing_version.or(missing_kind)
    };
    if let Some(message) = first {
        return Err(message.into());
    }
    let version = api_version.strip_prefix(&format!("{group}/"));
    if found_kind != kind || !version.is_some_and(|v| versions.contains(&v)) {
        return Err(format!(
            "no kind {found_kind:?} is registered for version {api_version:?} (want {kind} of {})",
            versions
                .iter()
                .map(|v| format!("{group}/{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// A strict decode's error as upstream words it: an unknown field named by
/// its whole path (`strict decoding error: unknown field "jwt[0].issuer.foo"`),
/// any other error after the path of the field it concerns.
pub fn strict_error(path: &str, inner: &str) -> String {
    let unknown = inner
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next());
    match unknown {
        Some(field) => {
            let full = match path {
                "." | "" => field.to_string(),
                p if p.ends_with(field) => p.to_string(),
                p => format!("{p}.{field}"),
            };
            format!("strict decoding error: unknown field {full:?}")
        }
        None => format!("{path}: {inner}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_and_errors_as_upstream_words_them() {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        let mut ok = obj(serde_json::json!({"apiVersion": "g/v1", "kind": "K", "x": 1}));
        assert!(check_type(&mut ok, "g", "K", &["v1"], true).is_ok());
        assert_eq!(ok.len(), 1, "apiVersion and kind are taken out");
        let mut neither = Map::new();
        assert_eq!(
            check_type(&mut neither.clone(), "g", "K", &["v1"], true).unwrap_err(),
            "Object 'Kind' is missing"
        );
        assert_eq!(
            check_type(&mut neither, "g", "K", &["v1"], false).unwrap_err(),
            "Object 'apiVersion' is missing"
        );
        let mut other = obj(serde_json::json!({"apiVersion": "g/v2", "kind": "K"}));
        assert_eq!(
            check_type(&mut other, "g", "K", &["v1", "v1beta1"], true).unwrap_err(),
            "no kind \"K\" is registered for version \"g/v2\" (want K of g/v1, g/v1beta1)"
        );
        assert_eq!(
            strict_error(
                "jwt[0].issuer",
                "unknown field `foo`, expected one of `url`"
            ),
            "strict decoding error: unknown field \"jwt[0].issuer.foo\""
        );
        assert_eq!(strict_error("a.b", "invalid type"), "a.b: invalid type");
    }
}
