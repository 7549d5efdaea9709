//! The order of a merged list, as upstream's `normalizeElementOrder`:
//! `$setElementOrder` first, then the patch's order, then the live order; and
//! finding list items by merge key or value.

use serde_json::Value;

use super::errors::*;
use super::{PatchError, DIRECTIVE};

/// Upstream `validatePatchWithSetOrderList`: the plain patch items must appear in
/// the `$setElementOrder` list, in the same relative order.
pub(super) fn validate_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), PatchError> {
    if order.is_empty() {
        return Ok(());
    }
    let directive = |v: &Value| v.get(DIRECTIVE).is_some() && key.is_some();
    let plain: Vec<&Value> = patch.iter().filter(|v| !directive(v)).collect();
    let (mut p, mut o) = (0, 0);
    while p < plain.len() && o < order.len() {
        let (a, b) = (ident(plain[p], key), ident(&order[o], key));
        let a = a.ok_or_else(|| no_merge_key(plain[p], key.unwrap_or_default()))?;
        let b = b.ok_or_else(|| no_merge_key(&order[o], key.unwrap_or_default()))?;
        if same(a, b) {
            p += 1;
        }
        o += 1;
    }
    if p < plain.len() {
        return Err(PatchError::OrderMismatch {
            patch: go_fmt(&Value::Array(patch.to_vec())),
            order: go_fmt(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// Upstream `normalizeElementOrder`: items named in `wanted` come in that order,
/// the rest in `live` order, interleaved where both orders are known to `live`.
pub(super) fn order_items(
    merged: Vec<Value>,
    wanted: &[Value],
    live: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let (mut named, mut rest) = (Vec::new(), Vec::new());
    for item in merged {
        let id = ident(&item, key).ok_or_else(|| no_merge_key(&item, key.unwrap_or_default()))?;
        match position(wanted, id, key) {
            Some(_) => named.push(item),
            None => rest.push(item),
        }
    }
    sort_by_position(&mut named, wanted, key);
    sort_by_position(&mut rest, live, key);
    let mut out = Vec::with_capacity(named.len() + rest.len());
    let (mut left, mut right) = (rest.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let l = ident(l, key).and_then(|id| position(live, id, key));
                let r = ident(r, key).and_then(|id| position(live, id, key));
                matches!((l, r), (Some(l), Some(r)) if l < r)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Stable sort by position in `order`; items not found keep their order, last.
pub(super) fn sort_by_position(items: &mut [Value], order: &[Value], key: Option<&str>) {
    let pos = |v: &Value| ident(v, key).and_then(|id| position(order, id, key));
    items.sort_by_key(|v| pos(v).unwrap_or(usize::MAX));
}

/// What identifies a list item: its merge-key value, or itself for scalars.
pub(super) fn ident<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(k) => item.get(k),
        None => Some(item),
    }
}

pub(super) fn position(list: &[Value], id: &Value, key: Option<&str>) -> Option<usize> {
    list.iter()
        .position(|v| ident(v, key).is_some_and(|x| same(x, id)))
}

/// JSON equality, with numbers compared by value (`1` equals `1.0`).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
