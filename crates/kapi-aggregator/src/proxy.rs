//! The proxy of remote group-versions, which the core server asks first for
//! every request after the whole filter chain (authentication, audit,
//! impersonation, flow control, authorization), as upstream's `proxyHandler`
//! sits behind `DefaultBuildHandlerChain`: a request under
//! `/apis/<group>/<version>` of a remote APIService goes to its service;
//! `/apis/<group>` of a group only remote servers serve is answered here from
//! the APIServices; anything else is handed back to the local routes.
//!
//! What goes out: the method, path, query and body as received; the client's
//! `Authorization`, `Impersonate-*` and any `X-Remote-*` headers removed, the
//! (possibly impersonated) user set in `X-Remote-User`, `X-Remote-Group` and
//! `X-Remote-Extra-<key>` (key path-escaped as Go's `url.PathEscape`), with
//! the front-proxy client certificate on the TLS connection (`client.rs`).
//! Errors answer as upstream's `proxyError`: plain text, 503 for an
//! unavailable or unresolvable service and for a failed dial.
//!
//! Not proxied (yet): protocol upgrades (`kubectl exec`-like streams), which
//! are answered 400.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

use crate::Aggregator;
use kapi_client::service_resolver;
use kapi_http::user::UserInfo;

use super::Remote;

/// Where a request goes.
enum Route<'a> {
    /// `/apis/<group>/<version>[/...]`
    GroupVersion(&'a str, &'a str),
    /// `/apis/<group>`
    Group(&'a str),
    Other,
}

fn route(path: &str) -> Route<'_> {
    let Some(rest) = path.strip_prefix("/apis/") else {
        return Route::Other;
    };
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().unwrap_or("");
    match parts.next() {
        _ if group.is_empty() => Route::Other,
        None | Some("") => Route::Group(group),
        Some(version) => Route::GroupVersion(group, version),
    }
}

/// Serve `req` if it belongs to a remote group-version; hand it back if not.
pub async fn serve(agg: &Aggregator, req: Request) -> Result<Response, Request> {
    let (group, version) = match route(req.uri().path()) {
        Route::GroupVersion(g, v) => (g.to_owned(), Some(v.to_owned())),
        Route::Group(g) => (g.to_owned(), None),
        Route::Other => return Err(req),
    };
    match version {
        Some(v) => match agg.remote(&group, &v) {
            // Boxed: every request asks first, and the proxy's state held
            // inline would be copied whole into each one's future.
            Some(remote) => {
                let proxied = Box::pin(proxy(agg, remote, req));
                Ok(proxied.await)
            }
            None => Err(req),
        },
        None if agg.apis.groups().iter().all(|local| local.name != group) => {
            match super::discovery::remote_group(agg, &group) {
                Some(body) => Ok(kapi_http::negotiate::respond(
                    StatusCode::OK,
                    &body,
                    kapi_http::negotiate::Format::Json,
                )),
                None => Err(req),
            }
        }
        None => Err(req),
    }
}

/// Upstream's `proxyError`: `http.Error` (plain text).
pub fn proxy_error(code: StatusCode, message: &str) -> Response {
    let mut resp = Response::new(Body::from(format!("{message}\n")));
    *resp.status_mut() = code;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn proxy(agg: &Aggregator, remote: Remote, req: Request) -> Response {
    let Some(user) = req.extensions().get::<UserInfo>().cloned() else {
        return proxy_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    if !remote.available {
        return proxy_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    if is_upgrade(&req) {
        return kapi_http::negotiate::error_response(
            &kapi_machinery::status::ApiError::bad_request(
                "upgrade requests to aggregated API servers are not supported",
            ),
        );
    }
    let resolved = service_resolver::resolve_with(
        &agg.apis,
        agg.routing(),
        &remote.namespace,
        &remote.service,
        remote.port,
    );
    let endpoint = match resolved.await {
        Ok(e) => e,
        Err(e) => {
            tracing::debug!(apiservice = %remote.name, error = %e, "cannot resolve service");
            return proxy_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    let out = outgoing(req, &user, &remote.server_name(), endpoint.port);
    match super::client::send(
        &endpoint,
        &remote.server_name(),
        remote.tls.clone(),
        &remote.dialer,
        out,
    )
    .await
    {
        Ok(resp) if agg.settings.reject_forwarding_redirect && is_redirect(&resp) => {
            // As upstream's proxy with RejectForwardingRedirects.
            let msg = "the backend attempted to redirect this request, which is not permitted";
            let mut out = Response::new(Body::from(msg));
            *out.status_mut() = StatusCode::BAD_GATEWAY;
            out.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            out
        }
        Ok(resp) => {
            let (mut parts, body) = resp.into_parts();
            for h in HOP_BY_HOP {
                parts.headers.remove(*h);
            }
            Response::from_parts(parts, Body::new(body))
        }
        Err(e) => {
            tracing::debug!(apiservice = %remote.name, error = %e, "proxy failed");
            proxy_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("Error trying to reach service: '{e}'"),
            )
        }
    }
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// A 3xx answer with a `Location`.
fn is_redirect<B>(resp: &hyper::Response<B>) -> bool {
    resp.status().is_redirection() && resp.headers().contains_key(axum::http::header::LOCATION)
}

fn is_upgrade(req: &Request) -> bool {
    req.headers()
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
}

/// The request sent to the extension server.
fn outgoing(req: Request, user: &UserInfo, host: &str, port: u16) -> hyper::Request<Body> {
    let (mut parts, body) = req.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    parts.uri = path_and_query.parse().unwrap_or_default();
    parts.version = hyper::Version::HTTP_11;
    parts.extensions = Default::default();
    let h = &mut parts.headers;
    let drop: Vec<HeaderName> = h
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k.starts_with("impersonate-") || k.starts_with("x-remote-")
        })
        .cloned()
        .collect();
    for k in drop {
        h.remove(k);
    }
    for k in HOP_BY_HOP {
        h.remove(*k);
    }
    h.remove(header::AUTHORIZATION);
    if let Ok(v) = HeaderValue::from_str(&format!("{host}:{port}")) {
        h.insert(header::HOST, v);
    }
    set_user_headers(h, user);
    hyper::Request::from_parts(parts, body)
}

/// Upstream's `SetAuthProxyHeaders`.
pub fn set_user_headers(h: &mut axum::http::HeaderMap, user: &UserInfo) {
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        h.insert("x-remote-user", v);
    }
    for g in &user.groups {
        if let Ok(v) = HeaderValue::from_str(g) {
            h.append("x-remote-group", v);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::try_from(format!("x-remote-extra-{}", path_escape(key))) else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                h.append(name.clone(), v);
            }
        }
    }
}

/// Go's `url.PathEscape`.
pub fn path_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.' | b'_' | b'~' | b'$' | b'&' | b'+' | b':' | b'=' | b'@'
            );
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_http::user::UserDetails;

    #[test]
    fn routes() {
        assert!(matches!(
            route("/apis/g/v1/things"),
            Route::GroupVersion("g", "v1")
        ));
        assert!(matches!(
            route("/apis/g/v1"),
            Route::GroupVersion("g", "v1")
        ));
        assert!(matches!(route("/apis/g"), Route::Group("g")));
        assert!(matches!(route("/apis/g/"), Route::Group("g")));
        assert!(matches!(route("/apis"), Route::Other));
        assert!(matches!(route("/api/v1"), Route::Other));
    }

    #[test]
    fn extra_keys_are_path_escaped() {
        assert_eq!(
            path_escape("example.org/key one"),
            "example.org%2Fkey%20one"
        );
        assert_eq!(path_escape("scopes"), "scopes");
    }

    #[test]
    fn user_headers_replace_client_ones() {
        let user = UserInfo::from(UserDetails {
            name: "alice".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [(
                "acme.com/project".to_owned(),
                vec!["a".to_owned(), "b".to_owned()],
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        });
        let req = Request::builder()
            .uri("https://x/apis/g/v1/things?watch=1")
            .header("X-Remote-User", "mallory")
            .header("Impersonate-User", "root")
            .header("Authorization", "Bearer t")
            .body(Body::empty())
            .unwrap();
        let out = outgoing(req, &user, "api.ns.svc", 443);
        assert_eq!(out.uri().to_string(), "/apis/g/v1/things?watch=1");
        let h = out.headers();
        assert_eq!(h.get_all("x-remote-user").iter().count(), 1);
        assert_eq!(h["x-remote-user"], "alice");
        assert_eq!(h.get_all("x-remote-group").iter().count(), 2);
        assert_eq!(
            h.get_all("x-remote-extra-acme.com%2Fproject")
                .iter()
                .count(),
            2
        );
        assert!(h.get("impersonate-user").is_none() && h.get("authorization").is_none());
        assert_eq!(h["host"], "api.ns.svc:443");
    }
}
