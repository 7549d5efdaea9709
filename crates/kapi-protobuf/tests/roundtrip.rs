//! Round trips for every kind kapi serves (read from the resource registry, so
//! kinds added later are covered without touching this file): an example with
//! every field set, generated from the descriptors, goes JSON → protobuf →
//! JSON unchanged; its field names are checked against kapi's OpenAPI
//! definitions; and for a few kinds the bytes are checked against the `k8s-pb`
//! prost types, which must decode them and re-encode them byte for byte.

use std::collections::BTreeSet;

use base64::Engine as _;
use kapi_protobuf::{Label, Schema, Special, Ty};
use serde_json::{json, Map, Value};

const MAX_DEPTH: usize = 16;

/// A value for every field of message `idx`.
fn example(idx: usize, depth: usize) -> Value {
    let msg = Schema::get().message(idx);
    match msg.special {
        Special::Time => return json!("2024-05-06T07:08:09Z"),
        Special::MicroTime => return json!("2024-05-06T07:08:09.123456Z"),
        Special::Duration => return json!("1h2m3.5s"),
        Special::Quantity => return json!("250m"),
        Special::IntOrString => {
            return if depth.is_multiple_of(2) {
                json!(8080)
            } else {
                json!("http")
            };
        }
        Special::RawJson => return json!({"a": [1, "b", {"c": true}]}),
        Special::Verbs => return json!(["get", "list"]),
        Special::None => {}
    }
    let mut out = Map::new();
    for f in msg.desc.fields {
        let one = match f.ty {
            Ty::String => json!(format!("{}-value", f.json)),
            Ty::Bool => json!(true),
            Ty::Int32 => json!(-7),
            Ty::Int64 => json!(1_i64 << 40),
            Ty::Double => json!(1.5),
            Ty::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(b"\x00bytes\xff")),
            // Too deep: left out, as a Go nil slice or map without
            // `omitempty` reads back (as `null`).
            Ty::Message(_) if depth >= MAX_DEPTH => {
                let null = msg.desc.go_facts
                    && !f.omitempty
                    && !f.pointer
                    && matches!(f.label, Label::Repeated | Label::Map);
                if null {
                    out.insert(f.json.to_string(), Value::Null);
                }
                continue;
            }
            Ty::Message(m) => example(m, depth + 1),
        };
        if f.inline {
            out.extend(one.as_object().unwrap().clone());
            continue;
        }
        let v = match f.label {
            Label::Optional => one,
            Label::Repeated => json!([one.clone(), one]),
            Label::Map => json!({"k1": one.clone(), "k2": one}),
        };
        out.insert(f.json.to_string(), v);
    }
    Value::Object(out)
}

fn top_level(api_version: &str, kind: &str) -> Value {
    let idx = Schema::get()
        .by_api_version(api_version, kind)
        .unwrap_or_else(|| panic!("no message for {api_version} {kind}"));
    let mut v = example(idx, 0);
    let obj = v.as_object_mut().unwrap();
    obj.insert("kind".into(), json!(kind));
    obj.insert("apiVersion".into(), json!(api_version));
    v
}

/// Every top-level kind that crosses the wire for a served resource.
fn served_kinds() -> Vec<(String, String)> {
    let mut kinds = BTreeSet::new();
    for def in kapi_resources::registry::builtin_resources() {
        if !def.protobuf {
            continue;
        }
        let av = def.api_version();
        kinds.insert((av.clone(), def.kind.clone()));
        // Create-only review resources have no list.
        if def.supports(kapi_registry::Verb::List) {
            kinds.insert((av.clone(), def.list_kind.clone()));
        }
        for sub in &def.subresources {
            if sub.name() == "scale" {
                kinds.insert(("autoscaling/v1".to_string(), "Scale".to_string()));
            }
        }
    }
    for kind in [
        "Status",
        "DeleteOptions",
        "PartialObjectMetadata",
        "PartialObjectMetadataList",
    ] {
        kinds.insert(("meta.k8s.io/v1".into(), kind.into()));
    }
    kinds.insert(("v1".into(), "Status".into()));
    kinds.into_iter().collect()
}

#[test]
fn every_served_kind_round_trips() {
    let kinds = served_kinds();
    assert!(
        kinds.len() >= 20,
        "registry lists the served kinds: {kinds:?}"
    );
    for (av, kind) in kinds {
        let obj = top_level(&av, &kind);
        let bytes = kapi_protobuf::encode_object(&obj).unwrap();
        assert!(bytes.starts_with(kapi_protobuf::MAGIC));
        let back = kapi_protobuf::decode_object(&bytes, None).unwrap();
        assert_eq!(back, obj, "{av} {kind} changed in a round trip");
    }
}

/// The OpenAPI definition name of a `k8s-pb` message path.
fn definition(path: &str) -> String {
    format!(
        "io.k8s.{}",
        path.replace("apiextensions_apiserver", "apiextensions-apiserver")
            .replace("kube_aggregator", "kube-aggregator")
    )
}

/// Every property of the OpenAPI definition of message `idx` is a key of `v`,
/// the example with every field set, recursively.
/// `parent` names the definition an embedded (inline) message's fields are in.
fn check_names(
    defs: &Map<String, Value>,
    idx: usize,
    v: &Value,
    at: &str,
    parent: Option<&str>,
    seen: &mut usize,
) {
    let msg = Schema::get().message(idx);
    if msg.special != Special::None {
        return;
    }
    let name = parent.map_or_else(|| definition(msg.desc.path), str::to_owned);
    // prost renames a few messages (`GCEPersistentDisk…` → `GcePersistentDisk…`).
    let name = defs
        .keys()
        .find(|k| k.eq_ignore_ascii_case(&name))
        .cloned()
        .unwrap_or(name);
    let Some(def) = defs.get(&name) else {
        panic!("{at}: no OpenAPI definition {name}");
    };
    let props = def["properties"].as_object().cloned().unwrap_or_default();
    // Every JSON field of the served schema has its protobuf field (k8s-pb may
    // also carry fields newer than the served version; those are not checked).
    if parent.is_none() {
        for prop in props
            .keys()
            .filter(|p| !matches!(p.as_str(), "apiVersion" | "kind"))
        {
            assert!(
                v.get(prop).is_some(),
                "{at}: {name}.{prop} has no protobuf field"
            );
        }
    }
    for f in msg.desc.fields {
        if let (true, Ty::Message(m)) = (f.inline, f.ty) {
            check_names(defs, m, v, at, Some(&name), seen);
            continue;
        }
        let Some(fv) = v.get(f.json) else { continue };
        if !props.contains_key(f.json) {
            continue;
        }
        *seen += 1;
        if let Ty::Message(m) = f.ty {
            let children: Vec<&Value> = match f.label {
                Label::Optional => vec![fv],
                Label::Repeated => fv.as_array().unwrap().iter().collect(),
                Label::Map => fv.as_object().unwrap().values().collect(),
            };
            for c in children {
                check_names(defs, m, c, &format!("{at}.{}", f.json), None, seen);
            }
        }
    }
}

#[test]
fn field_names_match_the_openapi_schema() {
    let resources = kapi_resources::registry::builtin_resources();
    let doc: Value = serde_json::from_slice(
        &kapi_resources::openapi::OpenApi::build(&resources)
            .v2_json()
            .0,
    )
    .unwrap();
    let defs = doc["definitions"].as_object().unwrap();
    let mut seen = 0;
    for def in resources.iter().filter(|d| d.protobuf) {
        let idx = Schema::get()
            .by_gvk(&def.group, &def.version, &def.kind)
            .unwrap();
        check_names(defs, idx, &example(idx, 0), &def.kind, None, &mut seen);
    }
    assert!(seen > 1000, "checked {seen} fields");
}

/// Our bytes decode with the prost types and re-encode to the same bytes.
fn same_as_prost<M: prost::Message + Default>(api_version: &str, kind: &str) {
    let obj = top_level(api_version, kind);
    let ours = kapi_protobuf::encode_message(api_version, kind, &obj).unwrap();
    let typed = M::decode(ours.as_slice()).unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert_eq!(
        typed.encode_to_vec(),
        ours,
        "{kind}: prost re-encodes differently"
    );
}

#[test]
fn bytes_agree_with_the_k8s_pb_types() {
    use k8s_pb::api::{apps::v1 as apps, core::v1 as core};
    same_as_prost::<core::Pod>("v1", "Pod");
    same_as_prost::<core::ConfigMap>("v1", "ConfigMap");
    same_as_prost::<core::Secret>("v1", "Secret");
    same_as_prost::<core::Service>("v1", "Service");
    same_as_prost::<core::Namespace>("v1", "Namespace");
    same_as_prost::<core::Node>("v1", "Node");
    same_as_prost::<core::PodList>("v1", "PodList");
    same_as_prost::<apps::Deployment>("apps/v1", "Deployment");
    same_as_prost::<apps::StatefulSet>("apps/v1", "StatefulSet");
    same_as_prost::<k8s_pb::apimachinery::pkg::apis::meta::v1::Status>("v1", "Status");
    same_as_prost::<k8s_pb::apimachinery::pkg::apis::meta::v1::DeleteOptions>(
        "meta.k8s.io/v1",
        "DeleteOptions",
    );
}

/// Every message reachable from a served kind, with the path to it.
fn reachable_from_served_kinds() -> Vec<usize> {
    let schema = Schema::get();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<usize> = served_kinds()
        .iter()
        .map(|(av, kind)| schema.by_api_version(av, kind).unwrap())
        .collect();
    while let Some(idx) = todo.pop() {
        if !seen.insert(idx) {
            continue;
        }
        for f in schema.message(idx).desc.fields {
            if let Ty::Message(m) = f.ty {
                todo.push(m);
            }
        }
    }
    seen.into_iter().collect()
}

#[test]
fn go_facts_cover_every_served_message() {
    // Which fields are Go pointers decides which zeros survive a protobuf read;
    // a served message the table lacks would fall back to a guess.
    // Types k8s-pb has from releases after the facts' (kubectl 1.33); their
    // fields fall back to k8s-openapi's `Option`s.
    const NEWER: &[&str] = &[
        "api.core.v1.ContainerExtendedResourceRequest",
        "api.core.v1.ContainerRestartRule",
        "api.core.v1.ContainerRestartRuleOnExitCodes",
        "api.core.v1.FileKeySelector",
        "api.core.v1.PodCertificateProjection",
        "api.core.v1.PodExtendedResourceClaimStatus",
        "api.core.v1.WorkloadReference",
    ];
    let schema = Schema::get();
    let missing: Vec<&str> = reachable_from_served_kinds()
        .into_iter()
        .map(|idx| schema.message(idx))
        .filter(|m| m.special == Special::None && !m.desc.go_facts)
        .filter(|m| !NEWER.contains(&m.desc.path))
        .map(|m| m.desc.path)
        .collect();
    assert!(missing.is_empty(), "no Go facts for {missing:?}");
}

#[test]
fn pointer_fields_keep_their_zeros_and_plain_fields_drop_them() {
    let cases = [
        // (apiVersion, kind, written, read back)
        (
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"replicas": 0, "revisionHistoryLimit": 0, "minReadySeconds": 0,
                "podManagementPolicy": "", "ordinals": {"start": 0}}}),
            json!({"spec": {"replicas": 0, "revisionHistoryLimit": 0, "ordinals": {"start": 0}}}),
        ),
        (
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"storageClassName": "", "volumeName": ""}}),
            json!({"spec": {"storageClassName": ""}}),
        ),
        (
            "v1",
            "Pod",
            json!({"spec": {"hostNetwork": false, "enableServiceLinks": false,
                "containers": [{"name": "c", "stdin": false,
                    "securityContext": {"privileged": false, "runAsUser": 0}}]}}),
            json!({"spec": {"enableServiceLinks": false,
                "containers": [{"name": "c", "securityContext": {"privileged": false, "runAsUser": 0}}]}}),
        ),
        (
            "batch/v1",
            "Job",
            json!({"spec": {"suspend": false, "parallelism": 0, "completionMode": ""}}),
            // `completionMode` is a `*CompletionMode`.
            json!({"spec": {"suspend": false, "parallelism": 0, "completionMode": ""}}),
        ),
        (
            "v1",
            "Service",
            json!({"spec": {"allocateLoadBalancerNodePorts": false, "ports": [{"port": 0, "nodePort": 0}]}}),
            json!({"spec": {"allocateLoadBalancerNodePorts": false, "ports": [{"port": 0}]}}),
        ),
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"],
                "conditions": {"ready": false}}], "ports": [{"port": 0, "name": ""}]}),
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"],
                "conditions": {"ready": false}}], "ports": [{"port": 0, "name": ""}]}),
        ),
        // Lists without `omitempty` read as Go writes a nil slice.
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            json!({"metadata": {"name": "r"}}),
            json!({"metadata": {"name": "r", "creationTimestamp": null}, "rules": null}),
        ),
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"addressType": "IPv4"}),
            json!({"addressType": "IPv4", "endpoints": null, "ports": null}),
        ),
        // A zero `Time` in a struct field Go always writes.
        (
            "v1",
            "Pod",
            json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}]}}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}]}}),
        ),
    ];
    for (av, kind, written, read) in cases {
        let bytes = kapi_protobuf::encode_message(av, kind, &written).unwrap();
        let back = kapi_protobuf::decode_message(av, kind, &bytes).unwrap();
        assert_eq!(back, read, "{av} {kind}: {written}");
    }
}

#[test]
fn go_zero_values_decode_as_absent() {
    // What a Go client writes for `kubectl create configmap x`: every
    // non-pointer field, zero or not, and the zero creationTimestamp as an
    // empty message.
    let mut meta = Vec::new();
    let mut put = |tag: u8, v: &[u8]| {
        meta.push((tag << 3) | 2);
        meta.push(v.len() as u8);
        meta.extend_from_slice(v);
    };
    put(1, b"x"); // name
    put(2, b""); // generateName
    put(3, b""); // namespace
    put(8, b""); // creationTimestamp: zero Time
    meta.extend_from_slice(&[7 << 3, 0]); // generation: 0
    let mut cm = vec![(1 << 3) | 2, meta.len() as u8];
    cm.extend_from_slice(&meta);
    let v = kapi_protobuf::decode_message("v1", "ConfigMap", &cm).unwrap();
    assert_eq!(
        v,
        json!({"metadata": {"name": "x", "creationTimestamp": null}})
    );
    // A pointer field keeps its explicit zero.
    let spec = kapi_protobuf::encode_message(
        "apps/v1",
        "Deployment",
        &json!({"spec": {"replicas": 0, "minReadySeconds": 0}}),
    )
    .unwrap();
    let v = kapi_protobuf::decode_message("apps/v1", "Deployment", &spec).unwrap();
    assert_eq!(v, json!({"spec": {"replicas": 0}}));
    // A field Go writes without `omitempty` keeps its zero too.
    let pc = json!({"value": 0, "globalDefault": false});
    let bytes =
        kapi_protobuf::encode_message("scheduling.k8s.io/v1", "PriorityClass", &pc).unwrap();
    let v = kapi_protobuf::decode_message("scheduling.k8s.io/v1", "PriorityClass", &bytes).unwrap();
    assert_eq!(v, json!({"value": 0}));
    let job = json!({"spec": {"backoffLimit": 0, "template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 0}]}
    ]}}}});
    let bytes = kapi_protobuf::encode_message("batch/v1", "Job", &job).unwrap();
    let v = kapi_protobuf::decode_message("batch/v1", "Job", &bytes).unwrap();
    assert_eq!(v["spec"]["backoffLimit"], json!(0));
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        json!(0)
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}});
    let bytes = kapi_protobuf::encode_object(&cm).unwrap();
    // Every cut inside the envelope's type and raw message (the two trailing
    // empty strings are optional, as upstream).
    // (A cut at a field boundary is a valid, smaller message.)
    for cut in 0..bytes.len() - 4 {
        let r = kapi_protobuf::decode_object(&bytes[..cut], None);
        assert!(r.as_ref() != Ok(&cm), "truncated at {cut} decoded whole");
    }
    let half = kapi_protobuf::decode_object(&bytes[..bytes.len() / 2], None);
    assert_eq!(half, Err(kapi_protobuf::Error::Truncated));
    let mut wrong = bytes.clone();
    wrong[0] = b'x';
    assert_eq!(
        kapi_protobuf::decode_object(&wrong, None),
        Err(kapi_protobuf::Error::Magic)
    );
    // An unknown field number in the ConfigMap: a 400 for the request, as the
    // issue asks (strict, like JSON's unknown fields).
    let mut raw = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    raw.extend_from_slice(&[0x98, 0x06, 1]); // field 99, varint 1
    assert!(kapi_protobuf::decode_message("v1", "ConfigMap", &raw).is_err());
    // But a known field with the wrong wire type, or an illegal wire type, is an error.
    let mut bad = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    bad.extend_from_slice(&[0x08, 1]); // field 1 (metadata, a message) as a varint
    assert!(kapi_protobuf::decode_message("v1", "ConfigMap", &bad).is_err());
    let mut bad = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    bad.extend_from_slice(&[0x9e, 0x06]); // field 99, wire type 6
    assert!(kapi_protobuf::decode_message("v1", "ConfigMap", &bad).is_err());
    // A kind nobody registered.
    let mut other = cm.clone();
    other["kind"] = json!("Widget");
    assert!(matches!(
        kapi_protobuf::encode_object(&other),
        Err(kapi_protobuf::Error::UnknownKind { .. })
    ));
}

#[test]
fn watch_frames_round_trip() {
    // Go writes `creationTimestamp` (a struct) even when zero: `null` in JSON.
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
                    "metadata": {"name": "a", "creationTimestamp": null}});
    let mut stream = kapi_protobuf::encode_watch_frame("ADDED", &cm).unwrap();
    assert_eq!(&stream[..4], &((stream.len() - 4) as u32).to_be_bytes());
    stream.extend(kapi_protobuf::encode_watch_frame("DELETED", &cm).unwrap());
    let ((t1, o1), rest) = kapi_protobuf::decode_watch_frame(&stream).unwrap().unwrap();
    let ((t2, o2), rest) = kapi_protobuf::decode_watch_frame(rest).unwrap().unwrap();
    assert_eq!(
        (t1.as_str(), t2.as_str(), &o1, &o2),
        ("ADDED", "DELETED", &cm, &cm)
    );
    assert!(rest.is_empty());
    assert!(kapi_protobuf::decode_watch_frame(&stream[..10])
        .unwrap()
        .is_none());
}

/// A list written from its parts (the head, then each item's message bytes, as
/// the server streams a LIST from the watch cache) is byte for byte the list
/// `encode_object` writes, for every served list kind.
#[test]
fn lists_assembled_from_item_bytes_are_identical() {
    let mut lists = 0;
    for (av, kind) in served_kinds() {
        let Some(item_kind) = kind.strip_suffix("List") else {
            continue;
        };
        let mut items = Vec::new();
        for i in 0..3 {
            let mut item = top_level(&av, item_kind);
            item["metadata"]["name"] = json!(format!("item-{i}"));
            items.push(item);
        }
        let meta = json!({"resourceVersion": "42", "continue": "c", "remainingItemCount": 7});
        let whole = json!({"apiVersion": av, "kind": kind, "metadata": meta, "items": items});
        let expected = kapi_protobuf::encode_object(&whole).unwrap();
        let parts = kapi_protobuf::list_parts(&av, &kind, &meta).unwrap();
        let mut raw = parts.head.clone();
        for item in &items {
            let bytes = kapi_protobuf::encode_message(&av, item_kind, item).unwrap();
            let at = raw.len();
            kapi_protobuf::put_item_key(&mut raw, parts.items_tag, bytes.len());
            assert_eq!(
                raw.len() - at,
                kapi_protobuf::item_key_len(parts.items_tag, bytes.len())
            );
            raw.extend_from_slice(&bytes);
        }
        let mut streamed = kapi_protobuf::envelope_head(&av, &kind, raw.len());
        streamed.extend_from_slice(&raw);
        streamed.extend_from_slice(kapi_protobuf::ENVELOPE_TAIL);
        assert_eq!(streamed, expected, "{av} {kind}");
        lists += 1;
    }
    assert!(lists >= 20, "{lists} list kinds");
    // Enveloping and framing kept message bytes is what the one-step encoders write.
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}});
    let raw = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    let enveloped = kapi_protobuf::envelope("v1", "ConfigMap", &raw);
    assert_eq!(enveloped, kapi_protobuf::encode_object(&cm).unwrap());
    assert_eq!(
        kapi_protobuf::watch_frame("ADDED", &enveloped),
        kapi_protobuf::encode_watch_frame("ADDED", &cm).unwrap()
    );
    // Large items need multi-byte lengths.
    assert_eq!(kapi_protobuf::item_key_len(2, 300), 3);
    assert_eq!(kapi_protobuf::item_key_len(2, 127), 2);
}

#[path = "roundtrip/stored.rs"]
mod stored;

/// The encoder finds an object's fields by name and writes them in tag order:
/// the order of the JSON members, and members that are no field, change
/// nothing (with a field written even when unset, and a null struct field).
#[test]
fn member_order_and_unknown_members_do_not_change_the_bytes() {
    let ordered = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n", "uid": "u",
                     "creationTimestamp": null, "labels": {"a": "1", "b": "2"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "1"}},
                 "template": {"metadata": {"labels": {"a": "1"}},
                              "spec": {"containers": [{"name": "c", "image": "i",
                                                       "ports": [{"containerPort": 80}]}]}}}
    });
    let shuffled = json!({
        "spec": {"notAField": 1,
                 "template": {"spec": {"containers": [{"ports": [{"notAField": true, "containerPort": 80}],
                                                       "image": "i", "name": "c"}]},
                              "metadata": {"labels": {"a": "1"}}},
                 "selector": {"matchLabels": {"a": "1"}}, "replicas": 2},
        "metadata": {"labels": {"b": "2", "a": "1"}, "creationTimestamp": null,
                     "notAField": "x", "uid": "u", "namespace": "n", "name": "d"},
        "kind": "Deployment", "apiVersion": "apps/v1"
    });
    let encode = |v: &Value| kapi_protobuf::encode_message("apps/v1", "Deployment", v).unwrap();
    assert_eq!(encode(&ordered), encode(&shuffled));
    // A map's entries go out in key order (as Go's marshalers write them),
    // so they read back sorted, as upstream answers them.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
        "data": {"b": "2", "a": "1", "B": "3", "ab": "4", "": "5"}});
    let bytes = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    let back = kapi_protobuf::decode_message("v1", "ConfigMap", &bytes).unwrap();
    let keys: Vec<&str> = back["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["", "B", "a", "ab", "b"]);
    let sorted = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
        "data": {"": "5", "B": "3", "a": "1", "ab": "4", "b": "2"}});
    assert_eq!(
        kapi_protobuf::encode_message("v1", "ConfigMap", &sorted).unwrap(),
        bytes
    );
    // ObjectMeta without creationTimestamp still writes it (empty), once.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let null = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "creationTimestamp": null}});
    let cm = |v: &Value| kapi_protobuf::encode_message("v1", "ConfigMap", v).unwrap();
    assert_eq!(cm(&bare), cm(&null));
    let decoded = kapi_protobuf::decode_message("v1", "ConfigMap", &cm(&bare));
    assert!(decoded.is_ok(), "{decoded:?}");
}

#[path = "roundtrip/transcode.rs"]
mod transcode;

#[path = "roundtrip/resource_version.rs"]
mod resource_version;
