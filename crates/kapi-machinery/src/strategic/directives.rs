//! The patch directives that act on a whole field: `$retainKeys` and
//! `$deleteFromPrimitiveList/<field>`, and recognising directive keys.

use serde_json::{Map, Value};

use super::order::same;
use super::PatchError;
use super::{DELETE_PRIMITIVE_PREFIX, DIRECTIVE, RETAIN_KEYS, SET_ORDER_PREFIX};

/// Upstream `applyRetainKeysDirective`: every non-null patch field must be listed,
/// and original fields that are not listed are cleared.
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let retain = retain.as_array().ok_or(PatchError::BadRetainKeys)?;
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch {
        let directive = k == DIRECTIVE
            || k == RETAIN_KEYS
            || k.starts_with(DELETE_PRIMITIVE_PREFIX)
            || k.starts_with(SET_ORDER_PREFIX);
        if !v.is_null() && !directive && !listed(k) {
            return Err(PatchError::BadRetainKeys);
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$deleteFromPrimitiveList/<field>: [values]` removes those values from the list.
pub(super) fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    directive: &str,
    values: &Value,
) -> Result<(), PatchError> {
    let name =
        strip_directive(directive, DELETE_PRIMITIVE_PREFIX).ok_or(PatchError::BadPrimitiveList)?;
    let values = values.as_array().ok_or(PatchError::BadPrimitiveList)?;
    if let Some(Value::Array(list)) = original.get_mut(name) {
        list.retain(|e| !values.iter().any(|v| same(v, e)));
    }
    Ok(())
}

/// `"$prefix/field"` → `"field"`.
pub(super) fn strip_directive<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    key.split_once('/')
        .filter(|(p, _)| *p == prefix)
        .map(|(_, f)| f)
}
