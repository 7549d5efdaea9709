//! The dispatcher: one entry for every resource URL. It resolves the request
//! to a resource of the table, checks the verb against what the resource
//! declares (`ResourceDef::verbs` and its subresources — the declaration
//! discovery reads), and hands over to the verb's handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::Response;
use kapi_http::limits::Kind;
use kapi_http::negotiate;
use kapi_http::request::{self, not_found, Query, RequestInfo};
use kapi_machinery::status::ApiError;
use kapi_registry::apis::Entry;
use kapi_registry::store::UpdateTarget;
use kapi_registry::{Subresource, Verb};

use super::ctx::Ctx;
use super::{binding, create, delete, eviction, get, list, patch, scale, token, update, watch};
use crate::server::Server;

pub async fn dispatch(State(srv): State<Arc<Server>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let query = Query::parse(parts.uri.query());
    let accept = parts
        .headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // As upstream's router, a trailing slash names the same thing — except
    // in what a proxy subresource passes on, which keeps the path as sent.
    // The path is parsed again only when it loses a trailing slash.
    let full = parts.uri.path();
    let as_sent = match parts.extensions.get::<Arc<Kind>>() {
        Some(kind) => kind.info_for(&parts.method, &parts.uri, &query),
        None => request::parse(&parts.method, full, &query),
    };
    let proxied = as_sent
        .as_ref()
        .is_some_and(|i| i.subresource.as_deref() == Some("proxy"));
    let path = match full {
        "/" => "/",
        p if proxied => p,
        p => p.strip_suffix('/').unwrap_or(p),
    };
    let parsed = if path.len() == full.len() {
        as_sent
    } else {
        request::parse(&parts.method, path, &query)
    };
    let Some(info) = parsed else {
        if !srv.owns_path(path) {
            return plain_not_found();
        }
        return negotiate::error_response_for(&not_found(), accept.as_deref());
    };
    let served = srv
        .apis
        .lookup(&info.group, &info.version, &info.resource)
        .filter(|e| e.served);
    let Some(entry) = served else {
        if !srv.owns_path(path) {
            return plain_not_found();
        }
        return negotiate::error_response_for(&not_found(), accept.as_deref());
    };
    match handle(srv, entry, info, query, parts, body).await {
        Ok(resp) => resp,
        Err(e) => negotiate::error_response_for(&e, accept.as_deref()),
    }
}

/// What a path no server of the chain handles gets: Go's plain `404 page
/// not found`, not a Status.
pub(crate) fn plain_not_found() -> Response {
    let mut resp = Response::new(Body::from("404 page not found\n"));
    *resp.status_mut() = axum::http::StatusCode::NOT_FOUND;
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        axum::http::HeaderValue::from_static("nosniff"),
    );
    resp
}

impl Server {
    /// Whether a path belongs to an API this server answers for (and so gets
    /// a Status when nothing is found there): everything under `/api`, and
    /// `/apis/<group>/...` of a group it serves.
    fn owns_path(&self, path: &str) -> bool {
        if path == "/api" || path.starts_with("/api/") {
            return true;
        }
        let Some(rest) = path.strip_prefix("/apis/") else {
            return false;
        };
        let group = rest.split('/').next().unwrap_or("");
        self.apis.groups().iter().any(|g| g.name == group)
    }
}

async fn handle(
    srv: Arc<Server>,
    entry: Arc<Entry>,
    info: RequestInfo,
    query: Query,
    parts: Parts,
    body: Body,
) -> Result<Response, ApiError> {
    let def = &entry.def;
    if !def.namespaced && info.namespace.is_some() {
        return Err(not_found());
    }
    if def.namespaced && info.namespace.is_none() && info.name.is_some() {
        return Err(not_found());
    }
    let sub = match info.subresource.as_deref() {
        None => None,
        Some(s) => Some(def.subresource(s).cloned().ok_or_else(not_found)?),
    };
    let verb = parse_verb(info.verb)?;
    check_route(def, sub.as_ref(), info.name.is_some(), verb)?;
    if !info.rest.is_empty() && !matches!(sub, Some(Subresource::Proxy { .. })) {
        return Err(not_found());
    }
    if let Some(s) = sub.as_ref().filter(|s| super::connect::is_connect(s)) {
        let connect = Box::pin(super::connect::serve(srv, &entry, &info, s, parts, body));
        return connect.await;
    }
    if def.origin != kapi_registry::Origin::Custom {
        restful_route(verb, &parts.headers)?;
    }
    let accept_header = parts.headers.get(axum::http::header::ACCEPT);
    // Only readable paths have a table form (upstream's create-only
    // resources and subresources have no table converter).
    let table = match &sub {
        Some(s) => s.verbs().contains(&Verb::Get),
        None => def.supports(Verb::Get) || def.supports(Verb::List),
    };
    let accept = negotiate::negotiate_for(
        accept_header.and_then(|v| v.to_str().ok()),
        negotiate::protobuf_kind(def),
        table,
    )?;
    let span = super::traced::start(&parts, &info, verb);
    let ctx = Ctx {
        srv,
        entry: entry.clone(),
        info,
        query,
        accept,
        user: parts
            .extensions
            .get::<kapi_auth::authn::UserInfo>()
            .cloned(),
        authenticator: parts
            .extensions
            .get::<Arc<kapi_auth::authn::Authenticator>>()
            .cloned(),
        audit: parts
            .extensions
            .get::<kapi_auth::audit::AuditHandle>()
            .cloned(),
        lifecycle: parts
            .extensions
            .get::<kapi_http::lifecycle::Lifecycle>()
            .cloned(),
        headers: parts.headers,
    };
    let warning = ctx.entry.def.strategy.deprecation_warning();
    let mut resp = super::traced::finish(span, serve(ctx, verb, sub, body).await)?;
    if let Some(text) = warning {
        let value = format!(
            "299 - \"{}\"",
            text.replace('\\', "\\\\").replace('"', "\\\"")
        );
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            resp.headers_mut().append(axum::http::header::WARNING, v);
        }
    }
    Ok(resp)
}

/// Await `fut` in a box of its own, made in a statement of its own: written
/// `Box::pin(fut).await`, the unboxed future, a temporary of the awaiting
/// statement, would be kept in the caller's state across the await, which
/// would then be as large as what it meant to box.
macro_rules! boxed {
    ($fut:expr) => {{
        let fut = Box::pin($fut);
        fut.await
    }};
}

/// Hand the request to its verb's handler. Each handler's future is boxed
/// on its own: held inline, every request's future would be as large as the
/// largest handler's (a create's, with admission and storage) and be moved
/// whole into the heap, a GET paying for a create's size.
async fn serve(
    ctx: Ctx,
    verb: Verb,
    sub: Option<Subresource>,
    body: Body,
) -> Result<Response, ApiError> {
    match (verb, sub) {
        (Verb::Get, None) => boxed!(get::get(&ctx)),
        (Verb::List, None) => boxed!(list::list(&ctx)),
        (Verb::Watch, None) => boxed!(watch::watch(ctx)),
        (Verb::Create, None) => boxed!(create::create(&ctx, body)),
        (Verb::Update, None) => boxed!(update::update(&ctx, body, false)),
        (Verb::Patch, None) => boxed!(patch::patch(&ctx, body, false)),
        (Verb::Delete, None) => boxed!(delete::delete(&ctx, body)),
        (Verb::DeleteCollection, None) => boxed!(delete::delete_collection(&ctx, body)),
        (
            Verb::Get,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => boxed!(get::get(&ctx)),
        (
            Verb::Update,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => boxed!(update::update(&ctx, body, true)),
        (
            Verb::Patch,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => boxed!(patch::patch(&ctx, body, true)),
        (verb, Some(sub @ Subresource::Scale { .. })) => {
            boxed!(scale::scale(&ctx, verb, &sub, body))
        }
        (Verb::Update, Some(Subresource::Finalize)) => {
            boxed!(update::update_target(&ctx, body, UpdateTarget::Finalize))
        }
        (Verb::Create, Some(Subresource::Eviction)) => boxed!(eviction::evict(&ctx, body)),
        (Verb::Create, Some(Subresource::Binding)) => {
            boxed!(binding::bind_subresource(&ctx, body))
        }
        (Verb::Create, Some(Subresource::Token)) => boxed!(token::token(&ctx, body)),
        _ => Err(ApiError::method_not_supported(
            ctx.entry.def.group_resource(),
            ctx.info.verb,
        )),
    }
}

/// Whether the URL's path and method have a route, as upstream installs
/// them (`installer.go`): the collection path takes list, watch, create and
/// deletecollection, the object path get, update, patch and delete, a
/// subresource path its own verbs. A path with no route at all is 404,
/// another method on a path with routes 405.
fn check_route(
    def: &kapi_registry::ResourceDef,
    sub: Option<&kapi_registry::Subresource>,
    named: bool,
    verb: Verb,
) -> Result<(), ApiError> {
    const COLLECTION: &[Verb] = &[
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::DeleteCollection,
    ];
    const OBJECT: &[Verb] = &[
        Verb::Get,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::Watch,
    ];
    let (on_path, supported): (&[Verb], bool) = match sub {
        Some(s) => (&[], s.verbs().contains(&verb)),
        None if named => (OBJECT, def.supports(verb)),
        None => (COLLECTION, def.supports(verb)),
    };
    let routes_here = |v: &Verb| sub.is_some() || (on_path.contains(v) && def.supports(*v));
    if supported && (sub.is_some() || on_path.contains(&verb)) {
        return Ok(());
    }
    let any_route = sub.is_some() || def.verbs.iter().any(routes_here);
    let mut err = if any_route {
        ApiError::new(
            405,
            kapi_machinery::status::Reason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )
    } else {
        not_found()
    };
    err.details = Some(Default::default());
    Err(err)
}

/// What upstream's go-restful routes of built-in resources produce: every
/// route the serializers' types ([`negotiate::SERIALIZER_TYPES`]), a
/// collection's GET (list and watch) their streams too.
const COLLECTION_PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
/// go-restful's route matching, which upstream's built-in resources meet
/// before their handlers (custom resources do not): a PATCH with a body
/// whose media type (case and all) no patch route consumes is 415, an
/// `Accept` none of whose media types (parameters aside, `*/*` for any) the
/// route produces is 406, each with go-restful's own message. What passes
/// is negotiated by the handler as before (a `Table` where there is none).
fn restful_route(verb: Verb, headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    use axum::http::header;
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
    };
    let has_body = text(header::CONTENT_LENGTH)
        .and_then(|l| l.trim().parse::<u64>().ok())
        .is_some_and(|l| l > 0);
    if verb == Verb::Patch && has_body {
        let media = text(header::CONTENT_TYPE)
            .map(|c| c.split(';').next().unwrap_or(""))
            .filter(|m| !m.is_empty())
            .unwrap_or("application/octet-stream");
        // What a PATCH route consumes: the patch types.
        if !super::patch::PATCH_TYPES.contains(&media) {
            return Err(ApiError::route_unsupported_media_type());
        }
    }
    let produces = match verb {
        Verb::List | Verb::Watch => COLLECTION_PRODUCES,
        _ => negotiate::SERIALIZER_TYPES,
    };
    restful_accepts(headers, produces)
}

/// go-restful's `Accept` check for a route producing `produces`: 406 in its
/// words unless some media type of the header (parameters aside, `*/*` for
/// any) is one of them; no header, or an empty one, accepts anything.
pub(crate) fn restful_accepts(
    headers: &axum::http::HeaderMap,
    produces: &[&str],
) -> Result<(), ApiError> {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|a| !a.is_empty());
    let Some(accept) = accept else {
        return Ok(());
    };
    let produced = accept.split(',').any(|item| {
        let media = item.split(';').next().unwrap_or("").trim();
        media == "*/*" || produces.contains(&media)
    });
    if produced {
        Ok(())
    } else {
        Err(ApiError::route_not_acceptable(produces))
    }
}

fn parse_verb(v: &str) -> Result<Verb, ApiError> {
    Ok(match v {
        "get" => Verb::Get,
        "list" => Verb::List,
        "watch" => Verb::Watch,
        "create" => Verb::Create,
        "update" => Verb::Update,
        "patch" => Verb::Patch,
        "delete" => Verb::Delete,
        "deletecollection" => Verb::DeleteCollection,
        _ => {
            return Err(ApiError::new(
                405,
                kapi_machinery::status::Reason::MethodNotAllowed,
                "the server does not allow this method on the requested resource",
            ))
        }
    })
}
