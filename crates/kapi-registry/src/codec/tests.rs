use super::*;
use serde_json::json;

fn cm() -> Value {
    json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-1",
                     "creationTimestamp": "2024-01-02T03:04:05Z",
                     "labels": {"app": "<x>&"}},
        "data": {"k": "v"},
    })
}

#[test]
fn writes_builtin_kinds_in_the_media_type_and_others_as_json() {
    let proto = StorageCodec::default();
    let b = proto.encode(Origin::Builtin, &cm()).unwrap();
    assert!(b.starts_with(kapi_protobuf::MAGIC));
    for origin in [Origin::BuiltinJson, Origin::Custom] {
        let b = proto.encode(origin, &cm()).unwrap();
        assert!(b.starts_with(b"{\"kind\":\"ConfigMap\""), "{origin:?}");
        assert!(b.ends_with(b"}\n"), "Go's encoder ends with a newline");
        assert!(
            std::str::from_utf8(&b)
                .unwrap()
                .contains(r#""\u003cx\u003e\u0026""#),
            "escaped as Go does"
        );
    }
    let yaml = StorageCodec::new(MediaType::Yaml)
        .encode(Origin::Builtin, &cm())
        .unwrap();
    let text = std::str::from_utf8(&yaml).unwrap();
    assert!(text.starts_with("apiVersion: v1\n"), "keys sorted: {text}");
}

#[test]
fn reads_every_encoding_whatever_it_writes() {
    for write in MediaType::ALL {
        let stored = StorageCodec::new(write)
            .encode(Origin::Builtin, &cm())
            .unwrap();
        for read in MediaType::ALL {
            let got = StorageCodec::new(read).decode(&stored).unwrap();
            assert_eq!(got, cm(), "written {write:?}, read {read:?}");
        }
    }
}

#[test]
fn a_kind_without_a_protobuf_message_is_stored_as_json() {
    let obj = json!({"kind": "Widget", "apiVersion": "example.com/v1", "metadata": {"name": "w"}});
    let b = StorageCodec::default()
        .encode(Origin::Builtin, &obj)
        .unwrap();
    assert_eq!(sniff(&b), Sniffed::Json);
    assert_eq!(StorageCodec::default().decode(&b).unwrap(), obj);
}

#[test]
fn to_json_keeps_current_json_and_transcodes_the_rest() {
    let codec = StorageCodec::default();
    let json = codec.encode(Origin::Custom, &cm()).unwrap();
    let kept = codec.to_json(&json).unwrap();
    assert_eq!(
        &kept[..],
        &json[..json.len() - 1],
        "same bytes, newline trimmed"
    );
    assert_eq!(kept.as_ptr(), json.as_ptr(), "a slice, not a copy");
    let pb = codec.encode(Origin::Builtin, &cm()).unwrap();
    let from_pb = codec.to_json(&pb).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&from_pb).unwrap(), cm());
    assert!(from_pb.starts_with(br#"{"kind":"ConfigMap","apiVersion":"v1","#));
    let yaml = StorageCodec::new(MediaType::Yaml)
        .encode(Origin::Builtin, &cm())
        .unwrap();
    let from_yaml = codec.to_json(&yaml).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&from_yaml).unwrap(), cm());
    // Not an object in any encoding: left to the caller.
    for raw in [&b"node:a"[..], b"v1", b"", b"k8s\0garbage"] {
        assert!(
            codec.to_json(&Bytes::copy_from_slice(raw)).is_none(),
            "{raw:?}"
        );
    }
}

struct Renames;

impl OnRead for Renames {
    fn is_older(&self, api_version: &str, kind: &str) -> bool {
        api_version == "example.com/v1beta1" && kind == "Thing"
    }
    fn upgrade(&self, mut obj: Value) -> Value {
        obj["apiVersion"] = "example.com/v1".into();
        let old = obj["spec"].as_object_mut().unwrap().remove("old").unwrap();
        obj["spec"]["new"] = old;
        obj
    }
    fn default(&self, obj: &mut Value) {
        if obj["kind"] == "Thing" && obj["spec"].get("size").is_none() {
            obj["spec"]["size"] = 1.into();
        }
    }
}

#[test]
fn older_versions_are_upgraded_on_the_way_in() {
    let codec = StorageCodec::default().with_on_read(Arc::new(Renames));
    let old = br#"{"kind":"Thing","apiVersion":"example.com/v1beta1","metadata":{"name":"t"},"spec":{"old":1}}"#;
    let want = json!({"kind":"Thing","apiVersion":"example.com/v1","metadata":{"name":"t"},
                      "spec":{"new":1,"size":1}});
    assert_eq!(codec.decode(old).unwrap(), want);
    let cached = codec.to_json(&Bytes::from_static(old)).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&cached).unwrap(), want);
    // JSON at today's version is taken as stored (not defaulted again)...
    let current = br#"{"kind":"Thing","apiVersion":"example.com/v1","spec":{"new":1}}"#;
    let kept = codec.to_json(&Bytes::from_static(current)).unwrap();
    assert_eq!(&kept[..], &current[..]);
    assert_eq!(codec.decode(current).unwrap()["spec"], json!({"new": 1}));
    // ... what is transcoded is defaulted.
    let obj: Value = serde_json::from_slice(current).unwrap();
    let yaml = StorageCodec::new(MediaType::Yaml)
        .encode(Origin::Builtin, &obj)
        .unwrap();
    assert_eq!(
        codec.decode(&yaml).unwrap()["spec"],
        json!({"new": 1, "size": 1})
    );
}

#[test]
fn media_types_parse_as_the_flag_spells_them() {
    for m in MediaType::ALL {
        assert_eq!(MediaType::parse(m.as_str()), Some(m));
    }
    assert_eq!(
        MediaType::parse("application/vnd.kubernetes.protobuf"),
        Some(MediaType::Protobuf)
    );
    assert_eq!(MediaType::parse("application/xml"), None);
}
