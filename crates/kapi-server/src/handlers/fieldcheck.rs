//! `fieldValidation`: unknown and duplicate fields in request bodies, as upstream —
//! `Strict` rejects them with 400, `Warn` (the default) reports them in `Warning`
//! headers, `Ignore` drops them silently. Unknown means: not in the resource's
//! OpenAPI schema (see `kapi_resources::openapi`).

use axum::http::HeaderValue;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use serde_json::Value;

use crate::handlers::Ctx;
use crate::server::Server;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ignore,
    Warn,
    Strict,
}

pub fn mode(ctx: &Ctx) -> Result<Mode, ApiError> {
    match ctx.query.get("fieldValidation") {
        None | Some("") | Some("Warn") => Ok(Mode::Warn),
        Some("Ignore") => Ok(Mode::Ignore),
        Some("Strict") => Ok(Mode::Strict),
        Some(other) => Err(ApiError::bad_request(format!(
            "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
        ))),
    }
}

impl Server {
    /// Unknown fields of `obj` under the request's mode: an error under Strict,
    /// otherwise the warnings to send.
    pub fn check_fields(&self, ctx: &Ctx, obj: &Value) -> Result<Vec<String>, ApiError> {
        let mode = mode(ctx)?;
        if mode == Mode::Ignore {
            return Ok(Vec::new());
        }
        let unknown = self.unknown_fields(&ctx.entry.def, obj);
        if unknown.is_empty() {
            return Ok(Vec::new());
        }
        let msgs: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        if mode == Mode::Strict {
            let def = &ctx.entry.def;
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
                msgs.join(", "),
                kind = def.kind,
                v = def.version,
            )));
        }
        Ok(msgs)
    }
}

pub fn add_warnings(resp: &mut Response, warnings: &[String]) {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("Warning", v);
        }
    }
}

/// Maps whose values are `[]byte` upstream, so base64 in JSON: decoding a
/// value that is not base64 fails there before anything else runs.
const BYTE_MAPS: &[(&str, &str, &str)] = &[("", "Secret", "data"), ("", "ConfigMap", "binaryData")];

/// The decode error upstream reports for a `[]byte` map value that is not
/// base64 (`illegal base64 data at input byte N`), if `obj` has one.
pub fn bad_bytes(def: &kapi_registry::ResourceDef, obj: &Value) -> Option<String> {
    use base64::Engine as _;
    let (_, _, field) = BYTE_MAPS
        .iter()
        .find(|(g, k, _)| *g == def.group && *k == def.kind)?;
    let map = obj.get(*field)?.as_object()?;
    map.values().find_map(|v| {
        let text = v.as_str()?;
        let err = base64::engine::general_purpose::STANDARD
            .decode(text)
            .err()?;
        let at = match err {
            base64::DecodeError::InvalidByte(at, _) => at,
            base64::DecodeError::InvalidLastSymbol(at, _) => at,
            _ => text.len(),
        };
        Some(format!("illegal base64 data at input byte {at}"))
    })
}

/// [`bad_bytes`] as upstream answers it for a request body: 400, the object
/// cannot be decoded.
pub fn check_bytes(def: &kapi_registry::ResourceDef, obj: &Value) -> Result<(), ApiError> {
    match bad_bytes(def, obj) {
        None => Ok(()),
        Some(e) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: {e}",
            kind = def.kind,
            v = def.version,
        ))),
    }
}
