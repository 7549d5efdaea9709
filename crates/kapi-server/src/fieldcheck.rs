//! `fieldValidation`: unknown and duplicate fields in request bodies, as upstream —
//! `Strict` rejects them with 400, `Warn` (the default) reports them in `Warning`
//! headers, `Ignore` drops them silently. Unknown means: not in the resource's
//! OpenAPI schema (see `kapi_resources::openapi`).

use axum::http::HeaderValue;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use serde_json::Value;

use crate::handlers::Ctx;
use crate::Server;

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
