//! The dispatcher: one entry for every resource URL. It resolves the request
//! to a resource of the table, checks the verb against what the resource
//! declares (`ResourceDef::verbs` and its subresources — the declaration
//! discovery reads), and hands over to the verb's handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::Response;
use kapi_http::negotiate;
use kapi_http::request::{self, not_found, Query, RequestInfo};
use kapi_machinery::status::ApiError;
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
    let Some(info) = request::parse(&parts.method, parts.uri.path(), &query) else {
        return negotiate::error_response_for(&not_found(), accept.as_deref());
    };
    match handle(srv, info, query, parts, body).await {
        Ok(resp) => resp,
        Err(e) => negotiate::error_response_for(&e, accept.as_deref()),
    }
}

async fn handle(
    srv: Arc<Server>,
    info: RequestInfo,
    query: Query,
    parts: Parts,
    body: Body,
) -> Result<Response, ApiError> {
    let entry = srv
        .apis
        .lookup(&info.group, &info.version, &info.resource)
        .ok_or_else(not_found)?;
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
    let allowed = match &sub {
        None => def.supports(verb),
        Some(s) => s.verbs().contains(&verb),
    };
    if !allowed {
        return Err(ApiError::method_not_supported(
            def.group_resource(),
            info.verb,
        ));
    }
    if !info.rest.is_empty() && !matches!(sub, Some(Subresource::Proxy { .. })) {
        return Err(not_found());
    }
    if let Some(s) = sub.as_ref().filter(|s| super::connect::is_connect(s)) {
        return super::connect::serve(srv, &entry, &info, s, parts, body).await;
    }
    let accept_header = parts.headers.get(axum::http::header::ACCEPT);
    let accept = negotiate::negotiate(
        accept_header.and_then(|v| v.to_str().ok()),
        negotiate::protobuf_kind(def),
    )?;
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
        headers: parts.headers,
    };
    let warning = ctx.entry.def.strategy.deprecation_warning();
    let mut resp = serve(ctx, verb, sub, body).await?;
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

/// Hand the request to its verb's handler.
async fn serve(
    ctx: Ctx,
    verb: Verb,
    sub: Option<Subresource>,
    body: Body,
) -> Result<Response, ApiError> {
    match (verb, sub) {
        (Verb::Get, None) => get::get(&ctx).await,
        (Verb::List, None) => list::list(&ctx).await,
        (Verb::Watch, None) => watch::watch(ctx).await,
        (Verb::Create, None) => create::create(&ctx, body).await,
        (Verb::Update, None) => update::update(&ctx, body, false).await,
        (Verb::Patch, None) => patch::patch(&ctx, body, false).await,
        (Verb::Delete, None) => delete::delete(&ctx, body).await,
        (Verb::DeleteCollection, None) => delete::delete_collection(&ctx, body).await,
        (
            Verb::Get,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => get::get(&ctx).await,
        (
            Verb::Update,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => update::update(&ctx, body, true).await,
        (
            Verb::Patch,
            Some(Subresource::Status | Subresource::Approval | Subresource::EphemeralContainers),
        ) => patch::patch(&ctx, body, true).await,
        (verb, Some(sub @ Subresource::Scale { .. })) => scale::scale(&ctx, verb, &sub, body).await,
        (Verb::Update, Some(Subresource::Finalize)) => {
            update::update_target(&ctx, body, UpdateTarget::Finalize).await
        }
        (Verb::Create, Some(Subresource::Eviction)) => eviction::evict(&ctx, body).await,
        (Verb::Create, Some(Subresource::Binding)) => binding::bind_subresource(&ctx, body).await,
        (Verb::Create, Some(Subresource::Token)) => token::token(&ctx, body).await,
        _ => Err(ApiError::method_not_supported(
            ctx.entry.def.group_resource(),
            ctx.info.verb,
        )),
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
