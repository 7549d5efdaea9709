//! A stored object answered with its `resourceVersion` spliced in
//! (`kapi_protobuf::with_resource_version`, a create answered in protobuf).

use serde_json::{json, Value};

use super::{served_kinds, top_level};

/// A stored object answered with its `resourceVersion` spliced in is, byte
/// for byte, the decoded object with that `resourceVersion` encoded again,
/// for every served kind.
#[test]
fn a_resource_version_spliced_in_is_the_object_encoded_again() {
    let answered = |stored: &[u8], rv: &str| {
        let mut obj = kapi_protobuf::decode_stored(stored).unwrap();
        obj["metadata"]["resourceVersion"] = json!(rv);
        kapi_protobuf::encode_object(&obj).unwrap()
    };
    let kinds: Vec<_> = served_kinds()
        .into_iter()
        .filter(|(_, kind)| !kind.ends_with("List"))
        .collect();
    // Not objects with an ObjectMeta (never stored): declined.
    let (objects, others): (Vec<_>, Vec<_>) = kinds
        .into_iter()
        .partition(|(_, kind)| !matches!(kind.as_str(), "Status" | "DeleteOptions"));
    for (av, kind) in &others {
        let stored = kapi_protobuf::encode_object(&top_level(av, kind)).unwrap();
        assert!(
            kapi_protobuf::with_resource_version(&stored, "1").is_none(),
            "{kind}"
        );
    }
    let kinds = objects;
    let mut spliced = 0;
    let mut declined = Vec::new();
    for (av, kind) in &kinds {
        let mut obj = top_level(av, kind);
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let stored = kapi_protobuf::encode_object(&obj).unwrap();
        for rv in ["1", "18446744073709"] {
            match kapi_protobuf::with_resource_version(&stored, rv) {
                Some(bytes) => {
                    assert!(bytes == answered(&stored, rv), "{av} {kind}");
                    spliced += 1;
                }
                None => declined.push(format!("{av} {kind}")),
            }
        }
    }
    assert!(declined.is_empty(), "{declined:?}");
    assert_eq!(spliced, kinds.len() * 2);
    // A created ConfigMap, and one with nothing in its metadata after the name.
    for cm in [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a-x1", "generateName": "a-", "namespace": "n", "uid": "u",
                "creationTimestamp": "2026-12-04T16:51:40Z",
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-12-04T16:51:40Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}]},
            "data": {"k": "v"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    ] {
        let stored = kapi_protobuf::encode_object(&cm).unwrap();
        let bytes = kapi_protobuf::with_resource_version(&stored, "7").unwrap();
        assert!(bytes == answered(&stored, "7"), "{cm}");
    }
    // What the walk cannot promise it declines: a resourceVersion already
    // there, bytes that are no envelope.
    let with_rv = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "resourceVersion": "3"}});
    let stored = kapi_protobuf::encode_object(&with_rv).unwrap();
    assert!(kapi_protobuf::with_resource_version(&stored, "7").is_none());
    assert!(kapi_protobuf::with_resource_version(b"{}", "7").is_none());
    // A list's field 1 is its ListMeta: declined.
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []});
    let list = kapi_protobuf::encode_object(&list).unwrap();
    assert!(kapi_protobuf::with_resource_version(&list, "7").is_none());
    assert!(kapi_protobuf::with_resource_version(&stored[..stored.len() - 3], "7").is_none());
}
