//! The impersonation filter (upstream `filters.WithImpersonation`): a request
//! carrying `Impersonate-User` (with optional `Impersonate-Group`,
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` headers) runs as that user
//! once the authenticated requester may `impersonate` each part:
//!
//! | header | resource checked |
//! |---|---|
//! | user `system:serviceaccount:<ns>:<n>` | `serviceaccounts` `<n>` in `<ns>` (group `""`) |
//! | any other user | `users` `<name>` (group `""`) |
//! | group | `groups` `<name>` (group `""`) |
//! | extra `<key>: <value>` | `userextras/<key>` `<value>` (`authentication.k8s.io`) |
//! | uid | `uids` `<uid>` (`authentication.k8s.io`) |
//!
//! The impersonated user gets `system:authenticated` (or, when it is
//! `system:anonymous`, `system:unauthenticated`) unless the request named one;
//! a service account without `Impersonate-Group` gets its fixed groups. Groups,
//! extras or a uid without a user is an error (500 with a plain-text body, as upstream). The headers
//! are removed once consumed.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use kapi_http::next::Next;

use super::{filter::forbidden, Attributes, ResourceAttrs};
use crate::authz::Authorizer;
use kapi_http::negotiate::error_response;
use kapi_http::user::{
    UserDetails, UserInfo, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_USER,
};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

/// What the headers ask for.
#[derive(Debug, Default, PartialEq)]
struct Wanted {
    user: Option<String>,
    groups: Vec<String>,
    uid: Option<String>,
    extra: BTreeMap<String, Vec<String>>,
}

fn wanted(headers: &HeaderMap) -> Result<Option<Wanted>, String> {
    let mut w = Wanted::default();
    let mut any = false;
    for (name, value) in headers {
        let name = name.as_str();
        let value = || value.to_str().unwrap_or("").to_owned();
        if name == USER {
            w.user = Some(value());
        } else if name == GROUP {
            w.groups.push(value());
        } else if name == UID {
            w.uid = Some(value());
        } else if let Some(key) = name.strip_prefix(EXTRA) {
            let key = path_unescape(key);
            w.extra.entry(key).or_default().push(value());
        } else {
            continue;
        }
        any = true;
    }
    if !any {
        return Ok(None);
    }
    if w.user.as_deref().is_none_or(str::is_empty) {
        return Err(
            "requested impersonation of groups, extra or uid without impersonating a user".into(),
        );
    }
    Ok(Some(w))
}

/// Go's `url.PathUnescape` (keys with invalid escapes are kept as sent).
fn path_unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b'%', _, _) => return key.to_owned(),
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

/// The access checks impersonating `w` needs, with the resulting user.
fn checks(w: &Wanted, requester: &UserInfo) -> (Vec<Attributes>, UserInfo) {
    let name = w.user.clone().unwrap_or_default();
    let core = |resource: &str, namespace: &str, name: &str| ResourceAttrs {
        group: String::new(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    };
    let authn = |resource: &str, sub: &str, name: &str| ResourceAttrs {
        group: "authentication.k8s.io".into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        ..Default::default()
    };
    let mut out = Vec::new();
    let mut groups = w.groups.clone();
    let sa = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    match sa {
        Some((ns, sa_name)) => {
            out.push(core("serviceaccounts", ns, sa_name));
            if w.groups.is_empty() {
                groups = vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                ];
            }
        }
        None => out.push(core("users", "", &name)),
    }
    for g in &w.groups {
        out.push(core("groups", "", g));
    }
    for (k, vals) in &w.extra {
        for v in vals {
            out.push(authn("userextras", k, v));
        }
    }
    if let Some(uid) = &w.uid {
        out.push(authn("uids", "", uid));
    }
    if name == ANONYMOUS_USER {
        if !groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
            groups.push(ALL_UNAUTHENTICATED.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
    {
        groups.push(ALL_AUTHENTICATED.into());
    }
    let attrs = out
        .into_iter()
        .map(|r| Attributes::resource(requester, "impersonate", r))
        .collect();
    let user = UserInfo::from(UserDetails {
        name,
        uid: w.uid.clone().unwrap_or_default(),
        groups,
        extra: w.extra.clone(),
    });
    (attrs, user)
}

/// axum middleware: replace the request's user by the impersonated one.
pub async fn impersonate_layer<N: Next>(
    State(authz): State<Arc<dyn Authorizer>>,
    mut req: Request,
    next: N,
) -> Response {
    let w = match wanted(req.headers()) {
        Ok(None) => return next.run(req).await,
        Ok(Some(w)) => w,
        Err(msg) => {
            // Upstream answers with `responsewriters.InternalError`: plain text
            // naming the request URI (path and query, also over HTTP/2).
            let uri = req.uri().path_and_query().map_or("/", |p| p.as_str());
            let body = format!("Internal Server Error: {uri:?}: {msg}\n");
            let headers = [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )];
            return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, headers, body).into_response();
        }
    };
    let requester = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let (attrs, user) = checks(&w, &requester);
    for a in &attrs {
        let d = authz.authorize(a).await;
        if !d.allowed() {
            tracing::debug!(requester = %requester.name, "impersonation forbidden");
            return error_response(&forbidden(a, &d.reason));
        }
    }
    let headers = req.headers_mut();
    let names: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
    req.extensions_mut().insert(user);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn headers_to_checks_and_user() {
        assert_eq!(wanted(&headers(&[("accept", "x")])).unwrap(), None);
        assert!(wanted(&headers(&[("Impersonate-Group", "g")])).is_err());
        let w = wanted(&headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes%2Fa+b", "s1"),
            ("Impersonate-Uid", "u1"),
        ]))
        .unwrap()
        .unwrap();
        let (attrs, user) = checks(&w, &UserInfo::default());
        let what: Vec<(String, String, String)> = attrs
            .iter()
            .map(|a| {
                let r = a.resource.as_ref().unwrap();
                (r.resource.clone(), r.subresource.clone(), r.name.clone())
            })
            .collect();
        assert_eq!(
            what,
            [
                ("users", "", "bob"),
                ("groups", "", "dev"),
                ("groups", "", "ops"),
                ("userextras", "scopes/a+b", "s1"),
                ("uids", "", "u1")
            ]
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        );
        assert_eq!(user.groups, vec!["dev", "ops", ALL_AUTHENTICATED]);
        assert_eq!(user.extra["scopes/a+b"], vec!["s1"]);
        let sa = wanted(&headers(&[(
            "Impersonate-User",
            "system:serviceaccount:ns1:robot",
        )]))
        .unwrap()
        .unwrap();
        let (attrs, user) = checks(&sa, &UserInfo::default());
        let r = attrs[0].resource.as_ref().unwrap();
        assert_eq!(
            (r.resource.as_str(), r.namespace.as_str(), r.name.as_str()),
            ("serviceaccounts", "ns1", "robot")
        );
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                ALL_AUTHENTICATED
            ]
        );
    }
}
