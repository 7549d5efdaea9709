//! Fuzz entry points: each takes arbitrary bytes, feeds them to one of kapi's
//! parsers of untrusted input, and panics only when a property is broken — an
//! error result for bad input is the expected outcome. Shared by the cargo-fuzz
//! targets (`fuzz/fuzz_targets/`) and the stable random-input test
//! (`crates/kapi/tests/chaos/props.rs`), so both run exactly this code.
//!
//! Inputs that need two documents (a patch and the object it applies to) are
//! split at the first newline.

use serde_json::Value;

fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    }
}

fn json(b: &[u8]) -> Option<Value> {
    serde_json::from_slice(b).ok()
}

/// The request body decoder (`negotiate::decode_body`) for the media type the
/// first byte picks; a JSON body that decodes re-encodes to the same value.
pub fn request_decoder(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let media = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/json; charset=utf-8",
        "text/plain",
    ][pick as usize % 5];
    let decoded = kapi_http::negotiate::decode_body(Some(media), body);
    // Floats round-trip too since serde_json's `float_roundtrip` is on (this
    // target found `4444…4`, 43 digits, parsing to a neighbouring double).
    if let (Ok(v), true) = (&decoded, media.starts_with("application/json")) {
        let again = kapi_http::negotiate::decode_json(&serde_json::to_vec(v).unwrap());
        assert_eq!(again.as_ref().ok(), Some(v), "JSON round trip");
    }
}

/// JSON patch (RFC 6902) as the PATCH handler runs it: a list of operations
/// applied to a copy of the object, which is dropped on error. (The copy
/// matters: json-patch 5 does not always roll back a failed patch — a `move`
/// whose `from` is the root-level key `""` and whose target is invalid leaves
/// that key removed; found by this target.)
pub fn json_patch(data: &[u8]) {
    let (doc, patch) = split(data);
    let (Some(doc), Some(patch)) = (json(doc), json(patch)) else {
        return;
    };
    let Ok(ops) = serde_json::from_value::<json_patch::Patch>(patch) else {
        return;
    };
    let mut out = doc.clone();
    let _ = json_patch::patch(&mut out, &ops);
}

/// Merge patch (RFC 7386): applying the same patch twice changes nothing more.
pub fn merge_patch(data: &[u8]) {
    let (doc, patch) = split(data);
    let (Some(mut doc), Some(patch)) = (json(doc), json(patch)) else {
        return;
    };
    json_patch::merge(&mut doc, &patch);
    let once = doc.clone();
    json_patch::merge(&mut doc, &patch);
    assert_eq!(doc, once, "merge patch is idempotent");
}

/// Strategic merge patch against the built-in schema of the kind the first
/// byte picks.
pub fn strategic_merge_patch(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (group, version, kind) = [
        ("", "v1", "Pod"),
        ("apps", "v1", "Deployment"),
        ("", "v1", "ConfigMap"),
        ("", "v1", "Service"),
        ("", "v1", "Node"),
    ][pick as usize % 5];
    let (doc, patch) = split(rest);
    let (Some(doc), Some(patch)) = (json(doc), json(patch)) else {
        return;
    };
    let schema = kapi_resources::patchmeta::BuiltinSchema::shared();
    let root = kapi_resources::patchmeta::root_type(group, version, kind).expect("built-in kind");
    if let Ok(out) = kapi_machinery::strategic::apply(&doc, &patch, schema.as_ref(), &root) {
        assert!(out.is_object(), "a strategic merge patch yields an object");
    }
}

/// Label selector parser: a parsed selector prints to a string that parses to
/// the same selector.
pub fn label_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(sel) = kapi_machinery::labels::parse(&text) else {
        return;
    };
    let printed = sel.to_string();
    let again = kapi_machinery::labels::parse(&printed)
        .unwrap_or_else(|e| panic!("{printed:?} (from {text:?}) does not parse: {e:?}"));
    assert_eq!(
        again.to_string(),
        printed,
        "label selector print/parse is stable"
    );
    let _ = sel.matches(&serde_json::Map::new());
}

/// Field selector parser: a parsed selector prints to a string that parses to
/// the same terms (their order may change: as upstream, the parser sorts the
/// raw terms, and printed terms sort differently).
pub fn field_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(sel) = kapi_machinery::fields::parse(&text) else {
        return;
    };
    let terms = |s: &kapi_machinery::fields::FieldSelector| {
        let mut t: Vec<String> = s.requirements().map(|r| r.to_string()).collect();
        t.sort();
        t
    };
    let printed = sel.to_string();
    let again = kapi_machinery::fields::parse(&printed)
        .unwrap_or_else(|e| panic!("{printed:?} (from {text:?}) does not parse: {e:?}"));
    assert_eq!(
        terms(&again),
        terms(&sel),
        "field selector print/parse keeps the terms"
    );
    let _ = sel.matches(|_| None);
}

/// The embedded store's recovery from a write-ahead log of these bytes: it
/// opens or refuses to, never panics; a store that opens can be opened again
/// (recovery is repeatable) with the same keys.
pub fn wal_recovery(data: &[u8]) {
    use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("wal-00000000000000000001.log"), data).expect("write");
    let keys = match EmbeddedBackend::open(EmbeddedConfig::new(dir.path())) {
        Ok(store) => store.key_count(),
        Err(_) => return,
    };
    // The first store is dropped; its committer lets go of the lock.
    let mut again = None;
    for _ in 0..100 {
        match EmbeddedBackend::open(EmbeddedConfig::new(dir.path())) {
            Ok(store) => {
                again = Some(store.key_count());
                break;
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
    assert_eq!(again, Some(keys), "recovery is repeatable");
}
