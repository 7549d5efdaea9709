//! Unit tests of the store's decoding helpers.

use super::*;

fn kv(json: &str) -> KeyValue {
    KeyValue {
        key: "/t/x".into(),
        value: Bytes::copy_from_slice(json.as_bytes()),
        create_revision: 1,
        mod_revision: 1,
        version: 1,
    }
}

/// Parsing the `metadata` member alone reads what a whole parse reads,
/// wherever the member sits and whatever the strings around it hold.
#[test]
fn metadata_alone_is_the_metadata_of_the_whole() {
    let cases = [
        r#"{"kind":"X","weird":{"a":"}\"metadata\":{","b":[1,{"metadata":2}]},"metadata":{"name":"n","uid":"u","labels":{"x":"}"},"managedFields":[{"m":"{"}]},"data":{"k":"v"}}"#,
        r#"{"metadata":{"name":"first"},"metadata2":{"name":"no"}}"#,
        r#"{"data":"x"}"#,
        r#"{"metadata":null,"data":"x"}"#,
        r#"{}"#,
    ];
    for json in cases {
        let whole: Value = serde_json::from_str(json).unwrap();
        let want = whole
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let got = metadata_only::<serde_json::Map<String, Value>>(&kv(json)).unwrap();
        assert_eq!(got, want, "{json}");
        let mut trimmed = want.clone();
        trimmed.remove("managedFields");
        let got = Store::stored_metadata_without_managed_fields(&kv(json)).unwrap();
        assert_eq!(got, trimmed, "{json}");
    }
    assert!(metadata_only::<serde_json::Map<String, Value>>(&kv("[1]")).is_err());
}
