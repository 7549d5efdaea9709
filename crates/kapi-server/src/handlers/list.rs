//! LIST: parse selectors and paging, read through the store, answer a `<Kind>List`,
//! a Table or a `PartialObjectMetadataList`.

use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use kapi_machinery::{fields, labels};
use kapi_registry::store::options::{ListOptions, RvMatch};
use serde_json::{json, Map, Value};

use super::ctx::Ctx;
use kapi_http::negotiate::{self, IncludeObject, View};
use kapi_http::request::Query;

/// A LIST's or a watch's query as upstream reads it into `ListOptions`: first
/// decoded (the selectors parsed, the integers converted; what fails is a 400),
/// then validated (`ValidateListOptions`, every violation in one 422 on
/// `ListOptions.meta.k8s.io`), then the field selector's labels checked
/// against the resource's (a 400).
pub struct QueryOptions {
    pub label: labels::LabelSelector,
    pub field: fields::FieldSelector,
    pub timeout_seconds: Option<i64>,
    pub limit: Option<i64>,
    pub rv_match: RvMatch,
    /// `sendInitialEvents`, read as Go reads a `*bool` parameter.
    pub send_initial_events: Option<bool>,
}

pub fn query_options(ctx: &Ctx, watch: bool) -> Result<QueryOptions, ApiError> {
    let q = &ctx.query;
    let label = match q.non_empty("labelSelector") {
        Some(s) => labels::parse(s).map_err(|e| ApiError::bad_request(e.message().to_owned()))?,
        None => labels::LabelSelector::everything(),
    };
    let field = match q.non_empty("fieldSelector") {
        Some(s) => fields::parse(s).map_err(|e| ApiError::bad_request(e.message().to_owned()))?,
        None => fields::FieldSelector::everything(),
    };
    // The integers in the struct's order: timeoutSeconds before limit.
    let timeout_seconds = int_param(q, "timeoutSeconds")?;
    let limit = int_param(q, "limit")?;
    let send_initial_events = q.opt_flag("sendInitialEvents");
    let rv_match = validate(q, watch, send_initial_events, ctx.srv.config.watch_list)?;
    ctx.entry.store.check_field_selector(&field)?;
    Ok(QueryOptions {
        label,
        field,
        timeout_seconds,
        limit,
        rv_match,
        send_initial_events,
    })
}

/// Upstream's `ValidateListOptions` (its `validateWatchOptions` for a watch)
/// over `resourceVersionMatch`, `resourceVersion`, `continue` and
/// `sendInitialEvents`; the match when valid.
fn validate(
    q: &Query,
    watch: bool,
    send_initial_events: Option<bool>,
    watch_list: bool,
) -> Result<RvMatch, ApiError> {
    use kapi_machinery::validation::{FieldError, FieldPath};
    let path = FieldPath::new("resourceVersionMatch");
    let given = q.get("resourceVersionMatch").unwrap_or("");
    let continues = !q.get("continue").unwrap_or("").is_empty();
    let initial = send_initial_events.is_some();
    let mut errs = Vec::new();
    let m = match given {
        "" => RvMatch::Unset,
        "NotOlderThan" => RvMatch::NotOlderThan,
        "Exact" if !watch => RvMatch::Exact,
        _ => RvMatch::Unset,
    };
    if watch {
        if initial {
            if given != "NotOlderThan" {
                let why = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan";
                errs.push(FieldError::forbidden(&path, why));
            }
            if !watch_list {
                let why = "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";
                errs.push(FieldError::forbidden(
                    &FieldPath::new("sendInitialEvents"),
                    why,
                ));
            }
        }
        if !given.is_empty() {
            if !initial {
                let why = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
                errs.push(FieldError::forbidden(&path, why));
            }
            if given != "NotOlderThan" {
                errs.push(FieldError::not_supported(&path, given, &["NotOlderThan"]));
            }
            if continues {
                errs.push(FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        let rv = q.get("resourceVersion").unwrap_or("");
        if !given.is_empty() {
            if rv.is_empty() {
                let why = "resourceVersionMatch is forbidden unless resourceVersion is provided";
                errs.push(FieldError::forbidden(&path, why));
            }
            if continues {
                errs.push(FieldError::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if !matches!(given, "Exact" | "NotOlderThan") {
                errs.push(FieldError::not_supported(
                    &path,
                    given,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if given == "Exact" && rv == "0" {
                let why = "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
                errs.push(FieldError::forbidden(&path, why));
            }
        }
        if initial {
            let why = "sendInitialEvents is forbidden for list";
            errs.push(FieldError::forbidden(
                &FieldPath::new("sendInitialEvents"),
                why,
            ));
        }
    }
    if !errs.is_empty() {
        let gk = kapi_machinery::status::GroupKind::new("meta.k8s.io", "ListOptions");
        return Err(ApiError::invalid(gk, "", &errs));
    }
    Ok(m)
}

/// An integer query parameter, refused as Go's `strconv.ParseInt` words it.
pub fn int_param(q: &Query, name: &str) -> Result<Option<i64>, ApiError> {
    q.non_empty(name)
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
            })
        })
        .transpose()
}

pub fn list_options(ctx: &Ctx) -> Result<ListOptions, ApiError> {
    let o = query_options(ctx, false)?;
    Ok(ListOptions {
        label: o.label,
        field: o.field,
        limit: o.limit.unwrap_or(0).max(0) as usize,
        continue_token: ctx.query.non_empty("continue").map(str::to_owned),
        resource_version: ctx.query.get("resourceVersion").map(str::to_owned),
        rv_match: o.rv_match,
    })
}

/// How long a LIST waits for its resource's watch cache to be filled (after
/// a start) before reading the backend instead.
const CACHE_FILL_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

pub async fn list(ctx: &Ctx) -> Result<Response, ApiError> {
    if super::componentstatus::is_componentstatus(ctx) {
        return super::componentstatus::list(ctx).await;
    }
    // Right after a start the watch cache may still be filling. A LIST waits
    // for it, as upstream's cacher blocks until it is ready: reading and
    // decoding a large resource from the backend takes far longer than the
    // fill (300,000 ConfigMaps: about 12 s, against under a second). A
    // resource without a cache, or with a filled one, does not wait.
    ctx.entry.store.cache_ready(CACHE_FILL_WAIT).await;
    if let Some(resp) = super::json_fast::list_json(ctx).await? {
        return Ok(resp);
    }
    if let Some(resp) = super::pb_fast::list_protobuf(ctx).await? {
        return Ok(resp);
    }
    let opts = list_options(ctx)?;
    let result = ctx.entry.store.list(ctx.namespace(), &opts).await?;
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        result.resource_version.clone().into(),
    );
    if let Some(c) = &result.continue_token {
        meta.insert("continue".into(), c.clone().into());
    }
    if let Some(n) = result.remaining {
        meta.insert("remainingItemCount".into(), n.into());
    }
    respond_list(ctx, result.items, meta)
}

/// A list in the representation the client asked for.
pub fn respond_list(
    ctx: &Ctx,
    mut items: Vec<Value>,
    meta: Map<String, Value>,
) -> Result<Response, ApiError> {
    let def = &ctx.entry.def;
    let body: Value = match ctx.accept.view {
        View::Object => {
            def.as_list_items(&mut items);
            json!({
                "kind": def.list_kind,
                "apiVersion": def.api_version(),
                "metadata": meta,
                "items": items,
            })
        }
        View::PartialMetadata => negotiate::partial_list(&items, meta),
        View::Table => {
            let include = IncludeObject::parse(ctx.query.get("includeObject"))?;
            negotiate::table(def, &items, meta, include, true)
        }
    };
    Ok(negotiate::respond(StatusCode::OK, &body, ctx.accept.format))
}
