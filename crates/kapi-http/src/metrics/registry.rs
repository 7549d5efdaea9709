//! The registry behind `/metrics`: the series of every family, found by hash
//! ([`Metrics`]), lock-free handles to one series ([`Counter`], [`Gauge`],
//! [`Observer`]), what the metrics flags ask for ([`Policy`]), and the text
//! exposition (`registry/exposition.rs`).
//!
//! Recording takes the map's read lock only (a write lock when a series is
//! new) and changes the series with atomic operations, so requests on
//! different threads recording into the same series do not wait for each
//! other.

use super::*;
use std::borrow::Cow;
use std::sync::RwLock;

mod exposition;

enum Series {
    /// A counter or gauge recorded by additions and sets: an `f64`'s bits
    /// (shared with the [`Gauge`] handles given out for it).
    Value(Arc<AtomicU64>),
    /// A counter series handed out as a [`Counter`]: whole increments.
    Atomic(Arc<AtomicU64>),
    Histogram(Arc<Histogram>),
}

/// A histogram's observations, counted per bucket (not cumulatively: an
/// observation adds to exactly one bucket, the last one for values above every
/// bound), so the exposition, which sums them, is consistent however it
/// interleaves with recording: the cumulative counts never decrease and the
/// `+Inf` bucket is the count.
struct Histogram {
    buckets: Box<[AtomicU64]>,
    /// The sum of the observations: an `f64`'s bits.
    sum: AtomicU64,
}

impl Histogram {
    fn new(bounds: &[f64]) -> Histogram {
        Histogram {
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    fn observe(&self, bounds: &[f64], value: f64) {
        let at = bounds.partition_point(|b| *b < value);
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        add_f64(&self.sum, value);
    }

    /// The cumulative count at each bound, then the total count.
    fn cumulative(&self) -> (Vec<u64>, u64) {
        let mut total = 0;
        let mut out = Vec::with_capacity(self.buckets.len());
        for b in &self.buckets[..] {
            total += b.load(Ordering::Relaxed);
            out.push(total);
        }
        out.pop();
        (out, total)
    }

    fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

/// Add `by` to the `f64` whose bits `cell` holds.
fn add_f64(cell: &AtomicU64, by: f64) {
    let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
        Some((f64::from_bits(bits) + by).to_bits())
    });
}

fn load_f64(cell: &AtomicU64) -> f64 {
    f64::from_bits(cell.load(Ordering::Relaxed))
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
    same(key.0, name)
        && key.1.len() == values.len()
        && key.1.iter().zip(values).all(|(k, v)| same(k, v))
}

/// String equality for the short strings of label values, compared in line
/// (a library `memcmp` call per label was most of a request's recording).
#[inline]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if std::ptr::eq(a, b) {
        return true;
    }
    let mut i = 0;
    while i + 8 <= a.len() {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return false;
        }
        i += 8;
    }
    a[i..].iter().zip(&b[i..]).all(|(x, y)| x == y)
}

/// Family `name`'s series with label `values` (hashed to `hash`), if any.
fn find<'m>(map: &'m SeriesMap, hash: u64, name: &str, values: &[&str]) -> Option<&'m Series> {
    map.get(&hash)?
        .iter()
        .find(|(key, _)| is_series(key, name, values))
        .map(|(_, s)| s)
}

/// The label values a series is recorded under: `labels`, or the
/// allow-listed values [`Metrics::constrained`] put in their place.
fn shown<'a>(owned: &'a Option<Vec<String>>, labels: &'a [&'a str]) -> Cow<'a, [&'a str]> {
    match owned {
        Some(v) => Cow::Owned(v.iter().map(String::as_str).collect()),
        None => Cow::Borrowed(labels),
    }
}

fn add_into(s: &Series, by: f64) {
    match s {
        Series::Value(v) => add_f64(v, by),
        Series::Atomic(a) => {
            a.fetch_add(by.max(0.0) as u64, Ordering::Relaxed);
        }
        Series::Histogram(_) => {}
    }
}

fn observe_into(s: &Series, bounds: &[f64], value: f64) {
    if let Series::Histogram(h) = s {
        h.observe(bounds, value);
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

/// One gauge series, resolved once by [`Metrics::gauge`]: an addition is an
/// atomic update, with no lookup. Cheap to clone.
#[derive(Clone)]
pub struct Gauge(Arc<AtomicU64>);

impl Gauge {
    pub fn add(&self, by: f64) {
        add_f64(&self.0, by);
    }
}

/// One histogram series, resolved once by [`Metrics::histogram`]. Cheap to
/// clone.
#[derive(Clone)]
pub struct Observer {
    series: Arc<Histogram>,
    bounds: &'static [f64],
}

impl Observer {
    pub fn observe(&self, value: f64) {
        self.series.observe(self.bounds, value);
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
    inner: Arc<RwLock<SeriesMap>>,
    families: Arc<Mutex<BTreeMap<&'static str, &'static Family>>>,
    policy: Arc<Policy>,
    /// When object counts were last sampled.
    counted: Arc<Mutex<Option<Instant>>>,
    /// `apiserver_current_inflight_requests`' two series, which every
    /// request changes twice: read-only, then mutating.
    inflight: Arc<std::sync::OnceLock<[Gauge; 2]>>,
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

    fn with(&self, fam: &'static Family, labels: &[&str], f: impl FnOnce(&Series)) {
        self.resolved(fam, labels, |s| {
            f(s);
            Some(())
        });
    }

    /// Family `fam`'s series with label `values` (hashed to `hash`) in the
    /// write-locked map, created when new.
    fn series_mut<'m>(
        &self,
        map: &'m mut SeriesMap,
        hash: u64,
        fam: &'static Family,
        values: &[&str],
    ) -> &'m mut Series {
        debug_assert_eq!(values.len(), fam.labels.len(), "{}", fam.name);
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
                    Kind::Histogram(b) => Series::Histogram(Arc::new(Histogram::new(b))),
                    _ => Series::Value(Arc::new(AtomicU64::new(0f64.to_bits()))),
                };
                let key = (fam.name, values.iter().map(|s| s.to_string()).collect());
                bucket.push((key, series));
                bucket.len() - 1
            }
        };
        &mut bucket[at].1
    }

    /// Add to a counter or gauge.
    pub fn add(&self, fam: &'static Family, labels: &[&str], by: f64) {
        self.with(fam, labels, |s| add_into(s, by));
    }

    /// The series of counter family `fam` with `labels`, as a handle to count
    /// through without a lock (what was counted before carries over).
    pub fn counter(&self, fam: &'static Family, labels: &[&str]) -> Counter {
        debug_assert_eq!(fam.kind, Kind::Counter, "{}", fam.name);
        let owned = self.constrained(fam, labels);
        let values = shown(&owned, labels);
        let hash = series_hash(fam.name, values.iter().copied());
        {
            let map = self.inner.read().expect("metrics lock");
            if let Some(Series::Atomic(a)) = find(&map, hash, fam.name, &values) {
                return Counter(a.clone());
            }
        }
        let mut map = self.inner.write().expect("metrics lock");
        let s = self.series_mut(&mut map, hash, fam, &values);
        let a = match s {
            Series::Atomic(a) => a.clone(),
            Series::Value(v) => {
                let a = Arc::new(AtomicU64::new(load_f64(v).max(0.0) as u64));
                *s = Series::Atomic(a.clone());
                a
            }
            Series::Histogram(_) => Arc::new(AtomicU64::new(0)),
        };
        Counter(a)
    }

    /// The series of gauge family `fam` with `labels`, as a handle to add to
    /// without a lookup (what the series held carries over).
    pub fn gauge(&self, fam: &'static Family, labels: &[&str]) -> Gauge {
        debug_assert_eq!(fam.kind, Kind::Gauge, "{}", fam.name);
        self.resolved(fam, labels, |s| match s {
            Series::Value(v) => Some(Gauge(v.clone())),
            _ => None,
        })
        .unwrap_or_else(|| Gauge(Arc::new(AtomicU64::new(0f64.to_bits()))))
    }

    /// `apiserver_current_inflight_requests`' series of mutating or of
    /// read-only requests.
    pub fn inflight(&self, mutating: bool) -> &Gauge {
        let both = self
            .inflight
            .get_or_init(|| ["readOnly", "mutating"].map(|kind| self.gauge(&INFLIGHT, &[kind])));
        &both[usize::from(mutating)]
    }

    /// The series of histogram family `fam` with `labels`, as a handle to
    /// observe into without a lookup.
    pub fn histogram(&self, fam: &'static Family, labels: &[&str]) -> Observer {
        let bounds = match fam.kind {
            Kind::Histogram(b) => b,
            _ => &[],
        };
        let series = self
            .resolved(fam, labels, |s| match s {
                Series::Histogram(h) => Some(h.clone()),
                _ => None,
            })
            .unwrap_or_else(|| Arc::new(Histogram::new(bounds)));
        Observer { series, bounds }
    }

    /// `pick` of family `fam`'s series with `labels`, created when new.
    fn resolved<T>(
        &self,
        fam: &'static Family,
        labels: &[&str],
        pick: impl FnOnce(&Series) -> Option<T>,
    ) -> Option<T> {
        let owned = self.constrained(fam, labels);
        let values = shown(&owned, labels);
        let hash = series_hash(fam.name, values.iter().copied());
        {
            let map = self.inner.read().expect("metrics lock");
            if let Some(s) = find(&map, hash, fam.name, &values) {
                return pick(s);
            }
        }
        let mut map = self.inner.write().expect("metrics lock");
        pick(self.series_mut(&mut map, hash, fam, &values))
    }

    pub fn set(&self, fam: &'static Family, labels: &[&str], to: f64) {
        self.with(fam, labels, |s| match s {
            Series::Value(v) => v.store(to.to_bits(), Ordering::Relaxed),
            Series::Atomic(a) => a.store(to.max(0.0) as u64, Ordering::Relaxed),
            Series::Histogram(_) => {}
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
        // The counter's labels, on the stack when they fit (every request's).
        let mut buf = [""; 12];
        let n = labels.len() + more.len();
        let joined: Vec<&str>;
        let all: &[&str] = if n <= buf.len() {
            buf[..labels.len()].copy_from_slice(labels);
            buf[labels.len()..n].copy_from_slice(more);
            &buf[..n]
        } else {
            joined = labels.iter().chain(more).copied().collect();
            &joined
        };
        let (h_owned, t_owned) = (self.constrained(hist, labels), self.constrained(total, all));
        let (h, t) = (shown(&h_owned, labels), shown(&t_owned, all));
        let (h_hash, t_hash) = (
            series_hash(hist.name, h.iter().copied()),
            series_hash(total.name, t.iter().copied()),
        );
        {
            let map = self.inner.read().expect("metrics lock");
            let found = (
                find(&map, h_hash, hist.name, &h),
                find(&map, t_hash, total.name, &t),
            );
            if let (Some(hs), Some(ts)) = found {
                observe_into(hs, bounds, value);
                add_into(ts, 1.0);
                return;
            }
        }
        let mut map = self.inner.write().expect("metrics lock");
        observe_into(self.series_mut(&mut map, h_hash, hist, &h), bounds, value);
        add_into(self.series_mut(&mut map, t_hash, total, &t), 1.0);
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
        let mut map = self.inner.write().expect("metrics lock");
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
        let map = self.inner.read().expect("metrics lock");
        match find(&map, hash, fam.name, labels) {
            Some(Series::Value(v)) => load_f64(v),
            Some(Series::Atomic(a)) => a.load(Ordering::Relaxed) as f64,
            Some(Series::Histogram(h)) => h.count() as f64,
            None => 0.0,
        }
    }
}
