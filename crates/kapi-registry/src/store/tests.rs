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

/// The scan that keeps a few metadata members gives what the parse gives,
/// and leaves to the parse what it cannot tell (escaped keys, bytes that are
/// not one whole object).
#[test]
fn a_scanned_pick_is_the_parsed_pick() {
    use metadata_only::{AllButManagedFields, Identity, Pick};
    use serde_json::Map;
    fn both<P: Pick>(json: &str) -> (Option<Map<String, Value>>, Map<String, Value>) {
        let parsed = serde_json::from_str::<Picked<P>>(json).unwrap().0;
        (Picked::<P>::scan(json.as_bytes()).map(|p| p.0), parsed)
    }
    let scanned = [
        r#"{"name":"n","namespace":"ns","uid":"u-1","resourceVersion":"7","labels":{"a":"}{"},"managedFields":[{"manager":"m\"}","fieldsV1":{"f:data":{".":{},"f:x":{}}}}],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u-0","controller":true}],"finalizers":["a/b"],"deletionGracePeriodSeconds":30,"deletionTimestamp":"2026-12-04T09:00:00Z"}"#,
        " { \"name\" : \"spaced\" , \"uid\" :\t\"u\" , \"generation\" : 3 } ",
        r#"{"name":"first","name":"second","annotations":{"k":"\\\"\u00e9"}}"#,
        r#"{"name":"\u0041\n","deletionGracePeriodSeconds":null}"#,
        r#"{}"#,
    ];
    for json in scanned {
        let (scan, parse) = both::<Identity>(json);
        assert_eq!(scan.as_ref(), Some(&parse), "{json}");
        let (scan, parse) = both::<AllButManagedFields>(json);
        assert_eq!(scan.as_ref(), Some(&parse), "{json}");
    }
    // An escaped key is decoded by the parse only.
    let escaped = r#"{"n\u0061me":"n","uid":"u"}"#;
    let (scan, parse) = both::<Identity>(escaped);
    assert_eq!(scan, None);
    assert_eq!(parse.get("name"), Some(&Value::from("n")));
    // Not one whole object: cut short, or not an object.
    assert!(Picked::<Identity>::scan(br#"{"name":"n","uid":"u""#).is_none());
    assert!(Picked::<Identity>::scan(br#"["name"]"#).is_none());
    // Through the store: the same identity either way.
    let json = r#"{"kind":"ConfigMap","metadata":{"name":"n","namespace":"d","uid":"u","managedFields":[{"manager":"x"}]},"data":{"payload":"xxxx"}}"#;
    let want: Value = serde_json::from_str(json).unwrap();
    let got = picked_metadata::<Identity>(&kv(json)).unwrap();
    let mut meta = want["metadata"].as_object().cloned().unwrap();
    meta.remove("managedFields");
    assert_eq!(got, meta);
}
