//! A custom resource version's OpenAPI definition, as upstream's
//! `controller/openapi/builder`: the version's schema with `apiVersion`, `kind`
//! and `metadata` (a `$ref` to ObjectMeta) filled in and the
//! `x-kubernetes-group-version-kind` extension, whole (as OpenAPI v3
//! publishes it; the v2 document makes its own form of it,
//! `kapi_resources::openapi`), so `kubectl explain` and client-side
//! validation see the kind.

use serde_json::{json, Map, Value};

const OBJECT_META: &str = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The definition of `group/version` `kind` with schema `schema`.
pub fn definition(schema: &Value, group: &str, version: &str, kind: &str) -> Value {
    let mut def = schema.clone();
    if !def.is_object() {
        def = json!({});
    }
    let root = def.as_object_mut().expect("made an object");
    root.entry("type").or_insert_with(|| "object".into());
    let props = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"description": API_VERSION_DOC, "type": "string"}),
        );
        props.insert(
            "kind".into(),
            json!({"description": KIND_DOC, "type": "string"}),
        );
        props.insert(
            "metadata".into(),
            json!({"$ref": OBJECT_META, "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    root.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": group, "kind": kind, "version": version}]),
    );
    def
}
