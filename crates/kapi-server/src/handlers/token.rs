//! `POST serviceaccounts/{name}/token`: a TokenRequest answered with a signed,
//! bound service account token, as upstream's `TokenREST`.
//!
//! `spec.audiences` defaults to the API audiences, `spec.expirationSeconds` to
//! 3600 (at least 600, at most 2^32); `spec.boundObjectRef` may name a Pod or
//! Secret of the account's namespace or a Node, which must exist (and have the
//! given uid);
//! a pod must run as this account. The token stops authenticating when the
//! account or the bound object is deleted (`authn/serviceaccount.rs`).
//!
//! The TokenRequest goes through admission as a create of
//! `serviceaccounts/token` (kind `authentication.k8s.io/v1 TokenRequest`,
//! named as the account): a mutating webhook may change the request before
//! it is read; validating admission sees it defaulted, before the token is
//! issued.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::{ApiError, GroupKind, GroupResource};
use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::{json, Value};

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use kapi_auth::authn::serviceaccount::{now, rfc3339, Binding};
use kapi_http::body::read_body;
use kapi_http::negotiate;

const KIND: &str = "TokenRequest";
const GROUP: &str = "authentication.k8s.io";

fn invalid(name: &str, path: &str, value: Value, detail: &str) -> ApiError {
    let mut parts = path.split('.');
    let mut fp = FieldPath::new(parts.next().unwrap_or(""));
    for p in parts {
        fp = fp.child(p);
    }
    let err = FieldError::invalid(&fp, value, detail);
    ApiError::invalid(GroupKind::new(GROUP, KIND), name, &vec![err])
}

pub async fn token(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(body).await?;
    let mut req = negotiate::decode_body(ctx.content_type(), &bytes)?;
    let kind = req.get("kind").and_then(Value::as_str).unwrap_or(KIND);
    if kind != KIND {
        return Err(ApiError::bad_request(format!(
            "expected {KIND}, got {kind}"
        )));
    }
    let opts = ctx.write_options()?;
    let adm = RequestAdmission::subresource_create(ctx, &mut req, &opts).await?;
    let ns = ctx.namespace().unwrap_or("").to_owned();
    let name = ctx.name().to_owned();
    let body_name = kapi_registry::meta::name(&req);
    if !body_name.is_empty() && body_name != name {
        return Err(invalid(
            &name,
            "metadata.name",
            json!(body_name),
            "must match the service account name if specified",
        ));
    }
    let sa = ctx.entry.store.get(Some(&ns), &name, None).await?;
    let sa_uid = sa
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let issuer = ctx.srv.service_accounts.clone();

    let spec = req.get("spec").cloned().unwrap_or(json!({}));
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| issuer.audiences().to_vec());
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => 3600,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if expiration < 600 {
        return Err(invalid(
            &name,
            "spec.expirationSeconds",
            json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > 1 << 32 {
        return Err(invalid(
            &name,
            "spec.expirationSeconds",
            json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }

    // Validating admission sees the request as defaulted, before the bound
    // object is looked at (upstream `TokenREST.Create`).
    let mut checked = req.clone();
    checked["spec"] = spec.clone();
    checked["spec"]["audiences"] = json!(audiences);
    checked["spec"]["expirationSeconds"] = json!(expiration);
    let m = kapi_registry::meta::meta_mut(&mut checked);
    m.insert("name".into(), json!(name));
    m.insert("namespace".into(), json!(ns));
    m.insert(
        "creationTimestamp".into(),
        json!(kapi_registry::meta::now_rfc3339()),
    );
    checked["status"] = json!({});
    adm.validate_create(&checked).await?;

    let bound = bound_object(ctx, &ns, &name, spec.get("boundObjectRef")).await?;
    let (expiration, warning) = issuer.cap_expiration(expiration);
    let pod_bound = bound.as_ref().is_some_and(|(k, _, _)| k == "Pod");
    let (lifetime, warn_after) = issuer.extended(expiration, pod_bound, &audiences);
    let (token, _) = issuer
        .issue(&Binding {
            namespace: &ns,
            account: (&name, &sa_uid),
            object: bound
                .as_ref()
                .map(|(k, n, u)| (k.as_str(), n.as_str(), u.as_str())),
            audiences: &audiences,
            expiration_seconds: lifetime,
            warn_after_seconds: warn_after,
        })
        .await
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
    let exp = now() + expiration;
    let mut spec = spec;
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(expiration);
    if let Some((kind, bname, uid)) = &bound {
        spec["boundObjectRef"] =
            json!({"kind": kind, "apiVersion": "v1", "name": bname, "uid": uid});
    }
    req = json!({
        "kind": KIND, "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns,
            "creationTimestamp": kapi_registry::meta::now_rfc3339()},
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": rfc3339(exp)},
    });
    let accept = &ctx.accept;
    let mut resp = negotiate::respond(StatusCode::CREATED, &req, accept.format);
    if let Some(text) = warning {
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            resp.headers_mut().append(axum::http::header::WARNING, v);
        }
    }
    Ok(resp)
}

/// `(kind, name, uid)` of the bound object, checked as upstream.
async fn bound_object(
    ctx: &Ctx,
    ns: &str,
    sa: &str,
    r: Option<&Value>,
) -> Result<Option<(String, String, String)>, ApiError> {
    let Some(r) = r.filter(|r| r.is_object()) else {
        return Ok(None);
    };
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (kind, api_version, name, uid) = (s("kind"), s("apiVersion"), s("name"), s("uid"));
    let resource = match (kind.as_str(), api_version.as_str()) {
        ("Pod", "v1" | "") => "pods",
        ("Secret", "v1" | "") => "secrets",
        ("Node", "v1" | "") => "nodes",
        _ => {
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let entry = ctx
        .srv
        .apis
        .lookup("", "v1", resource)
        .ok_or_else(kapi_http::request::not_found)?;
    let scope = (resource != "nodes").then_some(ns);
    let obj = entry.store.get(scope, &name, None).await?;
    let actual = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if !uid.is_empty() && uid != actual {
        return Err(ApiError::conflict(
            GroupResource::new("", &kind),
            &name,
            format!("the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"),
        ));
    }
    if resource == "pods" {
        let runs_as = obj
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if runs_as != sa {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {sa:?} to pod running with different serviceaccount name."
            )));
        }
    }
    Ok(Some((kind, name, actual)))
}
