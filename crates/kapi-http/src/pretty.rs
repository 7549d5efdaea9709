//! Indented JSON for people, as upstream's negotiation gives it: when the
//! query has `pretty` set to a true value (Go's `strconv.ParseBool`: `1`, `t`,
//! `true`, …; any other value, even one that does not parse, means no), or,
//! without a `pretty` parameter, when the User-Agent starts with `curl`,
//! `Wget` or `Mozilla/5.0`. Upstream's pretty serializer indents by two
//! spaces and writes no final newline (`json.MarshalIndent`), where the
//! compact one ends with a newline.
//!
//! Applied to whole `application/json` responses only: watch streams,
//! proxied and streamed subresources pass as they are, as upstream encodes
//! those without its pretty serializer.

use crate::next::Next;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, Method, Uri};
use axum::response::Response;

/// Whether the request asks for indented JSON.
pub fn wanted(uri: &Uri, headers: &HeaderMap) -> bool {
    let query = uri.query().unwrap_or("");
    let pretty = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "pretty");
    if let Some((_, v)) = pretty {
        if !v.is_empty() {
            return matches!(&*v, "1" | "t" | "T" | "true" | "TRUE" | "True");
        }
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|p| agent.starts_with(p))
}

/// Whether the response to `uri` is one object upstream would encode with
/// its negotiated serializer (not a watch, a proxied body or a stream).
fn whole_object(uri: &Uri) -> bool {
    let path = uri.path();
    let api = path == "/api" || path.starts_with("/api/") || path.starts_with("/apis");
    if !api {
        return false;
    }
    let query = crate::request::Query::parse(uri.query());
    let Some(info) = crate::request::parse(&Method::GET, path, &query) else {
        // Discovery documents and paths that are not found: one object.
        return true;
    };
    let streamed = ["proxy", "log", "exec", "attach", "portforward"];
    info.verb != "watch" && !streamed.contains(&info.subresource.as_deref().unwrap_or(""))
}

/// The middleware: indent the JSON body of responses to requests that ask.
pub async fn layer<N: Next>(req: Request, next: N) -> Response {
    let indent = wanted(req.uri(), req.headers()) && whole_object(req.uri());
    let resp = next.run(req).await;
    if !indent {
        return resp;
    }
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "reading a response to indent it failed");
            return Response::from_parts(parts, Body::empty());
        }
    };
    let out = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) => serde_json::to_vec_pretty(&v).expect("JSON values serialize"),
        Err(_) => bytes.to_vec(),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(uri: &str, agent: &str) -> bool {
        let uri: Uri = uri.parse().unwrap();
        let mut h = HeaderMap::new();
        if !agent.is_empty() {
            h.insert(header::USER_AGENT, agent.parse().unwrap());
        }
        wanted(&uri, &h) && whole_object(&uri)
    }

    #[test]
    fn query_and_agents_decide_as_upstream() {
        assert!(ask("/api/v1/namespaces?pretty=true", ""));
        assert!(ask("/api/v1/namespaces?pretty=1", "kubectl/v1.33"));
        assert!(!ask("/api/v1/namespaces?pretty=yes", "curl/8.0"));
        assert!(!ask("/api/v1/namespaces?pretty=false", "curl/8.0"));
        assert!(ask("/api/v1/namespaces?pretty=", "curl/8.0"));
        assert!(ask("/api/v1/namespaces", "curl/8.0"));
        assert!(ask("/apis/apps/v1", "Wget/1.21"));
        assert!(ask("/api", "Mozilla/5.0 (X11)"));
        assert!(!ask("/api/v1/namespaces", "kubectl/v1.33"));
        assert!(!ask("/api/v1/namespaces", "Mozilla/4.0"));
    }

    #[test]
    fn streams_and_proxies_are_left_alone() {
        assert!(!ask("/api/v1/namespaces?watch=true", "curl/8.0"));
        assert!(!ask("/api/v1/watch/namespaces", "curl/8.0"));
        assert!(!ask("/api/v1/namespaces/d/pods/p/log", "curl/8.0"));
        assert!(!ask("/api/v1/nodes/n/proxy/metrics", "curl/8.0"));
        assert!(ask("/api/v1/namespaces/d/configmaps/log", "curl/8.0"));
        assert!(!ask("/healthz", "curl/8.0"));
        assert!(ask("/api/v1/namespaces?watch=false", "curl/8.0"));
    }
}
