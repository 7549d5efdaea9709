//! `/healthz`, `/livez`, `/readyz` with `?verbose`, `?exclude=` and per-check
//! paths, and `/version`. The storage check is named `etcd`, as upstream, whatever
//! the backend (bounded by `--etcd-healthcheck-timeout`); `/readyz` also has
//! `etcd-readiness` (`--etcd-readycheck-timeout`) and `shutdown`, which fails
//! from the moment termination starts (`kapi_http::lifecycle`, handed over by
//! the lifecycle filter). `/livez` leaves storage out: a storage outage makes
//! the server unready, not dead (restarting it would not help). Checks of other parts
//! ([`Check`], e.g. the KMS providers' `kms-providers`) follow the built-in
//! ones on the endpoints they name.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use futures::future::BoxFuture;
use kapi_http::lifecycle::Lifecycle;
use serde_json::json;

use crate::server::Server;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }

    fn builtin(self) -> &'static [&'static str] {
        match self {
            Endpoint::Livez => &["ping", "log"],
            Endpoint::Healthz => &["ping", "log", "etcd"],
            Endpoint::Readyz => &["ping", "log", "etcd", "etcd-readiness", "shutdown"],
        }
    }

    /// The checks of this endpoint, in the order they are reported.
    fn checks(self, srv: &Server) -> Vec<&str> {
        let extra = srv.checks.iter().filter(|c| c.endpoints.contains(&self));
        self.builtin()
            .iter()
            .copied()
            .chain(extra.map(|c| c.name.as_str()))
            .collect()
    }
}

/// A named health check another part of the server contributes.
#[derive(Clone)]
pub struct Check {
    pub name: String,
    /// Where it is served (upstream serves KMS checks on `/healthz` and
    /// `/readyz` only).
    pub endpoints: Vec<Endpoint>,
    pub run: Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>,
}

/// The lifecycle of the server, when the lifecycle filter runs.
type Shutdown = Option<Extension<Lifecycle>>;

async fn run_check(srv: &Server, name: &str, shutdown: &Shutdown) -> Result<(), String> {
    match name {
        "etcd" => srv.slot.check(srv.config.etcd_healthcheck_timeout).await,
        "etcd-readiness" => srv.slot.check(srv.config.etcd_readycheck_timeout).await,
        "shutdown" if shutdown.as_ref().is_some_and(|lc| lc.is_initiated()) => {
            Err("process is shutting down".into())
        }
        _ => match srv.checks.iter().find(|c| c.name == name) {
            Some(check) => (check.run)().await,
            None => Ok(()),
        },
    }
}

fn text(code: StatusCode, body: String) -> Response {
    let mut resp = (code, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

pub async fn all(srv: Arc<Server>, ep: Endpoint, query: Option<String>, lc: Shutdown) -> Response {
    let q = kapi_http::request::Query::parse(query.as_deref());
    let verbose = q.0.contains_key("verbose");
    let excluded: Vec<&str> = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.strip_prefix("exclude="))
        .collect();
    let mut lines = String::new();
    let mut failed = false;
    for name in ep.checks(&srv) {
        if excluded.contains(&name) {
            lines.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match run_check(&srv, name, &lc).await {
            Ok(()) => lines.push_str(&format!("[+]{name} ok\n")),
            Err(e) => {
                failed = true;
                tracing::warn!(check = name, error = %e, "{} check failed", ep.name());
                lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
            }
        }
    }
    if failed {
        lines.push_str(&format!("{} check failed\n", ep.name()));
        return text(StatusCode::INTERNAL_SERVER_ERROR, lines);
    }
    if verbose {
        lines.push_str(&format!("{} check passed\n", ep.name()));
        return text(StatusCode::OK, lines);
    }
    text(StatusCode::OK, "ok".into())
}

pub async fn one(srv: Arc<Server>, ep: Endpoint, check: String, lc: Shutdown) -> Response {
    if !ep.checks(&srv).contains(&check.as_str()) {
        return text(StatusCode::NOT_FOUND, "404 page not found\n".into());
    }
    match run_check(&srv, &check, &lc).await {
        Ok(()) => text(StatusCode::OK, "ok".into()),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {e}\n"),
        ),
    }
}

pub async fn healthz(
    State(s): State<Arc<Server>>,
    RawQuery(q): RawQuery,
    lc: Shutdown,
) -> Response {
    all(s, Endpoint::Healthz, q, lc).await
}
pub async fn livez(State(s): State<Arc<Server>>, RawQuery(q): RawQuery, lc: Shutdown) -> Response {
    all(s, Endpoint::Livez, q, lc).await
}
pub async fn readyz(State(s): State<Arc<Server>>, RawQuery(q): RawQuery, lc: Shutdown) -> Response {
    all(s, Endpoint::Readyz, q, lc).await
}
pub async fn healthz_one(
    State(s): State<Arc<Server>>,
    Path(c): Path<String>,
    lc: Shutdown,
) -> Response {
    one(s, Endpoint::Healthz, c, lc).await
}
pub async fn livez_one(
    State(s): State<Arc<Server>>,
    Path(c): Path<String>,
    lc: Shutdown,
) -> Response {
    one(s, Endpoint::Livez, c, lc).await
}
pub async fn readyz_one(
    State(s): State<Arc<Server>>,
    Path(c): Path<String>,
    lc: Shutdown,
) -> Response {
    one(s, Endpoint::Readyz, c, lc).await
}

/// The Kubernetes version kapi serves; kubectl's dispatcher picks its binary by the minor.
pub const GIT_VERSION: &str = concat!("v1.33.0-kapi.", env!("CARGO_PKG_VERSION_MINOR"));

/// `GET /version`: the binary's version, the emulated one and the minimum
/// compatibility version (`--emulated-version`); `body` is [`version_body`].
pub fn version(body: Bytes) -> Response {
    let mut resp = Response::new(axum::body::Body::from(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// What `/version` answers, for a server emulating `emulation` (the kube
/// minor emulated, the minimum compatibility minor); it never changes while
/// the server runs, so it is written once.
pub fn version_body(emulation: (u32, u32)) -> Bytes {
    let (emulated, min_compat) = emulation;
    let body = json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": emulated.to_string(),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": min_compat.to_string(),
        "gitVersion": GIT_VERSION,
        "gitCommit": option_env!("KAPI_GIT_COMMIT").unwrap_or("unknown"),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, arch()),
    });
    // Upstream writes the version indented, whoever asks, and without a
    // final newline.
    Bytes::from(serde_json::to_vec_pretty(&body).expect("JSON values serialize"))
}

fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
