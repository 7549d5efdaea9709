//! PATCH: JSON patch (RFC 6902), merge patch (RFC 7386) and strategic merge patch,
//! applied to the current object inside the store's compare-and-swap loop, so a
//! concurrent write makes the patch re-apply to the newer object, never lose it.
//! Server-side apply (`application/apply-patch+yaml`) is `apply.rs`.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::{ApiError, Reason};
use serde_json::Value;

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use super::fieldcheck::PatchSeen;
use kapi_http::body::read_body;
use kapi_http::negotiate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

pub(super) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn patch_type(content_type: Option<&str>) -> Result<PatchType, ApiError> {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match media.as_str() {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(ApiError::unsupported_media_type(PATCH_TYPES)),
    }
}

/// What custom resources accept: no strategic merge patch (upstream has no
/// patch strategies for them).
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

pub async fn patch(ctx: &Ctx, body: Body, status: bool) -> Result<Response, ApiError> {
    let custom = ctx.entry.def.origin == kapi_registry::Origin::Custom;
    let kind = match patch_type(ctx.content_type()) {
        Err(_) if custom => return Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES)),
        kind => kind?,
    };
    if custom && kind == PatchType::Strategic {
        return Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES));
    }
    if kind == PatchType::Apply {
        return super::apply::apply(ctx, body, status).await;
    }
    super::apply::check_no_force(ctx)?;
    let bytes = read_body(body).await?;
    let (patch, dups) = negotiate::decode_patch(&bytes)?;
    let seen = PatchSeen {
        body: &patch,
        dups: &dups,
        strategic: kind == PatchType::Strategic,
    };
    let mut warnings = Vec::new();
    let opts = ctx.write_options()?;
    let target = ctx.update_target();
    let def = ctx.entry.def.clone();
    let srv = ctx.srv.clone();
    let guard = kapi_auth::authz::escalation::Guard::prepare(
        &ctx.srv.authz,
        &ctx.escalation_target(),
        None,
    )
    .await?;
    let adm = RequestAdmission::write(ctx, "PatchOptions", &opts);
    let ignore = super::fieldcheck::mode(ctx)? == super::fieldcheck::Mode::Ignore;
    let (out, _) = ctx
        .entry
        .store
        .update_admitted(
            ctx.namespace(),
            ctx.name(),
            target,
            &opts,
            false,
            |current| {
                let current = current.expect("patch never creates");
                let mut patched = apply(kind, current, &patch, ignore, &srv, &def)?;
                srv.check_patch_types(ctx, &seen, &patched)?;
                warnings = srv.check_patch_fields(ctx, &seen, &patched)?;
                srv.prune_unknown(&def, &mut patched);
                // As upstream: a patched object that does not decode is invalid.
                if let Some(e) = super::fieldcheck::bad_bytes(&def, &patched) {
                    return Err(ApiError::new(
                        422,
                        Reason::Invalid,
                        format!("patch: Invalid value: {e}"),
                    ));
                }
                check_unchanged_identity(current, &patched)?;
                if let Some(g) = &guard {
                    g.check(&patched, Some(current))?;
                }
                Ok(patched)
            },
            &adm,
        )
        .await?;
    let mut resp = super::get::respond_object(ctx, StatusCode::OK, &out)?;
    super::fieldcheck::add_warnings(&mut resp, &warnings);
    super::fieldcheck::add_warnings(&mut resp, &adm.warnings());
    Ok(resp)
}

/// Go's map type a merge or strategic merge patch is decoded into.
const PATCH_MAP: &str = "map[string]interface {}";

/// `ignore`: the request's `fieldValidation` is `Ignore`, when upstream does
/// not decode a merge patch into a map first.
fn apply(
    kind: PatchType,
    current: &Value,
    patch: &Value,
    ignore: bool,
    srv: &crate::server::Server,
    def: &kapi_registry::ResourceDef,
) -> Result<Value, ApiError> {
    use kapi_machinery::gojson::type_error;
    // Go decodes `null` as no operations (a JSON patch) or an empty map (a
    // strategic merge patch): nothing changes.
    if patch.is_null() && matches!(kind, PatchType::Json | PatchType::Strategic) {
        return Ok(current.clone());
    }
    match kind {
        PatchType::Json => {
            // As upstream: only a body that is not a list of objects is a bad
            // request; an unknown op or a malformed path fails when applied (422).
            let ops = match patch {
                Value::Array(ops) => ops,
                other => {
                    let go = type_error(other, "[]handlers.jsonPatchOp");
                    return Err(ApiError::bad_request(format!("error decoding patch: {go}")));
                }
            };
            if let Some(op) = ops.iter().find(|op| !op.is_object()) {
                let go = type_error(op, "handlers.jsonPatchOp");
                return Err(ApiError::bad_request(format!("error decoding patch: {go}")));
            }
            // Upstream says no more than this about an operation that fails.
            let rejected = |e: &dyn std::fmt::Display| {
                tracing::debug!(error = %e, "JSON patch failed");
                let mut err = ApiError::new(
                    422,
                    Reason::Invalid,
                    "the server rejected our request due to an error in our request",
                );
                err.details = Some(Default::default());
                err
            };
            let ops: json_patch::Patch =
                serde_json::from_value(patch.clone()).map_err(|e| rejected(&e))?;
            let mut doc = current.clone();
            json_patch::patch(&mut doc, &ops).map_err(|e| rejected(&e))?;
            Ok(doc)
        }
        PatchType::Merge => {
            // As upstream: the patch is first decoded into a map (unless the
            // field validation is Ignore); then json-patch's MergePatch takes
            // `null` and scalars for a bad patch, and a list for the whole
            // new document, which does not decode as an object (422).
            if patch.is_null() {
                return Err(ApiError::bad_request("Invalid JSON Patch"));
            }
            if !patch.is_object() && !ignore {
                let go = type_error(patch, PATCH_MAP);
                return Err(ApiError::bad_request(format!("error decoding patch: {go}")));
            }
            if patch.is_array() {
                use kapi_machinery::validation::{FieldError, FieldPath};
                let go = type_error(patch, kapi_machinery::gojson::KIND_FINDER);
                let e = FieldError::invalid(
                    &FieldPath::new("patch"),
                    serde_json::to_string(patch).expect("JSON values serialize"),
                    format!("couldn't get version/kind; json parse error: {go}"),
                );
                let gk = kapi_machinery::status::GroupKind::new("", "");
                return Err(ApiError::invalid(gk, "", &vec![e]));
            }
            if !patch.is_object() {
                return Err(ApiError::bad_request("Invalid JSON Patch"));
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        PatchType::Apply => unreachable!("apply patches are handled by apply.rs"),
        PatchType::Strategic => {
            if !patch.is_object() {
                return Err(ApiError::bad_request(type_error(patch, PATCH_MAP)));
            }
            let root = srv.schema_root(def);
            kapi_machinery::strategic::apply(current, patch, srv.schema.as_ref(), &root)
                .map_err(strategic_error)
        }
    }
}

/// A strategic merge patch that cannot be applied, answered as upstream's
/// `interpretStrategicMergePatchError`: malformed directives are bad
/// requests, lists of lists unprocessable, anything else a plain 500.
fn strategic_error(e: kapi_machinery::strategic::PatchError) -> ApiError {
    use kapi_machinery::strategic::PatchError as E;
    match e {
        E::BadPrimitiveList | E::BadSetElementOrder | E::BadRetainKeys | E::NotAnObject { .. } => {
            ApiError::bad_request(e.to_string())
        }
        E::ListOfLists => ApiError::new(422, Reason::Invalid, e.to_string()),
        e => ApiError::new(500, Reason::Unknown, e.to_string()),
    }
}

/// A patch may not rename or move the object.
fn check_unchanged_identity(current: &Value, patched: &Value) -> Result<(), ApiError> {
    use kapi_registry::meta;
    if !patched.is_object() {
        return Err(ApiError::bad_request(
            "the patched object is not a JSON object",
        ));
    }
    if meta::name(patched) != meta::name(current) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            meta::name(patched),
            meta::name(current)
        )));
    }
    if meta::namespace(patched) != meta::namespace(current) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}
