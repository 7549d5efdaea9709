//! `fieldValidation`: unknown and duplicate fields in request bodies, as upstream —
//! `Strict` rejects them (400 for a body, 422 on the field `patch` for a
//! patch), `Warn` (the default) reports them in `Warning` headers, `Ignore`
//! drops them silently, each in the order upstream's decoder meets them.
//! Unknown means: not in the resource's OpenAPI schema (see
//! `kapi_resources::openapi`); duplicate: a key a JSON object repeats (by
//! path) or a YAML mapping repeats (by line, `kapi_http::strict`).

use axum::http::HeaderValue;
use axum::response::Response;
use kapi_http::negotiate::Duplicates;
use kapi_http::strict::{JsonDup, YamlDup};
use kapi_machinery::member::Members;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::go_quote;
use serde_json::Value;

use crate::handlers::Ctx;
use crate::server::Server;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ignore,
    Warn,
    Strict,
}

/// The request's `fieldValidation` (already validated with the write's
/// options, `Ctx::write_options`).
pub fn mode(ctx: &Ctx) -> Result<Mode, ApiError> {
    match ctx.query.get("fieldValidation") {
        Some("Ignore") => Ok(Mode::Ignore),
        Some("Strict") => Ok(Mode::Strict),
        _ => Ok(Mode::Warn),
    }
}

/// One thing a strict decode objects to.
enum Finding {
    Unknown(String),
    Duplicate(String),
    /// Keys a YAML body repeats (one `yaml: unmarshal errors` entry).
    Yaml(Vec<YamlDup>),
}

impl Finding {
    fn strict_text(&self) -> String {
        match self {
            Finding::Unknown(p) => format!("unknown field {}", go_quote(p)),
            Finding::Duplicate(p) => format!("duplicate field {}", go_quote(p)),
            Finding::Yaml(dups) => {
                let lines: Vec<String> = dups.iter().map(yaml_line).collect();
                format!("yaml: unmarshal errors:\n  {}", lines.join("\n  "))
            }
        }
    }

    fn warnings(&self) -> Vec<String> {
        match self {
            Finding::Yaml(dups) => dups.iter().map(yaml_line).collect(),
            other => vec![other.strict_text()],
        }
    }
}

fn yaml_line(d: &YamlDup) -> String {
    format!(
        "line {}: key {} already set in map",
        d.line,
        go_quote(&d.key)
    )
}

fn strict_list(found: &[Finding]) -> String {
    let items: Vec<String> = found.iter().map(Finding::strict_text).collect();
    format!("strict decoding error: {}", items.join(", "))
}

/// The unknown fields and repeated keys of a body, in upstream's order: as
/// the decoder meets them in the document (YAML's repeats first, found
/// while converting to JSON).
fn in_document_order(unknown: Vec<String>, dups: &Duplicates, body: &[u8]) -> Vec<Finding> {
    let mut found = Vec::new();
    match dups {
        Duplicates::Yaml(d) if !d.is_empty() => found.push(Finding::Yaml(d.clone())),
        Duplicates::Json(d) if !d.is_empty() && !unknown.is_empty() => {
            let first = kapi_http::strict::json_key_indexes(body);
            let mut all: Vec<(usize, Finding)> = d
                .iter()
                .map(|d| (d.index, Finding::Duplicate(d.path.clone())))
                .collect();
            for u in unknown {
                all.push((
                    first.get(&u).copied().unwrap_or(usize::MAX),
                    Finding::Unknown(u),
                ));
            }
            all.sort_by_key(|(i, _)| *i);
            return all.into_iter().map(|(_, f)| f).collect();
        }
        Duplicates::Json(d) => found.extend(d.iter().map(|d| Finding::Duplicate(d.path.clone()))),
        Duplicates::Yaml(_) => {}
    }
    found.extend(unknown.into_iter().map(Finding::Unknown));
    found
}

impl Server {
    /// Unknown fields of `obj` and the keys its request body `body` repeats
    /// (`dups`), under the request's mode: an error under Strict, otherwise
    /// the warnings to send; then the unknown fields are dropped from `obj`
    /// ([`Server::prune_unknown`]) — skipped when the schema's own walk found
    /// none, as the prune walks the same way and would drop nothing.
    pub fn check_and_prune(
        &self,
        ctx: &Ctx,
        obj: &mut Value,
        dups: &Duplicates,
        body: &[u8],
    ) -> Result<Vec<String>, ApiError> {
        let def = &ctx.entry.def;
        let mode = mode(ctx)?;
        if mode == Mode::Ignore {
            self.prune_unknown(def, obj);
            return Ok(Vec::new());
        }
        let (unknown, by_schema) = match def.strategy.unknown_fields(obj) {
            Some(fields) => (fields, false),
            None => (self.schema_unknown_fields(def, obj), true),
        };
        let none = by_schema && unknown.is_empty();
        let warnings = self.field_findings(ctx, mode, unknown, dups, body)?;
        if !none {
            self.prune_unknown(def, obj);
        }
        Ok(warnings)
    }

    fn field_findings(
        &self,
        ctx: &Ctx,
        mode: Mode,
        unknown: Vec<String>,
        dups: &Duplicates,
        body: &[u8],
    ) -> Result<Vec<String>, ApiError> {
        let found = in_document_order(unknown, dups, body);
        if found.is_empty() {
            return Ok(Vec::new());
        }
        if mode == Mode::Strict {
            let def = &ctx.entry.def;
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: {}",
                strict_list(&found),
                kind = def.kind,
                v = def.version,
            )));
        }
        Ok(found.iter().flat_map(Finding::warnings).collect())
    }

    /// The same for a patch (not an apply): the keys the patch repeats, then
    /// the unknown fields of the object it made (sorted, as upstream decodes
    /// them from a map). Under Strict the error is
    /// upstream's 422 on the field `patch`, whose value is the patched
    /// object (JSON and merge patches) or the patch (strategic merge
    /// patches, printed as Go prints a map).
    pub fn check_patch_fields(
        &self,
        ctx: &Ctx,
        patch: &PatchSeen<'_>,
        patched: &Value,
    ) -> Result<Vec<String>, ApiError> {
        let mode = mode(ctx)?;
        if mode == Mode::Ignore {
            return Ok(Vec::new());
        }
        let mut unknown = self.unknown_fields(&ctx.entry.def, patched);
        unknown.sort_by(|a, b| crate::patchview::path_order(a, b));
        let dups = patch
            .dups
            .iter()
            .map(|d| Finding::Duplicate(d.path.clone()));
        let found: Vec<Finding> = dups
            .chain(unknown.into_iter().map(Finding::Unknown))
            .collect();
        if found.is_empty() {
            return Ok(Vec::new());
        }
        if mode == Mode::Warn {
            return Ok(found.iter().flat_map(Finding::warnings).collect());
        }
        Err(patch.invalid(patched, strict_list(&found)))
    }

    /// A value of the patched object its Go type cannot hold, as upstream's
    /// decoders refuse it (`kapi_resources::gotypes`): 422 on the field
    /// `patch`, in `encoding/json`'s words for JSON and merge patches, in the
    /// unstructured converter's for strategic merge patches.
    pub fn check_patch_types(
        &self,
        ctx: &Ctx,
        patch: &PatchSeen<'_>,
        patched: &Value,
    ) -> Result<(), ApiError> {
        let def = &ctx.entry.def;
        let Some(root) = kapi_resources::patchmeta::root_type(&def.group, &def.version, &def.kind)
        else {
            return Ok(());
        };
        match kapi_resources::gotypes::type_mismatch(&root.0, patched) {
            None => Ok(()),
            Some(m) if patch.strategic => Err(patch.invalid(patched, m.unstructured())),
            Some(m) => Err(patch.invalid(patched, m.json())),
        }
    }
}

/// A value of a built-in object its Go type cannot hold, as upstream's
/// decoder refuses a request body with one: 400 `<Kind> in version "v1"
/// cannot be handled as a <Kind>: json: cannot unmarshal ...`.
pub fn check_types(def: &kapi_registry::ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let Some(root) = kapi_resources::patchmeta::root_type(&def.group, &def.version, &def.kind)
    else {
        return Ok(());
    };
    match kapi_resources::gotypes::type_mismatch(&root.0, obj) {
        None => Ok(()),
        Some(m) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: {}",
            m.json(),
            kind = def.kind,
            v = def.version,
        ))),
    }
}

/// The keys an apply configuration repeats, under the request's mode (its
/// unknown fields are the typed conversion's business, whatever the mode).
pub fn check_apply_yaml(ctx: &Ctx, dups: &[YamlDup]) -> Result<Vec<String>, ApiError> {
    let mode = mode(ctx)?;
    if mode == Mode::Ignore || dups.is_empty() {
        return Ok(Vec::new());
    }
    let found = Finding::Yaml(dups.to_vec());
    if mode == Mode::Warn {
        return Ok(found.warnings());
    }
    Err(ApiError::bad_request(format!(
        "error strict decoding YAML: error converting YAML to JSON: {}",
        found.strict_text()
    )))
}

/// What a patch request sent, for [`Server::check_patch_fields`].
pub struct PatchSeen<'a> {
    pub body: &'a Value,
    pub dups: &'a [JsonDup],
    pub strategic: bool,
}

impl PatchSeen<'_> {
    /// Upstream's 422 for a patch whose result does not decode: the field
    /// `patch`, valued as upstream prints the patch (strategic merge
    /// patches) or the object it made (JSON and merge patches).
    fn invalid(&self, patched: &Value, detail: String) -> ApiError {
        let value = if self.strategic {
            crate::patchview::go_map(self.body)
        } else {
            crate::patchview::merged_json(patched, self.body)
        };
        let path = kapi_machinery::validation::FieldPath::new("patch");
        let e = kapi_machinery::validation::FieldError::invalid(&path, value, detail);
        ApiError::invalid(GroupKind::new("", ""), "", &vec![e])
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
    let map = obj.member(field)?.as_object()?;
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
