//! Content negotiation: decoding request bodies (JSON, YAML, Kubernetes
//! protobuf) and encoding responses as JSON, YAML or protobuf, as objects,
//! `Table` or `PartialObjectMetadata`, chosen from the `Accept` header as
//! upstream does; errors as `metav1.Status` in the client's preferred format.
//! Protobuf is offered only for kinds `kapi_protobuf` has a message for (never
//! custom resources: [`ResourceDef::protobuf`]) and for `PartialObjectMetadata`
//! of any resource, never for `Table`, which upstream has no message for.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use kapi_machinery::status::ApiError;
use kapi_registry::ResourceDef;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    Protobuf,
}

/// What representation of the object(s) the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Object,
    Table,
    PartialMetadata,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accept {
    pub format: Format,
    pub view: View,
}

impl Accept {
    pub const JSON: Accept = Accept {
        format: Format::Json,
        view: View::Object,
    };
}

/// The serializers' media types: what a body may be in, and what a refusal
/// names (upstream's handlers name these three whatever the resource or
/// view — a custom resource too, though it is never served as protobuf).
pub const SERIALIZER_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Pick the first acceptable media type from `Accept`; `protobuf` says whether
/// the resource has a protobuf form.
pub fn negotiate(accept: Option<&str>, protobuf: bool) -> Result<Accept, ApiError> {
    negotiate_for(accept, protobuf, true)
}

/// [`negotiate`] for a path that may have no `Table` form: upstream's
/// create-only resources and subresources (reviews, bindings, evictions,
/// tokens) have no table converter, so `as=Table` is not acceptable there.
pub fn negotiate_for(
    accept: Option<&str>,
    protobuf: bool,
    table: bool,
) -> Result<Accept, ApiError> {
    let picked = pick(accept, protobuf, table);
    picked.ok_or_else(|| ApiError::not_acceptable_types(SERIALIZER_TYPES))
}

fn pick(accept: Option<&str>, protobuf: bool, table: bool) -> Option<Accept> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Some(Accept::JSON);
    };
    for item in accept.split(',') {
        let mut parts = item.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: Vec<(String, String)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let param = |k: &str| {
            params
                .iter()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str())
        };
        let format = match media.as_str() {
            "application/json" | "application/*" | "*/*" => Format::Json,
            "application/yaml" => Format::Yaml,
            "application/vnd.kubernetes.protobuf" => Format::Protobuf,
            _ => continue,
        };
        let view = match (param("as"), param("g"), param("v")) {
            (None, _, _) => View::Object,
            (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1")) => View::Table,
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1" | "v1beta1"),
            ) => View::PartialMetadata,
            _ => continue,
        };
        // Table has no protobuf message; a kind without one (a custom resource)
        // is not protobuf, though its PartialObjectMetadata is (as upstream's
        // custom resource handler, which kube-controller-manager's metadata
        // informers rely on).
        if format == Format::Protobuf
            && (view == View::Table || (view == View::Object && !protobuf))
        {
            continue;
        }
        if view == View::Table && !table {
            continue;
        }
        return Some(Accept { format, view });
    }
    None
}

/// Whether the resource is served as protobuf: declared so (never a custom
/// resource) and its kind has a protobuf message.
pub fn protobuf_kind(def: &ResourceDef) -> bool {
    def.protobuf && kapi_protobuf::supports(&def.group, &def.version, &def.kind)
}

pub fn encode(value: &Value, format: Format) -> Result<Vec<u8>, ApiError> {
    match format {
        // As Go's `json.Encoder`, which upstream's serializer writes with: the
        // value, then a newline.
        Format::Json => {
            let mut out = serde_json::to_vec(value).expect("JSON values serialize");
            out.push(b'\n');
            Ok(out)
        }
        // As upstream's YAML serializer: keys in Go's YAML encoder order.
        Format::Yaml => Ok(kapi_registry::codec::to_go_yaml(value)
            .unwrap_or_default()
            .into_bytes()),
        Format::Protobuf => kapi_protobuf::encode_object(value).map_err(|e| {
            tracing::error!(error = %e, "protobuf encoding of a response failed");
            ApiError::internal(format!("unable to encode the response as protobuf: {e}"))
        }),
    }
}

fn content_type(format: Format) -> &'static str {
    match format {
        Format::Json => "application/json",
        Format::Yaml => "application/yaml",
        Format::Protobuf => kapi_protobuf::MEDIA_TYPE,
    }
}

pub fn respond(code: StatusCode, value: &Value, format: Format) -> Response {
    let bytes = match encode(value, format) {
        Ok(b) => b,
        Err(e) => return error_response(&e),
    };
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(format)),
    );
    resp
}

pub fn error_response(err: &ApiError) -> Response {
    error_response_as(err, Format::Json)
}

/// An error as a `Status` in the format the client's `Accept` prefers (JSON
/// unless protobuf comes first, as upstream encodes errors with the negotiated
/// serializer).
pub fn error_response_for(err: &ApiError, accept: Option<&str>) -> Response {
    let format = match negotiate(accept, true) {
        Ok(Accept {
            format: Format::Protobuf,
            ..
        }) => Format::Protobuf,
        _ => Format::Json,
    };
    error_response_as(err, format)
}

fn error_response_as(err: &ApiError, format: Format) -> Response {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = respond(code, &err.to_status(), format);
    if let Some(secs) = err.details.as_ref().and_then(|d| d.retry_after_seconds) {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

pub use crate::decode::*;

/// `includeObject` for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> Result<Self, ApiError> {
        match v {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

/// `metadata` of an object as a `PartialObjectMetadata`.
pub fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

pub fn partial_list(items: &[Value], list_meta: Map<String, Value>) -> Value {
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": items.iter().map(partial).collect::<Vec<_>>(),
    })
}

/// A `meta.k8s.io/v1` Table of `items`.
pub fn table(
    def: &ResourceDef,
    items: &[Value],
    list_meta: Map<String, Value>,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let strategy = &def.strategy;
    let columns: Vec<Value> = if with_columns {
        strategy.column_definitions()
    } else {
        Vec::new()
    };
    let mut ordered: Vec<&Value> = items.iter().collect();
    strategy.sort_table_rows(&mut ordered);
    let rows: Vec<Value> = ordered
        .into_iter()
        .map(|obj| {
            let mut row = json!({"cells": strategy.cells(obj)});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial(obj),
                IncludeObject::Object => row["object"] = obj.clone(),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_first_supported() {
        let pb_first = Some("application/vnd.kubernetes.protobuf,application/json");
        assert_eq!(negotiate(pb_first, false).unwrap(), Accept::JSON);
        let a = negotiate(pb_first, true).unwrap();
        assert_eq!((a.format, a.view), (Format::Protobuf, View::Object));
        let table_pb = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(negotiate(Some(table_pb), true).unwrap_err().code, 406);
        let meta_pb =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
        let a = negotiate(Some(meta_pb), true).unwrap();
        assert_eq!(
            (a.format, a.view),
            (Format::Protobuf, View::PartialMetadata)
        );
        let a = negotiate(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        ), false)
        .unwrap();
        assert_eq!(a.view, View::Table);
        assert_eq!(
            negotiate(Some("application/yaml"), true).unwrap().format,
            Format::Yaml
        );
        let err = negotiate(Some("application/vnd.kubernetes.protobuf"), false).unwrap_err();
        assert_eq!(err.code, 406);
        // A kind without protobuf still has protobuf PartialObjectMetadata.
        let a = negotiate(Some(meta_pb), false).unwrap();
        assert_eq!(
            (a.format, a.view),
            (Format::Protobuf, View::PartialMetadata)
        );
    }

    #[test]
    fn protobuf_bodies_only_for_resources_served_as_protobuf() {
        use std::sync::Arc;
        let def = |protobuf: bool| ResourceDef {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            singular: "configmap".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            namespaced: true,
            verbs: kapi_registry::Verb::ALL.to_vec(),
            subresources: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            strategy: Arc::new(kapi_registry::DefaultStrategy),
            key_prefix: "/configmaps".into(),
            conversion: None,
            protobuf,
            origin: kapi_registry::Origin::Builtin,
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let body = kapi_protobuf::encode_object(&cm).unwrap();
        let pb = Some("application/vnd.kubernetes.protobuf");
        // Go writes ObjectMeta's creationTimestamp (a struct) even when zero:
        // it reads back as `null`, as upstream's decoded body shows it.
        let mut want = cm.clone();
        want["metadata"]["creationTimestamp"] = json!(null);
        assert_eq!(decode_object_body(&def(true), pb, &body).unwrap(), want);
        let custom = def(false);
        assert!(!protobuf_kind(&custom));
        assert_eq!(
            decode_object_body(&custom, pb, &body).unwrap_err().code,
            415
        );
        let json_body = serde_json::to_vec(&cm).unwrap();
        assert_eq!(decode_object_body(&custom, None, &json_body).unwrap(), cm);
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let deep = "[".repeat(1000) + &"]".repeat(1000);
        assert_eq!(decode_json(deep.as_bytes()).unwrap_err().code, 400);
        assert!(decode_json(br#"{"a":"[[[[[["}"#).is_ok());
    }

    /// Numbers parse to the correctly rounded double, as Go's decoder does
    /// (serde_json's `float_roundtrip`; found by the request-decoder fuzz target).
    #[test]
    fn long_decimals_parse_correctly_rounded() {
        for text in [
            "4".repeat(43),
            format!("0.{}", "7".repeat(40)),
            "1.7976931348623157e308".into(),
        ] {
            let v = decode_json(text.as_bytes()).unwrap();
            assert_eq!(v.as_f64(), Some(text.parse::<f64>().unwrap()), "{text}");
            let again = decode_json(serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
            assert_eq!(again, v, "{text}");
        }
    }
}
