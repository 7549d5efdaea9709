//! `/metrics`: a small Prometheus registry and the filter that records every
//! request, with upstream's metric names, labels and buckets
//! (`k8s.io/apiserver/pkg/endpoints/metrics`).
//!
//! This file holds the families, the request filter and the storage gauges;
//! the registry itself is `registry.rs`.
//!
//! Hand-rolled rather than a crate: the server needs counters, gauges and
//! fixed-bucket histograms with string labels rendered in the text format —
//! about 200 lines — and no crate in the offline cache offers that without a
//! larger dependency graph. One [`Metrics`] belongs to one server (tests run
//! several servers in one process); every family is declared once below
//! (`Family` constants), so a name and its labels cannot drift apart.
//!
//! Hot counters (one increment per watch event per watcher) resolve their
//! series once into a [`Counter`] handle: an atomic the exposition reads, so
//! counting takes no lock and allocates nothing.
//!
//! The metrics flags shape what is recorded and served ([`Policy`]):
//! `--disabled-metrics` families are not served, and label values outside an
//! `--allow-metric-labels` allow-list are recorded as `unexpected`, as
//! upstream's component-base metrics do.
//!
//! Invariants: a series' label values follow its family's label names in
//! order; a request is counted once, when its response body ends (or is
//! dropped), so long-running requests count their whole duration as upstream.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::next::Next;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::request::{self, Query};
use kapi_registry::apis::Apis;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
}

/// One metric family: name, help, type and label names.
#[derive(Debug)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
}

/// Upstream's `apiserver_request_duration_seconds` buckets.
const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
/// Upstream's `apiserver_flowcontrol_request_wait_duration_seconds` buckets.
pub const WAIT_BUCKETS: &[f64] = &[
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

const REQUEST_LABELS: &[&str] = &[
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
];

pub const REQUEST_TOTAL: Family = Family {
    name: "apiserver_request_total",
    help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
    kind: Kind::Counter,
    labels: &[
        "verb",
        "dry_run",
        "group",
        "version",
        "resource",
        "subresource",
        "scope",
        "component",
        "code",
    ],
};
pub const REQUEST_DURATION: Family = Family {
    name: "apiserver_request_duration_seconds",
    help: "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
    kind: Kind::Histogram(REQUEST_BUCKETS),
    labels: REQUEST_LABELS,
};
pub const INFLIGHT: Family = Family {
    name: "apiserver_current_inflight_requests",
    help: "Number of requests currently executing in this apiserver per request kind (readOnly or mutating).",
    kind: Kind::Gauge,
    labels: &["request_kind"],
};
pub const DROPPED: Family = Family {
    name: "apiserver_dropped_requests_total",
    help: "Number of requests dropped with 'Try again later' response.",
    kind: Kind::Counter,
    labels: &["request_kind"],
};
const STORAGE_OBJECTS: Family = Family {
    name: "apiserver_storage_objects",
    help: "Number of stored objects at the time of last check split by kind.",
    kind: Kind::Gauge,
    labels: &["resource"],
};
pub const STORAGE_SIZE: Family = Family {
    name: "apiserver_storage_size_bytes",
    help: "Size of the storage database file physically allocated in bytes.",
    kind: Kind::Gauge,
    labels: &["storage_cluster_id"],
};
/// Deprecated in 1.28, so hidden unless `--show-hidden-metrics-for-version`.
pub const DB_TOTAL_SIZE: Family = Family {
    name: "apiserver_storage_db_total_size_in_bytes",
    help: "[ALPHA] (Deprecated since 1.28.0) Total size of the storage database file physically allocated in bytes.",
    kind: Kind::Gauge,
    labels: &["endpoint"],
};
pub const WATCH_EVENTS: Family = Family {
    name: "apiserver_watch_events_total",
    help: "Number of events sent in watch clients",
    kind: Kind::Counter,
    labels: &["group", "version", "resource"],
};
const TERMINATED_WATCHERS: Family = Family {
    name: "apiserver_terminated_watchers_total",
    help: "Counter of watchers closed due to unresponsiveness.",
    kind: Kind::Counter,
    labels: &[],
};

/// kapi's own: what the encode-once slots hold against their budget.
const ENCODED_BYTES: Family = Family {
    name: "kapi_watch_cache_encoded_bytes",
    help: "Bytes of protobuf encodings kept with watch-cached objects and events, process-wide.",
    kind: Kind::Gauge,
    labels: &[],
};
const ENCODED_BUDGET: Family = Family {
    name: "kapi_watch_cache_encoded_budget_bytes",
    help: "The most bytes of encodings kept with watch-cached objects and events.",
    kind: Kind::Gauge,
    labels: &[],
};

/// Upstream's metric verb (`NormalizedVerb`): `LIST`, `WATCH`, `APPLY`, the
/// method otherwise. The handlers' trace spans name it too.
pub fn metric_verb(method: &str, info: Option<&request::RequestInfo>, apply: bool) -> String {
    verb_label(method, info, apply).into_owned()
}

/// [`metric_verb`], not allocated for the usual verbs and methods.
fn verb_label(
    method: &str,
    info: Option<&request::RequestInfo>,
    apply: bool,
) -> std::borrow::Cow<'static, str> {
    match info.map(|i| i.verb) {
        Some("list") => "LIST".into(),
        Some("watch") => "WATCH".into(),
        Some("patch") if apply => "APPLY".into(),
        _ => match method {
            "GET" => "GET".into(),
            "POST" => "POST".into(),
            "PUT" => "PUT".into(),
            "PATCH" => "PATCH".into(),
            "DELETE" => "DELETE".into(),
            other => other.to_ascii_uppercase().into(),
        },
    }
}

/// The labels of one request, computed before it runs: read from its kind
/// (which the request info's strings live in) when it ends, not copied.
struct RequestLabels {
    kind: Arc<crate::limits::Kind>,
    verb: std::borrow::Cow<'static, str>,
    dry_run: String,
}

impl RequestLabels {
    fn new(req: &Request, kind: Arc<crate::limits::Kind>) -> RequestLabels {
        let query = Query::parse(req.uri().query());
        let apply = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("application/apply-patch"));
        RequestLabels {
            verb: verb_label(req.method().as_str(), kind.info.as_ref(), apply),
            dry_run: query.get("dryRun").unwrap_or("").to_owned(),
            kind,
        }
    }

    /// Group, version, resource.
    fn resource(&self) -> [&str; 3] {
        match &self.kind.info {
            Some(i) => [&i.group, &i.version, &i.resource],
            None => [""; 3],
        }
    }

    /// `verb`, `dry_run`, `group`, `version`, `resource`, `subresource`,
    /// `scope`, `component`.
    fn values(&self) -> [&str; 8] {
        let (sub, scope) = match &self.kind.info {
            Some(i) => {
                let scope = if i.name.is_some() {
                    "resource"
                } else if i.namespace.is_some() {
                    "namespace"
                } else {
                    "cluster"
                };
                (i.subresource.as_deref().unwrap_or(""), scope)
            }
            None => ("", ""),
        };
        let [group, version, resource] = self.resource();
        [
            &self.verb,
            &self.dry_run,
            group,
            version,
            resource,
            sub,
            scope,
            "apiserver",
        ]
    }
}

/// The filter: count and time every request when its response ends; count the
/// events of watch responses.
pub async fn layer<N: Next>(State(metrics): State<Metrics>, mut req: Request, next: N) -> Response {
    let started = Instant::now();
    let kind = crate::limits::Kind::of(&req);
    let labels = RequestLabels::new(&req, kind.clone());
    req.extensions_mut().insert(kind);
    let watch = labels.verb == "WATCH";
    let resp = next.run(req).await;
    let code = resp.status();
    let on_frame = watch.then(|| {
        let events = metrics.counter(&WATCH_EVENTS, &labels.resource());
        move |_: usize| events.inc()
    });
    crate::limits::on_body_end(resp, on_frame, move || {
        let took = started.elapsed().as_secs_f64();
        let code = [code.as_str()];
        metrics.observe_and_count(
            &REQUEST_DURATION,
            &labels.values(),
            took,
            &REQUEST_TOTAL,
            &code,
        );
    })
}

/// `apiserver_storage_db_total_size_in_bytes`, every member of every storage
/// cluster asked for its database size each `--etcd-db-metric-poll-interval`
/// (upstream's per-endpoint monitor; -1 for a member that does not answer),
/// while the series is served (it is hidden without
/// `--show-hidden-metrics-for-version`). Runs until the runtime ends.
pub fn spawn_db_size_poll(metrics: &Metrics, apis: &Apis) {
    let Some(period) = metrics.db_poll() else {
        return;
    };
    let clusters = apis.storage_clusters().to_vec();
    let metrics = metrics.clone();
    tokio::spawn(async move {
        loop {
            for cluster in &clusters {
                let Ok(Ok(sizes)) =
                    tokio::time::timeout(period.max(Duration::from_secs(1)), cluster.db_sizes())
                        .await
                else {
                    continue;
                };
                for size in sizes {
                    let bytes = size.bytes.unwrap_or(-1) as f64;
                    metrics.set(&DB_TOTAL_SIZE, &[&size.endpoint], bytes);
                }
            }
            tokio::time::sleep(period).await;
        }
    });
}

/// `apiserver_storage_size_bytes`, asked of each storage cluster at scrape
/// time as upstream's collector does (one second each; a cluster that does
/// not answer has no series).
async fn refresh_storage_sizes(apis: &Apis, metrics: &Metrics) {
    for (i, cluster) in apis.storage_clusters().iter().enumerate() {
        let id = format!("etcd-{i}");
        let answer = tokio::time::timeout(Duration::from_secs(1), cluster.db_sizes()).await;
        let bytes = match answer {
            Ok(Ok(sizes)) => sizes.into_iter().find_map(|s| s.bytes),
            _ => None,
        };
        match bytes {
            Some(b) => metrics.set(&STORAGE_SIZE, &[&id], b as f64),
            None => metrics.remove(&STORAGE_SIZE, &[&id]),
        }
    }
}

/// `GET /metrics`: refresh the sampled gauges, then render.
pub async fn serve(apis: &Apis, metrics: Metrics) -> Response {
    refresh_storage_sizes(apis, &metrics).await;
    if let Some(cache) = apis.cache().filter(|_| metrics.count_due()) {
        let mut seen = std::collections::BTreeSet::new();
        for e in apis.all() {
            let gr = e.def.group_resource().to_string();
            if seen.insert(gr.clone()) {
                let n = cache.cached_objects(&e.def.list_prefix(None));
                metrics.set(&STORAGE_OBJECTS, &[&gr], n as f64);
            }
        }
    }
    let terminated = kapi_registry::cache::terminated_watchers_total();
    metrics.set(&TERMINATED_WATCHERS, &[], terminated as f64);
    let encoded = kapi_registry::cache::encoded_bytes();
    metrics.set(&ENCODED_BYTES, &[], encoded as f64);
    let budget = kapi_registry::cache::encoded_budget();
    metrics.set(&ENCODED_BUDGET, &[], budget as f64);
    let mut resp = metrics.render().into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

mod registry;
pub use registry::{Counter, Gauge, Metrics, Observer, Policy};

#[cfg(test)]
mod tests;
