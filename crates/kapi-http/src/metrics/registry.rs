//! The registry behind `/metrics`: the series of every family, found by hash
//! ([`Metrics`]), lock-free counter handles ([`Counter`]), what the metrics
//! flags ask for ([`Policy`]), and the text exposition.

use super::*;
use std::borrow::Cow;

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
/// label values ([`series_hash`]; several series only when two hash alike), so
/// recording a value allocates nothing once its series exists. The key is a
/// hash already, hashed again by the map at little cost.
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

/// The label values a series is recorded under: `labels`, or the
/// allow-listed values [`Metrics::constrained`] put in their place.
fn shown<'a>(owned: &'a Option<Vec<String>>, labels: &'a [&'a str]) -> Cow<'a, [&'a str]> {
    match owned {
        Some(v) => Cow::Owned(v.iter().map(String::as_str).collect()),
        None => Cow::Borrowed(labels),
    }
}

fn add_into(s: &mut Series, by: f64) {
    match s {
        Series::Value(v) => *v += by,
        Series::Atomic(a) => {
            a.fetch_add(by.max(0.0) as u64, Ordering::Relaxed);
        }
        Series::Histogram { .. } => {}
    }
}

fn observe_into(s: &mut Series, bounds: &[f64], value: f64) {
    if let Series::Histogram { counts, sum, count } = s {
        for (c, b) in counts.iter_mut().zip(bounds) {
            if value <= *b {
                *c += 1;
            }
        }
        *sum += value;
        *count += 1;
    }
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
        let owned = self.constrained(fam, labels);
        let values = shown(&owned, labels);
        let mut map = self.inner.lock().expect("metrics lock");
        self.in_series(&mut map, fam, &values, f);
    }

    /// Run `f` on family `fam`'s series with label `values` (created when
    /// new) in the locked map.
    fn in_series(
        &self,
        map: &mut SeriesMap,
        fam: &'static Family,
        values: &[&str],
        f: impl FnOnce(&mut Series),
    ) {
        debug_assert_eq!(values.len(), fam.labels.len(), "{}", fam.name);
        let hash = series_hash(fam.name, values.iter().copied());
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
        self.with(fam, labels, |s| add_into(s, by));
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
        if let Kind::Histogram(bounds) = fam.kind {
            self.with(fam, labels, |s| observe_into(s, bounds, value));
        }
    }

    /// Observe `value` in histogram `hist` and add one to counter `total`
    /// (whose labels are `labels` then `more`), under one lock: what every
    /// request records when it ends.
    pub fn observe_and_count(
        &self,
        hist: &'static Family,
        labels: &[&str],
        value: f64,
        total: &'static Family,
        more: &[&str],
    ) {
        let Kind::Histogram(bounds) = hist.kind else {
            return;
        };
        let all: Vec<&str> = labels.iter().chain(more).copied().collect();
        let (h_owned, t_owned) = (
            self.constrained(hist, labels),
            self.constrained(total, &all),
        );
        let (h, t) = (shown(&h_owned, labels), shown(&t_owned, &all));
        let mut map = self.inner.lock().expect("metrics lock");
        self.in_series(&mut map, hist, &h, |s| observe_into(s, bounds, value));
        self.in_series(&mut map, total, &t, |s| add_into(s, 1.0));
    }

    /// Whether object counts are due for sampling (`--etcd-count-metric-poll-period`).
    pub(super) fn count_due(&self) -> bool {
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
