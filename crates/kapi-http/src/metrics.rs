//! `/metrics`: a small Prometheus registry and the filter that records every
//! request, with upstream's metric names, labels and buckets
//! (`k8s.io/apiserver/pkg/endpoints/metrics`).
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

enum Series {
    Value(f64),
    /// A counter series handed out as a [`Counter`]: whole increments, no lock.
    Atomic(Arc<AtomicU64>),
    Histogram {
        counts: Vec<u64>,
        sum: f64,
        count: u64,
    },
}

type Key = (&'static str, Vec<String>);

/// The series of every family, found by a hash of the family's name and the
/// label values (several series only when two hash alike), so recording a
/// value allocates nothing once its series exists.
/// The series by the hash of their family and label values ([`series_hash`]);
/// the key is a hash already, hashed again by the map at little cost.
type SeriesMap = std::collections::HashMap<u64, Vec<(Key, Series)>, foldhash::fast::FixedState>;

/// The hash of a series: a fast hash, seeded once per process (the label
/// values come from requests).
fn series_hash<'a>(name: &str, values: impl Iterator<Item = &'a str>) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    static SEED: std::sync::LazyLock<foldhash::fast::RandomState> =
        std::sync::LazyLock::new(Default::default);
    let mut h = SEED.build_hasher();
    name.hash(&mut h);
    for v in values {
        v.hash(&mut h);
    }
    h.finish()
}

/// Whether `key` names family `name`'s series with label values `values`.
fn is_series(key: &Key, name: &str, values: &[&str]) -> bool {
    key.0 == name && key.1.iter().map(String::as_str).eq(values.iter().copied())
}

/// One counter series, resolved once by [`Metrics::counter`]; incrementing it
/// is one atomic add. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the metrics flags ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `--disabled-metrics`: families not served.
    pub disabled: BTreeSet<String>,
    /// `--allow-metric-labels` / `--allow-metric-labels-manifest`: metric →
    /// label → the values recorded as they are.
    pub allow: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// `--etcd-count-metric-poll-period`: how often `apiserver_storage_objects`
    /// is refreshed (`None`: never, the metric is off).
    pub count_poll: Option<std::time::Duration>,
    /// `--show-hidden-metrics-for-version`: the metrics deprecated long
    /// enough to be hidden are served again.
    pub show_hidden: bool,
    /// `--etcd-db-metric-poll-interval`: how often every storage member's
    /// database size is asked for (`None`: never).
    pub db_poll: Option<std::time::Duration>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            disabled: BTreeSet::new(),
            allow: BTreeMap::new(),
            count_poll: Some(std::time::Duration::ZERO),
            show_hidden: false,
            db_poll: Some(std::time::Duration::from_secs(30)),
        }
    }
}

impl Policy {
    /// Add an allow-list mapping (`metric,label` → `v1,v2,...`), as
    /// upstream's `SetLabelAllowList` reads it.
    pub fn allow_labels(&mut self, mapping: &BTreeMap<String, String>) {
        for (key, values) in mapping {
            let mut parts = key.split(',');
            let (Some(metric), Some(label)) = (parts.next(), parts.next()) else {
                continue;
            };
            self.allow.entry(metric.to_owned()).or_default().insert(
                label.to_owned(),
                values.split(',').map(str::to_owned).collect(),
            );
        }
    }
}

pub const DISABLED_METRICS: Family = Family {
    name: "disabled_metrics_total",
    help: "[BETA] The count of disabled metrics.",
    kind: Kind::Counter,
    labels: &[],
};
pub const UNEXPECTED_LABELS: Family = Family {
    name: "cardinality_enforcement_unexpected_categorizations_total",
    help: "[ALPHA] The count of unexpected categorizations during cardinality enforcement.",
    kind: Kind::Counter,
    labels: &[],
};

/// A set of metric families and their series. Cheap to clone.
#[derive(Clone, Default)]
pub struct Metrics {
    inner: Arc<Mutex<SeriesMap>>,
    families: Arc<Mutex<BTreeMap<&'static str, &'static Family>>>,
    policy: Arc<Policy>,
    /// When object counts were last sampled.
    counted: Arc<Mutex<Option<Instant>>>,
}

impl Metrics {
    /// A registry recording and serving as `policy` says.
    pub fn with_policy(policy: Policy) -> Metrics {
        let disabled = policy.disabled.len() as f64;
        let m = Metrics {
            policy: Arc::new(policy),
            ..Metrics::default()
        };
        m.add(&DISABLED_METRICS, &[], disabled);
        m
    }

    /// `labels`, with values outside the family's allow-lists `unexpected`;
    /// `None` when the family has no allow-lists (the values stand as given).
    fn constrained(&self, fam: &'static Family, labels: &[&str]) -> Option<Vec<String>> {
        let lists = self.policy.allow.get(fam.name)?;
        let mut unexpected = 0;
        let out = fam
            .labels
            .iter()
            .zip(labels)
            .map(|(name, value)| match lists.get(*name) {
                Some(allowed) if !allowed.contains(*value) => {
                    unexpected += 1;
                    "unexpected".to_owned()
                }
                _ => value.to_string(),
            })
            .collect();
        if unexpected > 0 {
            self.add(&UNEXPECTED_LABELS, &[], f64::from(unexpected));
        }
        Some(out)
    }

    fn with(&self, fam: &'static Family, labels: &[&str], f: impl FnOnce(&mut Series)) {
        debug_assert_eq!(labels.len(), fam.labels.len(), "{}", fam.name);
        let owned = self.constrained(fam, labels);
        let shown: Vec<&str>;
        let values: &[&str] = match &owned {
            Some(v) => {
                shown = v.iter().map(String::as_str).collect();
                &shown
            }
            None => labels,
        };
        let hash = series_hash(fam.name, values.iter().copied());
        let mut map = self.inner.lock().expect("metrics lock");
        let bucket = map.entry(hash).or_default();
        let found = bucket
            .iter()
            .position(|(key, _)| is_series(key, fam.name, values));
        let at = match found {
            Some(i) => i,
            None => {
                // A new series: its family is now served.
                self.families
                    .lock()
                    .expect("metrics lock")
                    .entry(fam.name)
                    .or_insert(fam);
                let series = match fam.kind {
                    Kind::Histogram(b) => Series::Histogram {
                        counts: vec![0; b.len()],
                        sum: 0.0,
                        count: 0,
                    },
                    _ => Series::Value(0.0),
                };
                let key = (fam.name, values.iter().map(|s| s.to_string()).collect());
                bucket.push((key, series));
                bucket.len() - 1
            }
        };
        f(&mut bucket[at].1);
    }

    /// Add to a counter or gauge.
    pub fn add(&self, fam: &'static Family, labels: &[&str], by: f64) {
        self.with(fam, labels, |s| match s {
            Series::Value(v) => *v += by,
            Series::Atomic(a) => {
                a.fetch_add(by.max(0.0) as u64, Ordering::Relaxed);
            }
            Series::Histogram { .. } => {}
        });
    }

    /// The series of counter family `fam` with `labels`, as a handle to count
    /// through without a lock (what was counted before carries over).
    pub fn counter(&self, fam: &'static Family, labels: &[&str]) -> Counter {
        debug_assert_eq!(fam.kind, Kind::Counter, "{}", fam.name);
        let mut handle = None;
        self.with(fam, labels, |s| {
            let a = match s {
                Series::Atomic(a) => a.clone(),
                Series::Value(v) => {
                    let a = Arc::new(AtomicU64::new(v.max(0.0) as u64));
                    *s = Series::Atomic(a.clone());
                    a
                }
                Series::Histogram { .. } => Arc::new(AtomicU64::new(0)),
            };
            handle = Some(Counter(a));
        });
        handle.expect("the series exists")
    }

    pub fn set(&self, fam: &'static Family, labels: &[&str], to: f64) {
        self.with(fam, labels, |s| match s {
            Series::Value(v) => *v = to,
            Series::Atomic(a) => a.store(to.max(0.0) as u64, Ordering::Relaxed),
            Series::Histogram { .. } => {}
        });
    }

    pub fn observe(&self, fam: &'static Family, labels: &[&str], value: f64) {
        let Kind::Histogram(bounds) = fam.kind else {
            return;
        };
        self.with(fam, labels, |s| {
            if let Series::Histogram { counts, sum, count } = s {
                for (c, b) in counts.iter_mut().zip(bounds) {
                    if value <= *b {
                        *c += 1;
                    }
                }
                *sum += value;
                *count += 1;
            }
        });
    }

    /// Whether object counts are due for sampling (`--etcd-count-metric-poll-period`).
    fn count_due(&self) -> bool {
        let Some(period) = self.policy.count_poll else {
            return false;
        };
        let mut last = self.counted.lock().expect("metrics lock");
        let due = last.is_none_or(|t| t.elapsed() >= period);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    /// Drop one series (a gauge whose source stopped answering).
    pub fn remove(&self, fam: &'static Family, labels: &[&str]) {
        let hash = series_hash(fam.name, labels.iter().copied());
        let mut map = self.inner.lock().expect("metrics lock");
        if let Some(bucket) = map.get_mut(&hash) {
            bucket.retain(|(key, _)| !is_series(key, fam.name, labels));
            if bucket.is_empty() {
                map.remove(&hash);
            }
        }
    }

    /// What the policy says of the members' database sizes: the poll period,
    /// when the hidden series it feeds is served at all.
    pub fn db_poll(&self) -> Option<std::time::Duration> {
        self.policy.db_poll.filter(|_| self.policy.show_hidden)
    }

    /// The current value of a counter or gauge series (tests, reviews).
    pub fn value(&self, fam: &'static Family, labels: &[&str]) -> f64 {
        let hash = series_hash(fam.name, labels.iter().copied());
        let map = self.inner.lock().expect("metrics lock");
        let found = map.get(&hash).and_then(|bucket| {
            bucket
                .iter()
                .find(|(key, _)| is_series(key, fam.name, labels))
        });
        match found.map(|(_, s)| s) {
            Some(Series::Value(v)) => *v,
            Some(Series::Atomic(a)) => a.load(Ordering::Relaxed) as f64,
            Some(Series::Histogram { count, .. }) => *count as f64,
            None => 0.0,
        }
    }

    /// Everything in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let families = self.families.lock().expect("metrics lock").clone();
        let map = self.inner.lock().expect("metrics lock");
        // In the text format's order: by family, then by label values.
        let mut sorted: Vec<&(Key, Series)> = map.values().flatten().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::new();
        for (name, fam) in &families {
            if self.policy.disabled.contains(*name) {
                continue;
            }
            let kind = match fam.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", fam.help);
            let start = sorted.partition_point(|((n, _), _)| n < name);
            let range = sorted[start..].iter();
            for ((n, values), series) in range.take_while(|((n, _), _)| n == name) {
                let labels = label_text(fam.labels, values);
                match series {
                    Series::Value(v) => {
                        let _ = writeln!(out, "{n}{} {}", braces(&labels), num(*v));
                    }
                    Series::Atomic(a) => {
                        let v = a.load(Ordering::Relaxed);
                        let _ = writeln!(out, "{n}{} {v}", braces(&labels));
                    }
                    Series::Histogram { counts, sum, count } => {
                        let Kind::Histogram(bounds) = fam.kind else {
                            continue;
                        };
                        for (b, c) in bounds.iter().zip(counts) {
                            let l = join(&labels, &format!("le=\"{}\"", num(*b)));
                            let _ = writeln!(out, "{n}_bucket{{{l}}} {c}");
                        }
                        let l = join(&labels, "le=\"+Inf\"");
                        let _ = writeln!(out, "{n}_bucket{{{l}}} {count}");
                        let _ = writeln!(out, "{n}_sum{} {}", braces(&labels), num(*sum));
                        let _ = writeln!(out, "{n}_count{} {count}", braces(&labels));
                    }
                }
            }
        }
        out
    }
}

fn label_text(names: &[&str], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn braces(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

fn join(labels: &str, extra: &str) -> String {
    if labels.is_empty() {
        extra.to_owned()
    } else {
        format!("{labels},{extra}")
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Upstream's metric verb (`NormalizedVerb`): `LIST`, `WATCH`, `APPLY`, the
/// method otherwise. The handlers' trace spans name it too.
pub fn metric_verb(method: &str, info: Option<&request::RequestInfo>, apply: bool) -> String {
    match info.map(|i| i.verb) {
        Some("list") => "LIST".into(),
        Some("watch") => "WATCH".into(),
        Some("patch") if apply => "APPLY".into(),
        _ => method.to_ascii_uppercase(),
    }
}

/// The labels of one request, computed before it runs.
struct RequestLabels(Vec<String>);

fn request_labels(req: &Request, kind: &crate::limits::Kind) -> RequestLabels {
    let query = Query::parse(req.uri().query());
    let info = &kind.info;
    let apply = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/apply-patch"));
    let verb = metric_verb(req.method().as_str(), info.as_ref(), apply);
    let dry_run = query.get("dryRun").unwrap_or("").to_owned();
    let (group, version, resource, sub, scope) = match info {
        Some(i) => {
            let scope = if i.name.is_some() {
                "resource"
            } else if i.namespace.is_some() {
                "namespace"
            } else {
                "cluster"
            };
            (
                i.group.clone(),
                i.version.clone(),
                i.resource.clone(),
                i.subresource.clone().unwrap_or_default(),
                scope.to_owned(),
            )
        }
        None => Default::default(),
    };
    RequestLabels(vec![
        verb,
        dry_run,
        group,
        version,
        resource,
        sub,
        scope,
        "apiserver".into(),
    ])
}

/// The filter: count and time every request when its response ends; count the
/// events of watch responses.
pub async fn layer<N: Next>(State(metrics): State<Metrics>, mut req: Request, next: N) -> Response {
    let started = Instant::now();
    let kind = crate::limits::Kind::of(&req);
    let labels = request_labels(&req, &kind);
    req.extensions_mut().insert(kind);
    let watch = labels.0[0] == "WATCH";
    let resp = next.run(req).await;
    let code = resp.status().as_u16().to_string();
    let on_frame = watch.then(|| {
        let l = [&labels.0[2], &labels.0[3], &labels.0[4]].map(String::as_str);
        let events = metrics.counter(&WATCH_EVENTS, &l);
        move |_: usize| events.inc()
    });
    crate::limits::on_body_end(resp, on_frame, move || {
        let mut all: Vec<&str> = labels.0.iter().map(String::as_str).collect();
        metrics.observe(&REQUEST_DURATION, &all, started.elapsed().as_secs_f64());
        all.push(&code);
        metrics.add(&REQUEST_TOTAL, &all, 1.0);
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

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
