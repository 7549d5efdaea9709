//! The create-only review resources: their storage "creates" by answering and
//! stores nothing. The installer routes them like any resource (their
//! `ResourceDef` declares only `create`); `handlers/create.rs` hands the
//! decoded body here instead of to a store.
//!
//! - tokenreviews: the token through the server's authenticator (`authn.rs`);
//! - selfsubjectreviews: the requesting user (`kubectl auth whoami`);
//! - (self/local) subjectaccessreviews: the [`Authorizer`] (`authz.rs`);
//! - selfsubjectrulesreviews: the authorizer's rules for the requester.

use axum::http::StatusCode;
use axum::response::Response;
use kapi_auth::authz::Authorizer;
use kapi_machinery::status::ApiError;
use kapi_resources::reviews::{AUTHENTICATION, AUTHORIZATION};
use serde_json::{json, Map, Value};

use crate::handlers::Ctx;
use kapi_auth::authn::{UserDetails, UserInfo};
use kapi_auth::authz::{Attributes, ResourceAttrs, Verdict};

/// Whether `ctx` addresses a review resource.
pub fn is_review(ctx: &Ctx) -> bool {
    let g = ctx.entry.def.group.as_str();
    g == AUTHENTICATION || g == AUTHORIZATION
}

/// Answer a review: default, validate, then fill `status`.
pub async fn create(ctx: &Ctx, mut obj: Value) -> Result<Response, ApiError> {
    let def = &ctx.entry.def;
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    root.insert("apiVersion".into(), def.api_version().into());
    root.insert("kind".into(), def.kind.clone().into());
    def.strategy.default(&mut obj);
    let errs = def.strategy.validate(&obj);
    if !errs.is_empty() {
        return Err(ApiError::invalid(def.group_kind(), "", &errs));
    }
    let requester = ctx.user.clone().unwrap_or_else(UserInfo::anonymous);
    let status = match def.resource.as_str() {
        "tokenreviews" => token_review(ctx, &obj).await?,
        "selfsubjectreviews" => json!({"userInfo": user_json(&requester)}),
        "selfsubjectrulesreviews" => rules_review(ctx, &obj, &requester).await?,
        "selfsubjectaccessreviews" => access_review(ctx, &obj, requester).await,
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            access_review(ctx, &obj, spec_user(&obj)).await
        }
        _ => return Err(kapi_http::request::not_found()),
    };
    obj["status"] = status;
    crate::handlers::get::respond_object(ctx, StatusCode::CREATED, &obj)
}

/// `authentication.k8s.io/v1` `UserInfo` (empty fields omitted).
fn user_json(user: &UserInfo) -> Value {
    let mut m = Map::new();
    if !user.name.is_empty() {
        m.insert("username".into(), user.name.clone().into());
    }
    if !user.uid.is_empty() {
        m.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        m.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        m.insert("extra".into(), json!(user.extra));
    }
    Value::Object(m)
}

async fn token_review(ctx: &Ctx, obj: &Value) -> Result<Value, ApiError> {
    let token = obj
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(format!(
            "token is required for TokenReview in {AUTHENTICATION}"
        )));
    }
    let Some(auth) = &ctx.authenticator else {
        return Ok(json!({"authenticated": false, "user": {}}));
    };
    let audiences: Vec<String> = obj
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    Ok(match auth.authenticate_token(token, &audiences).await {
        Ok((user, matched)) => {
            let mut status = json!({"authenticated": true, "user": user_json(&user)});
            if !matched.is_empty() {
                status["audiences"] = json!(matched);
            }
            status
        }
        Err(reason) => {
            // Upstream reports the failing authenticator's error; a token no
            // authenticator recognises is simply not authenticated.
            let mut status = json!({"authenticated": false, "user": {}});
            if reason != kapi_auth::authn::UNKNOWN_TOKEN {
                status["error"] = reason.into();
            }
            status
        }
    })
}

/// The subject of a (local) SubjectAccessReview, from its spec.
fn spec_user(obj: &Value) -> UserInfo {
    let strs = |ptr: &str| -> Vec<String> {
        obj.pointer(ptr)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let extra = obj
        .pointer("/spec/extra")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let vals = v
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(str::to_owned));
            (k.clone(), vals.collect())
        })
        .collect();
    UserInfo::from(UserDetails {
        name: obj
            .pointer("/spec/user")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        uid: obj
            .pointer("/spec/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        groups: strs("/spec/groups"),
        extra,
    })
}

async fn access_review(ctx: &Ctx, obj: &Value, user: UserInfo) -> Value {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut attrs = Attributes {
        user,
        ..Default::default()
    };
    if let Some(r) = obj
        .pointer("/spec/resourceAttributes")
        .filter(|v| v.is_object())
    {
        attrs.verb = s(r, "verb");
        attrs.resource = Some(ResourceAttrs {
            group: s(r, "group"),
            version: s(r, "version"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            namespace: s(r, "namespace"),
            name: s(r, "name"),
        });
    } else if let Some(n) = obj.pointer("/spec/nonResourceAttributes") {
        attrs.verb = s(n, "verb");
        attrs.path = Some(s(n, "path"));
    }
    let decision = ctx.srv.authz.authorize(&attrs).await;
    let mut status = json!({"allowed": decision.allowed()});
    if decision.verdict == Verdict::Deny {
        status["denied"] = true.into();
    }
    if !decision.reason.is_empty() {
        status["reason"] = decision.reason.into();
    }
    status
}

async fn rules_review(ctx: &Ctx, obj: &Value, user: &UserInfo) -> Result<Value, ApiError> {
    let ns = obj
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ns.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let rules = ctx.srv.authz.rules_for(user, ns).await;
    let mut status = json!({
        "resourceRules": rules.resource_rules,
        "nonResourceRules": rules.non_resource_rules,
        "incomplete": rules.incomplete,
    });
    if !rules.errors.is_empty() {
        status["evaluationError"] = rules.errors.join(", ").into();
    }
    Ok(status)
}
