//! Cross-origin requests (`--cors-allowed-origins`), as upstream's `WithCORS`
//! with kube-apiserver's settings: a request whose `Origin` matches one of the
//! allowed regular expressions gets the `Access-Control-*` headers (the
//! origin echoed, credentials allowed), and a preflight `OPTIONS` from such an
//! origin is answered 204 right here; other requests pass untouched.
//!
//! Invariant: every pattern pins the host's start (`^` or `//`) and end (`$`
//! or `:`), as upstream requires since CVE-2022-1996; [`Cors::new`] refuses
//! one that does not, naming the flag.

use crate::next::Next;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

const ALLOW_METHODS: &str = "POST, GET, OPTIONS, PUT, DELETE, PATCH";
const ALLOW_HEADERS: &str = "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, \
     Authorization, X-Requested-With, If-Modified-Since";
const EXPOSE_HEADERS: &str = "Date";
const HELP: &str = "List of allowed origins for CORS, comma separated. An allowed origin can be \
     a regular expression to support subdomain matching. If this list is empty CORS will not be \
     enabled. Please ensure each expression matches the entire hostname by anchoring to the \
     start with '^' or including the '//' prefix, and by anchoring to the end with '$' or \
     including the ':' port separator suffix. Examples of valid expressions are \
     '//example\\.com(:|$)' and '^https://example\\.com(:|$)'";

/// The allowed origins.
#[derive(Clone, Debug)]
pub struct Cors {
    origins: Vec<regex::Regex>,
}

impl Cors {
    /// The filter's state for `--cors-allowed-origins`; `None` when the list
    /// is empty (CORS off).
    pub fn new(patterns: &[String]) -> Result<Option<Cors>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let mut origins = Vec::new();
        for p in patterns {
            if p.is_empty() {
                return Err(format!(
                    "empty value in --cors-allowed-origins, help: {HELP}"
                ));
            }
            let re = regex::Regex::new(p).map_err(|e| invalid(&e.to_string()))?;
            let pins_start = p.contains('^') || p.contains("//");
            let pins_end = p.contains('$') || p.contains(':');
            if !pins_start || !pins_end {
                return Err(invalid(
                    "regular expression does not pin to start/end of host in the origin header",
                ));
            }
            origins.push(re);
        }
        Ok(Some(Cors { origins }))
    }

    fn allows(&self, origin: &str) -> bool {
        self.origins.iter().any(|re| re.is_match(origin))
    }
}

fn invalid(why: &str) -> String {
    format!("--cors-allowed-origins has an invalid regular expression: {why}, help: {HELP}")
}

/// The filter.
pub async fn layer<N: Next>(State(cors): State<Cors>, req: Request, next: N) -> Response {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| !o.is_empty() && cors.allows(o))
        .and_then(|o| HeaderValue::from_str(o).ok());
    let Some(origin) = origin else {
        return next.run(req).await;
    };
    let mut resp = if req.method() == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(ALLOW_METHODS),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
        HeaderValue::from_static("true"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_must_pin_the_host() {
        let e = Cors::new(&["example.com".into()]).unwrap_err();
        assert!(e.starts_with("--cors-allowed-origins has an invalid regular expression: regular expression does not pin"), "{e}");
        assert!(Cors::new(&["".into()])
            .unwrap_err()
            .starts_with("empty value in --cors-allowed-origins"));
        assert!(Cors::new(&[]).unwrap().is_none());
        let c = Cors::new(&["//example\\.com(:|$)".into()])
            .unwrap()
            .unwrap();
        assert!(c.allows("https://example.com"));
        assert!(c.allows("http://example.com:8080"));
        assert!(!c.allows("https://example.com.evil.org"));
    }
}
