//! Request info: what a resource URL names, parsed once for every request, as
//! upstream's `RequestInfoFactory` — API prefix, group, version, namespace,
//! resource, name, subresource and the verb (a GET with a name is `get`, without
//! one `list`, with `watch=true` or under `/watch/` `watch`).

use std::collections::HashMap;

use axum::http::Method;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// What follows the subresource (`pods/p/proxy/<rest>`), with its
    /// leading `/`; empty when nothing does. Only `proxy` serves such paths.
    pub rest: String,
    pub verb: &'static str,
}

/// Parse `path` (without query) into a resource request; `None` when it is not
/// one (discovery, health, …).
pub fn parse(method: &Method, path: &str, query: &Query) -> Option<RequestInfo> {
    let parts = segments(path.trim_matches('/'));
    let (group, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => (("", *version), rest),
        ["apis", group, version, rest @ ..] => ((*group, *version), rest),
        _ => return None,
    };
    let mut rest = rest;
    let watch_path = rest.first() == Some(&"watch");
    if watch_path {
        rest = &rest[1..];
    }
    let mut info = RequestInfo {
        group: group.0.into(),
        version: group.1.into(),
        ..Default::default()
    };
    // `namespaces/{ns}/...` scopes the rest, except a namespace's own
    // subresources (`namespaces/{name}/status`, `/finalize`).
    if rest.len() > 2 && rest[0] == "namespaces" && !matches!(rest[2], "status" | "finalize") {
        info.namespace = Some(rest[1].into());
        rest = &rest[2..];
    }
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s, ..] => (*r, Some(*n), Some(*s)),
        _ => return None,
    };
    if rest.len() > 3 {
        info.rest = format!("/{}", rest[3..].join("/"));
        if path.ends_with('/') {
            info.rest.push('/');
        }
    } else if rest.len() == 3 && path.ends_with('/') {
        info.rest = "/".to_owned();
    }
    if resource.is_empty() {
        return None;
    }
    info.resource = resource.into();
    info.name = name.map(Into::into);
    info.subresource = sub.map(Into::into);
    let watching = watch_path || query.flag("watch");
    info.verb = match (method.as_str(), info.name.is_some()) {
        ("GET" | "HEAD", _) if watching => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "",
    };
    Some(info)
}

/// `path` split at every `/`, as `str::split` splits it: byte by byte (a
/// path's segments are short, where a search per segment costs more than
/// the walk), into room on the stack for the usual dozen.
fn segments(path: &str) -> smallvec::SmallVec<[&str; 12]> {
    let mut parts = smallvec::SmallVec::new();
    let mut start = 0;
    for (i, b) in path.bytes().enumerate() {
        if b == b'/' {
            parts.push(&path[start..i]);
            start = i + 1;
        }
    }
    parts.push(&path[start..]);
    parts
}

/// The query string, decoded. Later values of a repeated key win.
#[derive(Debug, Clone, Default)]
pub struct Query(pub HashMap<String, String>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        let map = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Query(map)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter as upstream's query decoding reads one
    /// (`Convert_Slice_string_To_bool`): absent, `0` or `false` in any case
    /// is false; any other value, the empty one too, is true.
    pub fn flag(&self, key: &str) -> bool {
        self.opt_flag(key).unwrap_or(false)
    }

    /// A `*bool` parameter: `None` when absent, else read as [`Self::flag`].
    pub fn opt_flag(&self, key: &str) -> Option<bool> {
        self.get(key)
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }

    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

/// The answer for a URL that names nothing this server serves.
pub fn not_found() -> kapi_machinery::status::ApiError {
    let mut e = kapi_machinery::status::ApiError::new(
        404,
        kapi_machinery::status::Reason::NotFound,
        "the server could not find the requested resource",
    );
    e.details = Some(Default::default());
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(m: Method, path: &str, q: &str) -> RequestInfo {
        parse(&m, path, &Query::parse(Some(q))).unwrap()
    }

    #[test]
    fn segments_split_as_str_split() {
        let long = "a/".repeat(20) + "b";
        for path in [
            "",
            "a",
            "a/b",
            "a//b",
            "/a/",
            "api/v1/namespaces/d/pods/x/proxy/p/q/",
            &long,
        ] {
            let want: Vec<&str> = path.split('/').collect();
            assert_eq!(segments(path).as_slice(), want.as_slice(), "{path}");
        }
    }

    #[test]
    fn booleans_read_as_gos_query_decoding() {
        let q = Query::parse(Some("a=abc&b=&c=0&d=FALSE&e=False&f=1&g=true"));
        for (key, want) in [
            ("a", true),
            ("b", true),
            ("c", false),
            ("d", false),
            ("e", false),
            ("f", true),
            ("g", true),
            ("missing", false),
        ] {
            assert_eq!(q.flag(key), want, "{key}");
        }
        assert_eq!(q.opt_flag("missing"), None);
        assert_eq!(q.opt_flag("b"), Some(true));
        // `watch=` starts a watch, as upstream's request info decides.
        let i = p(Method::GET, "/api/v1/configmaps", "watch=");
        assert_eq!(i.verb, "watch");
        let i = p(Method::GET, "/api/v1/configmaps", "watch=false");
        assert_eq!(i.verb, "list");
    }

    #[test]
    fn resource_paths() {
        let i = p(Method::GET, "/api/v1/namespaces/default/pods/x/status", "");
        assert_eq!(i.namespace.as_deref(), Some("default"));
        assert_eq!((i.resource.as_str(), i.verb), ("pods", "get"));
        assert_eq!(i.subresource.as_deref(), Some("status"));
        let i = p(Method::GET, "/apis/apps/v1/deployments", "watch=true");
        assert_eq!((i.group.as_str(), i.verb), ("apps", "watch"));
        let i = p(Method::GET, "/api/v1/watch/namespaces/ns1/configmaps", "");
        assert_eq!((i.resource.as_str(), i.verb), ("configmaps", "watch"));
        let i = p(Method::GET, "/api/v1/namespaces/kube-system", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_deref()),
            ("namespaces", Some("kube-system"))
        );
        let i = p(Method::GET, "/api/v1/namespaces", "");
        assert_eq!((i.resource.as_str(), i.verb), ("namespaces", "list"));
        let i = p(Method::DELETE, "/api/v1/namespaces/a/configmaps", "");
        assert_eq!(i.verb, "deletecollection");
        assert!(parse(&Method::GET, "/apis/apps", &Query::default()).is_none());
    }

    #[test]
    fn proxy_paths_keep_what_follows_the_subresource() {
        let i = p(
            Method::GET,
            "/api/v1/namespaces/ns/pods/https:web:8443/proxy/a/b/",
            "",
        );
        assert_eq!(i.name.as_deref(), Some("https:web:8443"));
        assert_eq!(
            (i.subresource.as_deref(), i.rest.as_str()),
            (Some("proxy"), "/a/b/")
        );
        let i = p(Method::POST, "/api/v1/nodes/n1/proxy/metrics", "");
        assert_eq!((i.verb, i.rest.as_str()), ("create", "/metrics"));
        let i = p(Method::GET, "/api/v1/nodes/n1/proxy/", "");
        assert_eq!(i.rest, "/");
        let i = p(Method::GET, "/api/v1/nodes/n1/proxy", "");
        assert_eq!(i.rest, "");
    }
}
