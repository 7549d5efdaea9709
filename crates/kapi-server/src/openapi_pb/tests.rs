//! Round trips through a small hand-written protobuf decoder: the structure
//! kubectl reads (definitions with their GVK extension, PATCH parameters) must
//! be where gnostic's `OpenAPIv2.proto` puts it.

use serde_json::{json, Value};

use super::encode_document;

/// One decoded field value.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*pos];
        *pos += 1;
        out |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return out;
        }
    }
    panic!("varint too long");
}

/// Every field of a message, in order; panics on malformed input.
fn decode(b: &[u8]) -> Vec<(u32, Wire<'_>)> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < b.len() {
        let key = varint(b, &mut pos);
        let field = u32::try_from(key >> 3).unwrap();
        let value = match key & 7 {
            0 => Wire::Varint(varint(b, &mut pos)),
            1 => {
                let bytes: [u8; 8] = b[pos..pos + 8].try_into().unwrap();
                pos += 8;
                Wire::Fixed64(u64::from_le_bytes(bytes))
            }
            2 => {
                let len = usize::try_from(varint(b, &mut pos)).unwrap();
                pos += len;
                Wire::Bytes(&b[pos - len..pos])
            }
            w => panic!("unexpected wire type {w}"),
        };
        out.push((field, value));
    }
    assert_eq!(pos, b.len(), "message overruns its length");
    out
}

/// The length-delimited values of `field`.
fn all(b: &[u8], field: u32) -> Vec<&[u8]> {
    decode(b)
        .into_iter()
        .filter(|(f, _)| *f == field)
        .map(|(_, v)| match v {
            Wire::Bytes(bytes) => bytes,
            other => panic!("field {field} is {other:?}, not bytes"),
        })
        .collect()
}

/// The single length-delimited value of `field`.
fn one(b: &[u8], field: u32) -> &[u8] {
    let values = all(b, field);
    assert_eq!(
        values.len(),
        1,
        "field {field} occurs {} times",
        values.len()
    );
    values[0]
}

fn string(b: &[u8], field: u32) -> &str {
    std::str::from_utf8(one(b, field)).unwrap()
}

fn scalar(b: &[u8], field: u32) -> Option<Wire<'_>> {
    decode(b)
        .into_iter()
        .find(|(f, _)| *f == field)
        .map(|x| x.1)
}

/// The value of the `Named*` entry called `name` among `field`.
fn named<'a>(b: &'a [u8], field: u32, name: &str) -> &'a [u8] {
    all(b, field)
        .into_iter()
        .find(|entry| string(entry, 1) == name)
        .map(|entry| one(entry, 2))
        .unwrap_or_else(|| panic!("no entry {name}"))
}

/// The YAML (JSON) text of the vendor extension `name`, parsed.
fn extension(b: &[u8], field: u32, name: &str) -> Value {
    serde_json::from_str(string(named(b, field, name), 2)).unwrap()
}

fn sample() -> Value {
    let long = "x".repeat(300);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": {
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
                "patch": {
                    "operationId": "patchAppsV1NamespacedDeployment",
                    "consumes": ["application/apply-patch+yaml"],
                    "parameters": [
                        {"in": "body", "name": "body", "required": true,
                         "schema": {"type": "object"}},
                        {"in": "query", "name": "fieldValidation", "type": "string",
                         "uniqueItems": true, "description": long},
                    ],
                    "responses": {"200": {"description": "OK",
                        "schema": {"$ref": "#/definitions/D"}}},
                    "x-kubernetes-group-version-kind":
                        {"group": "apps", "kind": "Deployment", "version": "v1"},
                },
                "parameters": [
                    {"in": "path", "name": "name", "required": true, "type": "string"},
                    {"$ref": "#/parameters/pretty"},
                ],
            },
        },
        "definitions": {
            "D": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "closed": {"type": "object", "additionalProperties": false},
                    "ports": {"type": "array", "items": {"$ref": "#/definitions/P"},
                              "x-kubernetes-list-map-keys": ["port"]},
                    "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                    "ratio": {"type": "number", "maximum": 2.5, "maxLength": 300},
                },
                "x-kubernetes-group-version-kind":
                    [{"group": "apps", "kind": "Deployment", "version": "v1"}],
            },
        },
    })
}

#[test]
fn document_header_and_definitions() {
    let pb = encode_document(&sample());
    assert_eq!(string(&pb, 1), "2.0");
    assert_eq!(string(one(&pb, 2), 1), "Kubernetes");
    let d = named(one(&pb, 9), 1, "D");
    assert_eq!(string(one(d, 22), 1), "object");
    assert_eq!(string(d, 19), "spec");
    let gvk = extension(d, 31, "x-kubernetes-group-version-kind");
    assert_eq!(gvk[0]["kind"], "Deployment");

    let props = one(d, 25);
    let labels = named(props, 1, "labels");
    let inner = one(one(labels, 21), 1);
    assert_eq!(string(one(inner, 22), 1), "string");
    let closed = named(props, 1, "closed");
    assert!(matches!(scalar(one(closed, 21), 2), Some(Wire::Varint(0))));
    let ports = named(props, 1, "ports");
    assert_eq!(string(one(one(ports, 23), 1), 1), "#/definitions/P");
    assert_eq!(
        extension(ports, 31, "x-kubernetes-list-map-keys"),
        json!(["port"])
    );
    let mode = named(props, 1, "mode");
    let enums: Vec<&str> = all(mode, 20).into_iter().map(|a| string(a, 2)).collect();
    assert_eq!(enums, ["\"A\"\n", "\"B\"\n"]);
    assert_eq!(string(one(mode, 5), 2), "\"A\"\n");
    let ratio = named(props, 1, "ratio");
    assert!(matches!(scalar(ratio, 7), Some(Wire::Fixed64(b)) if b == 2.5f64.to_bits()));
    assert!(matches!(scalar(ratio, 11), Some(Wire::Varint(300))));
}

#[test]
fn patch_operation_parameters() {
    let pb = encode_document(&sample());
    let path = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}";
    let item = named(one(&pb, 8), 2, path);
    let patch = one(item, 8);
    assert_eq!(string(patch, 5), "patchAppsV1NamespacedDeployment");
    let gvk = extension(patch, 13, "x-kubernetes-group-version-kind");
    assert_eq!(gvk["group"], "apps");

    let params = all(patch, 8);
    let body = one(one(params[0], 1), 1);
    assert_eq!(string(body, 3), "body");
    assert!(matches!(scalar(body, 4), Some(Wire::Varint(1))));
    assert_eq!(string(one(one(body, 5), 22), 1), "object");
    // ParametersItem → Parameter → NonBodyParameter → QueryParameterSubSchema.
    let query = one(one(one(params[1], 1), 2), 3);
    assert_eq!(string(query, 4), "fieldValidation");
    assert_eq!(string(query, 6), "string");
    assert_eq!(string(query, 3).len(), 300);
    assert!(matches!(scalar(query, 20), Some(Wire::Varint(1))));

    let ok = named(one(patch, 9), 1, "200");
    let schema = one(one(one(ok, 1), 2), 1);
    assert_eq!(string(schema, 1), "#/definitions/D");

    let path_params = all(item, 9);
    let name = one(one(one(path_params[0], 1), 2), 4);
    assert_eq!(string(name, 4), "name");
    assert_eq!(string(name, 5), "string");
    assert_eq!(string(one(path_params[1], 2), 1), "#/parameters/pretty");
}

#[test]
fn empty_values_are_left_out() {
    let pb = encode_document(&json!({"swagger": "", "definitions": {"E": {}}}));
    assert!(scalar(&pb, 1).is_none());
    // An empty schema is still present: a NamedSchema with an empty value.
    let entry = one(one(&pb, 9), 1);
    assert_eq!(string(entry, 1), "E");
    assert!(one(entry, 2).is_empty());
}

#[test]
fn served_document_declares_field_validation_on_patch() {
    let resources = kapi_resources::registry::builtin_resources();
    let api = kapi_resources::openapi::OpenApi::build(&resources);
    let (json, _) = api.v2_shared();
    let doc: Value = serde_json::from_slice(&json).unwrap();
    let pb = encode_document(&doc);

    let defs = all(one(&pb, 9), 1);
    assert_eq!(defs.len(), doc["definitions"].as_object().unwrap().len());
    let deployment = named(one(&pb, 9), 1, "io.k8s.api.apps.v1.Deployment");
    let gvk = extension(deployment, 31, "x-kubernetes-group-version-kind");
    assert_eq!(
        gvk,
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );

    let path = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}";
    let patch = one(named(one(&pb, 8), 2, path), 8);
    let gvk = extension(patch, 13, "x-kubernetes-group-version-kind");
    assert_eq!(gvk["kind"], "Deployment");
    let names: Vec<&str> = all(patch, 8)
        .into_iter()
        .filter_map(|item| {
            let non_body = all(one(item, 1), 2);
            let query = all(non_body.first()?, 3);
            Some(string(query.first()?, 4))
        })
        .collect();
    assert!(names.contains(&"fieldValidation"), "{names:?}");
}
