//! DELETE of one object and of a collection. Options come from the body
//! (`DeleteOptions`) or the query, as upstream. A removed object is answered with
//! the object (pods, services) or a success `Status` (others), as upstream; one
//! left waiting on finalizers or graceful termination with the object (200, or
//! 202 when the legacy `orphanDependents=false` asked for cascading). The store
//! turns `propagationPolicy` / `orphanDependents` into GC finalizers.
//! Admission runs inside the store's delete loop on the object as stored
//! (`Store::delete_admitted`), for each item of a collection too.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::{success_status, ApiError, Details, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::store::options::{DeleteOptions, Preconditions, Propagation};
use kapi_registry::store::DeleteOutcome;
use serde_json::{json, Value};

use super::admit::RequestAdmission;
use super::ctx::{dry_run, Ctx};
use kapi_http::body::read_body;
use kapi_http::negotiate;

/// Resources whose DELETE returns the deleted object rather than a Status.
const RETURNS_OBJECT: &[&str] = &["pods", "services", "namespaces"];

async fn delete_options(ctx: &Ctx, body: Body) -> Result<DeleteOptions, ApiError> {
    let bytes = read_body(body).await?;
    let from_body = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        negotiate::decode_body(ctx.content_type(), &bytes)?
    };
    let q = &ctx.query;
    let str_opt = |key: &str| {
        from_body
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| q.non_empty(key).map(str::to_owned))
    };
    let grace_period = match from_body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => match q.non_empty("gracePeriodSeconds") {
            Some(g) => Some(g.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds: {g:?}"))
            })?),
            None => None,
        },
    };
    let orphan_dependents =
        match from_body.get("orphanDependents").and_then(Value::as_bool) {
            Some(b) => Some(b),
            None => match q.non_empty("orphanDependents") {
                Some(b) => Some(b.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid orphanDependents: {b:?}"))
                })?),
                None => None,
            },
        };
    let policy = str_opt("propagationPolicy");
    let mut errs = Vec::new();
    let path = FieldPath::new("propagationPolicy");
    if let (Some(p), Some(_)) = (&policy, orphan_dependents) {
        let msg = "orphanDependents and deletionPropagation cannot be both set";
        errs.push(FieldError::invalid(&path, p.as_str(), msg));
    }
    let propagation = match policy.as_deref() {
        None => None,
        Some("Orphan") => Some(Propagation::Orphan),
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some(other) => {
            let valid = ["Foreground", "Background", "Orphan", "nil"];
            errs.push(FieldError::not_supported(&path, other, &valid));
            None
        }
    };
    if !errs.is_empty() {
        let gk = GroupKind::new("meta.k8s.io", "DeleteOptions");
        return Err(ApiError::invalid(gk, "", &errs));
    }
    let pre = from_body.get("preconditions");
    let pre_str = |k: &str| {
        pre.and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let body_dry_run = from_body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        dry_run: dry_run(q)? || body_dry_run,
        grace_period,
        propagation,
        orphan_dependents,
        preconditions: Preconditions {
            uid: pre_str("uid"),
            resource_version: pre_str("resourceVersion"),
        },
    })
}

pub async fn delete(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = delete_options(ctx, body).await?;
    ctx.srv.storage_delete(ctx)?;
    let adm = RequestAdmission::delete(ctx, &opts);
    let def = &ctx.entry.def;
    match delete_one(ctx, ctx.namespace(), ctx.name(), &opts, &adm).await? {
        // Upstream answers 202 for a pending delete only when the client asked for
        // cascading with the legacy `orphanDependents=false`; otherwise 200.
        DeleteOutcome::Pending(obj) => {
            let code = match opts.orphan_dependents {
                Some(false) => StatusCode::ACCEPTED,
                _ => StatusCode::OK,
            };
            super::get::respond_object(ctx, code, &obj)
        }
        DeleteOutcome::Deleted(obj) if RETURNS_OBJECT.contains(&def.resource.as_str()) => {
            super::get::respond_object(ctx, StatusCode::OK, &obj)
        }
        DeleteOutcome::Deleted(obj) => {
            let details = Details {
                name: ctx.name().to_owned(),
                group: def.group.clone(),
                kind: def.resource.clone(),
                uid: kapi_registry::meta::uid(&obj).unwrap_or("").to_owned(),
                ..Default::default()
            };
            Ok(negotiate::respond(
                StatusCode::OK,
                &success_status(&details),
                ctx.accept.format,
            ))
        }
    }
}

/// The store's delete, with the request's admission inside its
/// compare-and-swap loop when some plugin looks at deletes.
async fn delete_one(
    ctx: &Ctx,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
    adm: &RequestAdmission,
) -> Result<DeleteOutcome, ApiError> {
    let store = &ctx.entry.store;
    if adm.looks_at_deletes() {
        store.delete_admitted(namespace, name, opts, adm).await
    } else {
        store.delete(namespace, name, opts).await
    }
}

pub async fn delete_collection(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = delete_options(ctx, body).await?;
    let list_opts = super::list::list_options(ctx)?;
    let store = &ctx.entry.store;
    let listed = store.list(ctx.namespace(), &list_opts).await?;
    let mut deleted = Vec::new();
    let adm = RequestAdmission::delete(ctx, &opts);
    for obj in listed.items {
        let ns = kapi_registry::meta::namespace(&obj).map(str::to_owned);
        let name = kapi_registry::meta::name(&obj).to_owned();
        match delete_one(ctx, ns.as_deref(), &name, &opts, &adm).await {
            Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => deleted.push(o),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    let def = &ctx.entry.def;
    let body = json!({
        "kind": def.list_kind,
        "apiVersion": def.api_version(),
        "metadata": {"resourceVersion": listed.resource_version},
        "items": deleted,
    });
    Ok(negotiate::respond(StatusCode::OK, &body, ctx.accept.format))
}
