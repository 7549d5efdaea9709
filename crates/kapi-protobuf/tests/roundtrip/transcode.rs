//! The JSON written straight from stored protobuf bytes
//! (`kapi_protobuf::stored_to_json`) is, byte for byte, the JSON of the object
//! `decode_stored` reads from them, or the walk declines.

use serde_json::{json, Value};

use super::{served_kinds, top_level};
use kapi_registry::codec::{to_go_json, GoSpelling, StorageCodec};

/// The walk's JSON of `bytes`, checked against the decoded object's; `None`
/// where the walk declined (and then it left `out` as it was).
fn walked(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = b"prefix".to_vec();
    let walked = kapi_protobuf::stored_to_json(bytes, |_, _| true, &GoSpelling, &mut out);
    let Some(()) = walked else {
        assert_eq!(out, b"prefix", "a declined walk leaves the buffer alone");
        return None;
    };
    let json = out.split_off(6);
    let decoded = kapi_protobuf::decode_stored(bytes).expect("the walk read what decode reads");
    assert_eq!(
        String::from_utf8_lossy(&json),
        String::from_utf8_lossy(&to_go_json(&decoded)),
    );
    Some(json)
}

fn stored(obj: &Value) -> Vec<u8> {
    kapi_protobuf::encode_object(obj).unwrap()
}

#[test]
fn every_served_kind_walks_to_the_decoded_objects_json() {
    let mut walked_kinds = 0;
    let kinds = served_kinds();
    for (av, kind) in &kinds {
        if walked(&stored(&top_level(av, kind))).is_some() {
            walked_kinds += 1;
        }
    }
    // Kinds holding an inlined struct somewhere (a Pod's volumes) decline.
    assert!(
        walked_kinds * 2 > kinds.len(),
        "{walked_kinds} of {} kinds walked",
        kinds.len()
    );
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"b": "2", "a": "1"},
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}]},
        "data": {"k": "<b>&\u{2028}\"\\ \u{1}", "": ""}, "binaryData": {"z": "AAE="},
        "immutable": false});
    assert!(walked(&stored(&cm)).is_some());
    // A kind the caller does not want is not walked, and nothing is written.
    let mut out = Vec::new();
    let unwanted = |av: &str, kind: &str| !(av == "v1" && kind == "ConfigMap");
    assert!(kapi_protobuf::stored_to_json(&stored(&cm), unwanted, &GoSpelling, &mut out).is_none());
    assert!(out.is_empty());
}

#[test]
fn zeros_and_absent_fields_walk_as_they_decode() {
    let cases = [
        (
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"replicas": 0, "revisionHistoryLimit": 0,
            "minReadySeconds": 0, "podManagementPolicy": "", "ordinals": {"start": 0}}}),
        ),
        (
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"storageClassName": "", "volumeName": ""}}),
        ),
        (
            "batch/v1",
            "Job",
            json!({"spec": {"suspend": false, "parallelism": 0, "completionMode": ""}}),
        ),
        (
            "v1",
            "Service",
            json!({"spec": {"allocateLoadBalancerNodePorts": false,
            "ports": [{"port": 0, "nodePort": 0, "targetPort": "http"}, {"port": 1, "targetPort": 8080}]}}),
        ),
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"addressType": "IPv4"}),
        ),
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}],
            "ports": [{"port": 0, "name": ""}]}),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            json!({"metadata": {"name": "r"}}),
        ),
        (
            "scheduling.k8s.io/v1",
            "PriorityClass",
            json!({"value": 0, "globalDefault": false}),
        ),
        (
            "coordination.k8s.io/v1",
            "Lease",
            json!({"spec": {"renewTime": "2024-01-02T03:04:05.123456Z",
            "leaseDurationSeconds": 0}}),
        ),
        (
            "v1",
            "ResourceQuota",
            json!({"spec": {"hard": {"cpu": "250m", "pods": "10"}}}),
        ),
    ];
    for (av, kind, mut obj) in cases {
        obj["kind"] = json!(kind);
        obj["apiVersion"] = json!(av);
        assert!(walked(&stored(&obj)).is_some(), "{av} {kind}");
    }
}

/// Hand-made wire bytes: what Go clients and other writers put on the wire
/// beyond what kapi's encoder writes.
#[test]
fn wire_variants_walk_as_they_decode_or_decline() {
    let varint = |mut n: usize, f: &mut Vec<u8>| {
        while n >= 0x80 {
            f.push((n as u8) | 0x80);
            n >>= 7;
        }
        f.push(n as u8);
    };
    let field = |tag: usize, v: &[u8]| {
        let mut f = Vec::new();
        varint((tag << 3) | 2, &mut f);
        varint(v.len(), &mut f);
        f.extend_from_slice(v);
        f
    };
    let entry = |k: &[u8], v: Option<&[u8]>| {
        let mut e = field(1, k);
        if let Some(v) = v {
            e.extend(field(2, v));
        }
        e
    };
    let cm = |parts: &[Vec<u8>]| kapi_protobuf::envelope("v1", "ConfigMap", &parts.concat());
    // Every non-pointer field of the metadata, zero (a Go client's create).
    let zeros = [
        field(1, b"x"),
        field(2, b""),
        field(3, b""),
        field(8, b""),
        vec![7 << 3, 0],
    ]
    .concat();
    assert_eq!(
        walked(&cm(&[field(1, &zeros)])).unwrap(),
        br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","creationTimestamp":null}}"#
    );
    // Fields out of order, a singular field twice (the last wins), an
    // unknown field number (skipped), an entry without a value.
    let meta = field(1, &field(1, b"first"));
    let meta2 = field(1, &field(1, b"second"));
    let data = field(2, &entry(b"k", Some(b"v")));
    let empty = field(2, &entry(b"e", None));
    let unknown = vec![0xf8, 0x06, 0x01];
    for parts in [
        vec![data.clone(), meta.clone()],
        vec![meta.clone(), data.clone(), meta2.clone()],
        vec![meta.clone(), unknown.clone(), data.clone(), empty.clone()],
    ] {
        assert!(walked(&cm(&parts)).is_some());
    }
    // A key given twice declines: the object keeps its first place and last value.
    let again = field(2, &entry(b"k", Some(b"w")));
    assert!(walked(&cm(&[meta.clone(), data.clone(), again])).is_none());
    // Truncated or malformed bytes decline.
    let whole = cm(&[meta.clone(), data.clone()]);
    for cut in 4..whole.len() - 1 {
        let mut out = Vec::new();
        let r = kapi_protobuf::stored_to_json(&whole[..cut], |_, _| true, &GoSpelling, &mut out);
        if r.is_some() {
            walked(&whole[..cut]);
        }
    }
    // Raw JSON (a `managedFields` entry's `fieldsV1`), written as parsed:
    // escapes, numbers and spacing re-spelled, a key twice declined (the
    // parsed object keeps it once), what is not an object through its value;
    // JSON already spelled so (compact, few keys, no numbers) copied as it is.
    let fields_v1 = |raw: &str| {
        let entry = [field(1, b"m"), field(7, &field(1, raw.as_bytes()))].concat();
        cm(&[field(1, &field(17, &entry))])
    };
    let mut many = (0..40)
        .map(|i| format!("\"k{i}\":{{}}"))
        .collect::<Vec<_>>();
    for raw in [
        r#"{"f:data":{".":{},"f:k":{}}}"#,
        r#" { "f:<b>&" : { "\u00e9\u2028" : [1, -2, 1.0, 1e21, 1.5e-7, true, false, null, "s"] } } "#,
        r#"{"a":{},"b":{"a":{}}}"#,
        r#"{"k:{\"name\":\"a\\\\b\"}":{".":{}},"l":[true,null,"x",[]]}"#,
        &format!("{{{}}}", many.join(",")),
        &format!("{{{}}}", many[..20].join(",")),
    ] {
        assert!(walked(&fields_v1(raw)).is_some(), "{raw}");
    }
    many.push("\"k7\":{}".into());
    for raw in [
        r#"{"a":{},"a":{"b":1}}"#,
        r#"{"x":{"a":1,"a":2}}"#,
        &format!("{{{}}}", many.join(",")),
        r#"{"a":}"#,
        r#"{"a":1} x"#,
    ] {
        assert!(walked(&fields_v1(raw)).is_none(), "{raw}");
    }
    for raw in ["[]", "false", "null", "3", " [1]"] {
        walked(&fields_v1(raw));
    }
    assert!(walked(b"k8s\0\x0a").is_none());
    assert!(walked(b"{}").is_none());
}

/// The storage codec writes JSON from the wire only for kinds a read leaves
/// as stored: a kind with defaults is decoded (and defaulted) instead.
#[test]
fn the_codec_walks_only_kinds_that_read_as_stored() {
    let codec = StorageCodec::default().with_on_read(kapi_resources::storage_versions::on_read());
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}});
    let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let cm_bytes = stored(&cm);
    let walked = codec
        .protobuf_json(&cm_bytes)
        .expect("ConfigMaps read as stored");
    assert_eq!(walked, to_go_json(&codec.decode(&cm_bytes).unwrap()));
    assert!(codec.protobuf_json(&stored(&pod)).is_none());
    let json: Value =
        serde_json::from_slice(&codec.to_json(&stored(&pod).into()).unwrap()).unwrap();
    assert_eq!(json["spec"]["restartPolicy"], "Always", "defaulted on read");
}

/// A strategy that says it has no defaults keeps every object as it is.
#[test]
fn strategies_without_defaults_change_nothing() {
    let mut checked = 0;
    for def in kapi_resources::registry::builtin_resources() {
        if def.strategy.has_defaults() {
            continue;
        }
        let Some(_) = kapi_protobuf::Schema::get().by_api_version(&def.api_version(), &def.kind)
        else {
            continue;
        };
        let obj = top_level(&def.api_version(), &def.kind);
        let mut defaulted = obj.clone();
        def.strategy.default(&mut defaulted);
        assert_eq!(defaulted, obj, "{}", def.kind);
        let mut bare = json!({"kind": def.kind, "apiVersion": def.api_version()});
        def.strategy.default(&mut bare);
        assert_eq!(
            bare,
            json!({"kind": def.kind, "apiVersion": def.api_version()})
        );
        checked += 1;
    }
    assert!(checked >= 1);
}
