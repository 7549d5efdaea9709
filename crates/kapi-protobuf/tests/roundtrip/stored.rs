//! What storage holds: every stored built-in kind through the storage codec
//! in each media type, values a newer or older kube-apiserver wrote, and the
//! raw JSON values of a definition's schema.

use serde_json::{json, Value};

use super::top_level;
use kapi_protobuf::Schema;

/// What storage holds of every stored built-in kind, at its storage version,
/// reads back unchanged whichever media type wrote it: protobuf (`k8s\0`
/// envelope) for kube-apiserver's own kinds, JSON for the apiextensions and
/// aggregator servers' kinds, as upstream.
#[test]
fn every_stored_kind_round_trips_through_the_storage_codec() {
    use kapi_registry::{MediaType, Origin, StorageCodec};
    let mut defs = kapi_resources::registry::builtin_resources();
    defs.push(kapi_apiextensions::crd::definitions_resource());
    let mut checked = 0;
    for def in defs {
        let stored = def.supports(kapi_registry::Verb::Create)
            && def.supports(kapi_registry::Verb::Get)
            && def.resource != "componentstatuses";
        let av = match &def.conversion {
            Some(c) => c.storage_api_version().to_owned(),
            None => def.api_version(),
        };
        if !stored || Schema::get().by_api_version(&av, &def.kind).is_none() {
            continue;
        }
        let obj = top_level(&av, &def.kind);
        for media in MediaType::ALL {
            let codec = StorageCodec::new(media);
            let bytes = codec.encode(def.origin, &obj).unwrap();
            let protobuf = bytes.starts_with(kapi_protobuf::MAGIC);
            let want_protobuf = media == MediaType::Protobuf && def.origin == Origin::Builtin;
            assert_eq!(protobuf, want_protobuf, "{av} {} in {media:?}", def.kind);
            let back = StorageCodec::default().decode(&bytes).unwrap();
            assert_eq!(back, obj, "{av} {} written as {media:?}", def.kind);
        }
        checked += 1;
    }
    assert!(checked >= 50, "{checked} kinds");
}

/// Storage reads skip field numbers the schema does not know (a newer
/// kube-apiserver's fields); a request body with one is refused.
#[test]
fn stored_objects_with_unknown_fields_still_read() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
                    "metadata": {"name": "a", "creationTimestamp": "2024-01-02T03:04:05Z"},
                    "data": {"k": "v"}});
    let mut raw = kapi_protobuf::encode_message("v1", "ConfigMap", &cm).unwrap();
    raw.extend_from_slice(&[0xf8, 0x06, 0x01]); // field 111, varint 1
    let bytes = kapi_protobuf::envelope("v1", "ConfigMap", &raw);
    assert!(kapi_protobuf::decode_object(&bytes, None).is_err());
    assert_eq!(kapi_protobuf::decode_stored(&bytes).unwrap(), cm);
}

/// What kube-apiserver 1.28 stored and served: lists Go writes without
/// `omitempty` read as `null` when empty, pointer fields keep their zero, and
/// a zero `creationTimestamp` (a struct in Go, always written) reads as `null`.
#[test]
fn reads_as_upstream_serves() {
    let slice = json!({"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
        "metadata": {"name": "s", "creationTimestamp": "2024-01-02T03:04:05Z"},
        "addressType": "IPv4"});
    let back = kapi_protobuf::decode_object(&kapi_protobuf::encode_object(&slice).unwrap(), None);
    let back = back.unwrap();
    assert_eq!(
        (&back["endpoints"], &back["ports"]),
        (&Value::Null, &Value::Null)
    );
    assert!(back.as_object().unwrap().contains_key("endpoints"));
    let job = json!({"kind": "Job", "apiVersion": "batch/v1",
        "spec": {"template": {"metadata": {}, "spec": {"volumes": [
            {"name": "h", "hostPath": {"path": "/x", "type": ""}}]}}},
        "status": {"ready": 0}});
    let back = kapi_protobuf::decode_object(&kapi_protobuf::encode_object(&job).unwrap(), None);
    let back = back.unwrap();
    assert_eq!(back["status"]["ready"], 0);
    assert_eq!(
        back["spec"]["template"]["metadata"],
        json!({"creationTimestamp": null})
    );
    assert_eq!(
        back["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["type"],
        ""
    );
}

/// A CustomResourceDefinition's schema values (`default`, `enum`,
/// `example`) are apiextensions' `JSON`: raw JSON bytes of any JSON value.
#[test]
fn schema_values_of_a_definition_are_raw_json() {
    let crd = json!({"kind": "CustomResourceDefinition",
        "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"name": "examples.x.example.com", "creationTimestamp": null},
        "spec": {"group": "x.example.com", "scope": "Namespaced",
            "names": {"plural": "examples", "kind": "Example"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 3, "example": 5},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "opts": {"type": "object", "default": {"x": [1, null]}}}}}}]},
        "status": {}});
    let bytes = kapi_protobuf::encode_object(&crd).unwrap();
    let back = kapi_protobuf::decode_object(&bytes, None).unwrap();
    let props = &back["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(props["size"]["default"], 3);
    assert_eq!(props["size"]["example"], 5);
    assert_eq!(props["mode"]["enum"], json!(["a", "b"]));
    assert_eq!(props["opts"]["default"], json!({"x": [1, null]}));
}
