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
use futures::StreamExt;
use kapi_machinery::status::{success_status, ApiError, Details, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::store::options::{DeleteOptions, Preconditions, Propagation};
use kapi_registry::store::DeleteOutcome;
use serde_json::{json, Value};

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use kapi_http::body::read_body;
use kapi_http::negotiate;

/// Resources whose DELETE returns the deleted object rather than a Status.
const RETURNS_OBJECT: &[&str] = &["pods", "services", "namespaces"];

async fn delete_options(ctx: &Ctx, body: Body) -> Result<DeleteOptions, ApiError> {
    let bytes = read_body(body).await?;
    let from_body = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        decode_delete_options(ctx, &bytes)?
    };
    // The options are the body's when there is one, else the query's
    // (upstream decodes one or the other, never both).
    let q = from_body.is_null().then_some(&ctx.query);
    let query = |key: &str| q.and_then(|q| q.non_empty(key));
    let str_opt = |key: &str| {
        from_body
            .get(key)
            .and_then(Value::as_str)
            .or_else(|| query(key))
            .map(str::to_owned)
    };
    let grace_period = match from_body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => match query("gracePeriodSeconds") {
            Some(g) => Some(g.parse().map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {g:?}: invalid syntax"))
            })?),
            None => None,
        },
    };
    // A `*bool` in the query reads as Go reads one: any value but `0` or
    // `false` is true.
    let orphan_dependents = from_body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| q.and_then(|q| q.opt_flag("orphanDependents")));
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
    // `ValidateDryRun`: every value must be `All`.
    let dry_run: Vec<String> = match q {
        Some(q) => q
            .non_empty("dryRun")
            .map(str::to_owned)
            .into_iter()
            .collect(),
        None => from_body
            .get("dryRun")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
    };
    if dry_run.iter().any(|v| v != "All") {
        errs.push(FieldError::not_supported(
            &FieldPath::new("dryRun"),
            Value::from(dry_run.clone()),
            &["All"],
        ));
    }
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
    Ok(DeleteOptions {
        dry_run: !dry_run.is_empty(),
        grace_period,
        propagation,
        orphan_dependents,
        preconditions: Preconditions {
            uid: pre_str("uid"),
            resource_version: pre_str("resourceVersion"),
        },
    })
}

/// A `DeleteOptions` field, its Go type, and whether a JSON value fits it.
type DeleteField = (&'static str, &'static str, fn(&Value) -> bool);

/// A DELETE body, decoded as upstream decodes it into `DeleteOptions`: what
/// it cannot decode is a plain 500 in the decoder's words.
fn decode_delete_options(ctx: &Ctx, bytes: &[u8]) -> Result<Value, ApiError> {
    use kapi_machinery::gojson;
    let plain = |m: String| ApiError::new(500, kapi_machinery::status::Reason::Unknown, m);
    let parse_error =
        |e: String| plain(format!("couldn't get version/kind; json parse error: {e}"));
    let json = ctx
        .content_type()
        .is_none_or(|c| c.trim_start().starts_with("application/json"));
    let v = if json {
        serde_json::from_slice(bytes).map_err(|e| parse_error(gojson::syntax_error(&e, bytes)))?
    } else {
        negotiate::decode_body(ctx.content_type(), bytes)?
    };
    if !v.is_object() {
        return Err(parse_error(gojson::type_error(&v, gojson::KIND_FINDER)));
    }
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("DeleteOptions");
    if kind != "DeleteOptions" {
        let av = v
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("meta.k8s.io/v1");
        return Err(plain(format!(
            "no kind \"{kind}\" is registered for version \"{av}\" in scheme \"pkg/runtime/scheme.go:100\""
        )));
    }
    let fields: [DeleteField; 5] = [
        ("gracePeriodSeconds", "int64", |v| v.is_i64()),
        ("orphanDependents", "bool", Value::is_boolean),
        (
            "propagationPolicy",
            "v1.DeletionPropagation",
            Value::is_string,
        ),
        ("dryRun", "[]string", Value::is_array),
        ("preconditions", "v1.Preconditions", Value::is_object),
    ];
    for (field, go_type, fits) in fields {
        if let Some(x) = v.get(field).filter(|x| !x.is_null() && !fits(x)) {
            let found = gojson::type_error(x, "");
            let found = found
                .trim_start_matches("json: cannot unmarshal ")
                .trim_end_matches(" into Go value of type ");
            return Err(plain(format!(
                "json: cannot unmarshal {found} into Go struct field DeleteOptions.{field} of type {go_type}"
            )));
        }
    }
    Ok(v)
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
    let adm = RequestAdmission::delete(ctx, &opts);
    // `--delete-collection-workers` deletes at once, as upstream's workers.
    let workers = ctx.srv.config.delete_collection_workers.max(1);
    let names: Vec<(Option<String>, String)> = listed
        .items
        .iter()
        .map(|obj| {
            let ns = kapi_registry::meta::namespace(obj).map(str::to_owned);
            (ns, kapi_registry::meta::name(obj).to_owned())
        })
        .collect();
    let mut outcomes = futures::stream::iter(names)
        .map(|(ns, name)| {
            let (opts, adm) = (&opts, &adm);
            async move { delete_one(ctx, ns.as_deref(), &name, opts, adm).await }
        })
        .buffer_unordered(workers);
    while let Some(outcome) = outcomes.next().await {
        match outcome {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    drop(outcomes);
    // The answer lists the items as they were listed, in order (upstream's).
    let mut deleted = listed.items;
    let def = &ctx.entry.def;
    def.as_list_items(&mut deleted);
    let body = json!({
        "kind": def.list_kind,
        "apiVersion": def.api_version(),
        "metadata": {"resourceVersion": listed.resource_version},
        "items": deleted,
    });
    Ok(negotiate::respond(StatusCode::OK, &body, ctx.accept.format))
}
