//! kapi-flowcontrol — API Priority and Fairness: the filter that classifies every request by the
//! FlowSchemas, and admits it to its priority level's seats (at once, after
//! fair queuing, or not: 429), as upstream's `WithPriorityAndFairness` and
//! `util/flowcontrol`.
//!
//! Pieces: `config.rs` (the objects as data, classification), `queueset.rs`
//! (one level's seats and queues), `borrow.rs` (seat borrowing between
//! levels), `controller.rs` (keeps the configuration in step with the
//! FlowSchema and PriorityLevelConfiguration objects and their `Dangling`
//! conditions), `ensure.rs` (upstream's bootstrap ensurer).
//!
//! Semantics kept from upstream: the server's concurrency limit is
//! `--max-requests-inflight + --max-mutating-requests-inflight`, shared among
//! the levels by `nominalConcurrencyShares` into nominal limits; every
//! [`borrow::PERIOD`] ([`FlowControl::update_borrowing`]) the levels' current
//! limits are re-divided by their seat demand, each between its lower limit
//! (`lendablePercent`) and upper limit (`borrowingLimitPercent`), so a busy
//! level borrows the seats idle levels lend; exempt levels never wait;
//! long-running requests other than watches skip APF; a watch holds its seat
//! only until its handler has set it up (upstream: until initialized); a request
//! waits in a queue at most a quarter of its deadline; every answer carries
//! `X-Kubernetes-PF-FlowSchema-UID` / `X-Kubernetes-PF-PriorityLevel-UID`.
//! Requests take the seats their work estimate asks for (`work.rs`: big LISTs
//! and writes with many watchers take more), at most a level's max seats
//! (from its nominal limit). Not kept: a deleted level's waiting requests
//! are served at its last current limit outside the allocation (upstream
//! keeps a quiescing level in the allocation until it drains).

pub mod borrow;
pub mod config;
mod controller;
mod ensure;
pub mod queueset;

pub mod work;

use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use kapi_http::next::Next;
use tokio::time::Instant;

use config::{Digest, LevelSpec, Schema};
use kapi_http::limits::{self, Deadline, Executing, Kind};
use kapi_http::metrics::{
    Counter, Family, Gauge, Kind as MetricKind, Metrics, Observer, WAIT_BUCKETS,
};
use kapi_http::user::UserInfo;
use queueset::Level;

pub use controller::spawn as spawn_controller;

#[cfg(test)]
mod borrow_tests;

const FS_HEADER: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
const PL_HEADER: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

const PF_LABELS: &[&str] = &["priority_level", "flow_schema"];
const EXECUTING: Family = Family {
    name: "apiserver_flowcontrol_current_executing_requests",
    help: "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
    kind: MetricKind::Gauge,
    labels: PF_LABELS,
};
const INQUEUE: Family = Family {
    name: "apiserver_flowcontrol_current_inqueue_requests",
    help:
        "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
    kind: MetricKind::Gauge,
    labels: PF_LABELS,
};
const DISPATCHED: Family = Family {
    name: "apiserver_flowcontrol_dispatched_requests_total",
    help: "Number of requests executed by API Priority and Fairness subsystem",
    kind: MetricKind::Counter,
    labels: PF_LABELS,
};
const REJECTED: Family = Family {
    name: "apiserver_flowcontrol_rejected_requests_total",
    help: "Number of requests rejected by API Priority and Fairness subsystem",
    kind: MetricKind::Counter,
    labels: &["priority_level", "flow_schema", "reason"],
};
const WAIT: Family = Family {
    name: "apiserver_flowcontrol_request_wait_duration_seconds",
    help: "Length of time a request spent waiting in its queue",
    kind: MetricKind::Histogram(WAIT_BUCKETS),
    labels: &["priority_level", "flow_schema", "execute"],
};
const NOMINAL: Family = Family {
    name: "apiserver_flowcontrol_nominal_limit_seats",
    help: "Nominal number of execution seats configured for each priority level",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};

const LOWER_LIMIT: Family = Family {
    name: "apiserver_flowcontrol_lower_limit_seats",
    help: "Configured lower bound on number of execution seats available to each priority level",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const UPPER_LIMIT: Family = Family {
    name: "apiserver_flowcontrol_upper_limit_seats",
    help: "Configured upper bound on number of execution seats available to each priority level",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const DEMAND_HIGH: Family = Family {
    name: "apiserver_flowcontrol_demand_seats_high_watermark",
    help: "High watermark, over last adjustment period, of demand_seats",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const DEMAND_AVERAGE: Family = Family {
    name: "apiserver_flowcontrol_demand_seats_average",
    help: "Time-weighted average, over last adjustment period, of demand_seats",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const DEMAND_STDEV: Family = Family {
    name: "apiserver_flowcontrol_demand_seats_stdev",
    help: "Time-weighted standard deviation, over last adjustment period, of demand_seats",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const DEMAND_SMOOTHED: Family = Family {
    name: "apiserver_flowcontrol_demand_seats_smoothed",
    help: "Smoothed seat demands",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const TARGET: Family = Family {
    name: "apiserver_flowcontrol_target_seats",
    help: "Seat allocation targets",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const FAIR_FRAC: Family = Family {
    name: "apiserver_flowcontrol_seat_fair_frac",
    help:
        "Fair fraction of server's concurrency to allocate to each priority level that can use it",
    kind: MetricKind::Gauge,
    labels: &[],
};

const CONCURRENCY_LIMIT: Family = Family {
    name: "apiserver_flowcontrol_request_concurrency_limit",
    help: "Nominal number of execution seats configured for each priority level",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const CURRENT_LIMIT: Family = Family {
    name: "apiserver_flowcontrol_current_limit_seats",
    help: "current derived number of execution seats available to each priority level",
    kind: MetricKind::Gauge,
    labels: &["priority_level"],
};
const EXECUTING_SEATS: Family = Family {
    name: "apiserver_flowcontrol_current_executing_seats",
    help: "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
    kind: MetricKind::Gauge,
    labels: PF_LABELS,
};

/// One priority level of the configuration.
struct Entry {
    spec: LevelSpec,
    level: Arc<Level>,
    bounds: borrow::Bounds,
    /// The most seats one request may take (work estimation).
    max_seats: usize,
}

struct Config {
    schemas: Vec<Arc<Schema>>,
    levels: foldhash::HashMap<String, Arc<Entry>>,
    /// Sum of the nominal limits: what borrowing divides.
    nominal_sum: usize,
}

struct Shared {
    server_limit: usize,
    counter: RwLock<Option<work::Counter>>,
    request_timeout: Duration,
    config: RwLock<Arc<Config>>,
    metrics: Metrics,
}

/// The APF state of one server. Cheap to clone.
#[derive(Clone)]
pub struct FlowControl {
    inner: Arc<Shared>,
}

impl FlowControl {
    /// Start with upstream's bootstrap configuration; `spawn_controller` then
    /// follows the stored objects.
    pub fn new(server_limit: usize, request_timeout: Duration, metrics: Metrics) -> FlowControl {
        use kapi_resources::flowcontrol::bootstrap;
        let fc = FlowControl {
            inner: Arc::new(Shared {
                server_limit,
                counter: RwLock::new(None),
                request_timeout,
                config: RwLock::new(Arc::new(Config {
                    schemas: Vec::new(),
                    levels: Default::default(),
                    nominal_sum: 0,
                })),
                metrics,
            }),
        };
        let levels = bootstrap::priority_levels();
        let schemas = bootstrap::flow_schemas();
        fc.reconfigure(
            levels.iter().map(LevelSpec::from_object).collect(),
            schemas.iter().map(Schema::from_object).collect(),
        );
        fc
    }

    /// Replace the configuration; levels that stay keep their queues, their
    /// current limits and their demand history. Then the current limits are
    /// re-divided at once, as upstream does after every configuration change.
    pub fn reconfigure(&self, mut levels: Vec<LevelSpec>, schemas: Vec<Schema>) {
        if !levels.iter().any(|l| l.name == "catch-all") {
            levels.push(LevelSpec::fallback_catch_all());
        }
        let server_limit = self.inner.server_limit;
        let limits = config::nominal_limits(&levels, server_limit);
        {
            let mut cfg = self.inner.config.write().expect("apf lock");
            let mut out = foldhash::HashMap::default();
            for (spec, nominal) in levels.iter().zip(limits) {
                let bounds =
                    borrow::Bounds::new(nominal, spec.lendable, spec.borrowing, server_limit);
                let level = match cfg.levels.get(&spec.name) {
                    Some(e) => {
                        let current = e.level.limit();
                        e.level.reconfigure(spec.kind.clone(), current);
                        e.level.clone()
                    }
                    None => {
                        let level = Level::new(spec.kind.clone(), bounds.initial);
                        level.reset_demand();
                        level
                    }
                };
                let m = &self.inner.metrics;
                let label = [spec.name.as_str()];
                m.set(&NOMINAL, &label, nominal as f64);
                m.set(&CONCURRENCY_LIMIT, &label, nominal as f64);
                m.set(&LOWER_LIMIT, &label, bounds.lower as f64);
                m.set(&UPPER_LIMIT, &label, bounds.upper as f64);
                let entry = Entry {
                    max_seats: max_seats(spec, nominal),
                    spec: spec.clone(),
                    level,
                    bounds,
                };
                out.insert(spec.name.clone(), Arc::new(entry));
            }
            let nominal_sum = out.values().map(|e| e.bounds.nominal).sum();
            *cfg = Arc::new(Config {
                schemas: config::ordered(schemas, &levels)
                    .into_iter()
                    .map(Arc::new)
                    .collect(),
                levels: out,
                nominal_sum,
            });
        }
        self.update_borrowing();
    }

    /// Re-divide the current limits by the levels' seat demand since the last
    /// time (upstream's `updateBorrowing`, every [`borrow::PERIOD`]).
    pub fn update_borrowing(&self) {
        let cfg = self.inner.config.read().expect("apf lock").clone();
        let mut names: Vec<&String> = cfg.levels.keys().collect();
        names.sort();
        let mut items = Vec::with_capacity(names.len());
        let mut stats = Vec::with_capacity(names.len());
        for name in &names {
            let e = &cfg.levels[*name];
            let s = e.level.take_demand();
            let b = e.bounds;
            // At least what it used (up to its nominal limit), never below
            // its configured lower limit.
            let lower = (b.lower as f64).max((b.nominal as f64).min(s.high_watermark));
            items.push(borrow::Item {
                lower,
                upper: b.upper as f64,
                target: lower.max(s.smoothed),
            });
            stats.push(s);
        }
        let (shares, fair) = match borrow::allocate(cfg.nominal_sum as f64, &items) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "unable to derive new APF concurrency limits");
                let current = names.iter().map(|n| cfg.levels[*n].level.limit() as f64);
                (current.collect(), 0.0)
            }
        };
        let m = &self.inner.metrics;
        for (i, name) in names.iter().enumerate() {
            let current = shares[i].round() as usize;
            cfg.levels[*name].level.set_limit(current);
            let label = [name.as_str()];
            let s = &stats[i];
            m.set(&DEMAND_HIGH, &label, s.high_watermark);
            m.set(&DEMAND_AVERAGE, &label, s.average);
            m.set(&DEMAND_STDEV, &label, s.deviation);
            m.set(&DEMAND_SMOOTHED, &label, s.smoothed);
            m.set(&TARGET, &label, items[i].target);
            m.set(&CURRENT_LIMIT, &label, current as f64);
        }
        m.set(&FAIR_FRAC, &[], fair);
    }

    /// Re-divide the current limits every `period` while the server lives.
    pub fn spawn_borrowing(&self, period: std::time::Duration) {
        let weak: Weak<Shared> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                FlowControl { inner }.update_borrowing();
            }
        });
    }

    /// A level's (nominal, lower, upper, current) limits, for tests.
    pub fn level_limits(&self, name: &str) -> Option<(usize, usize, usize, usize)> {
        let cfg = self.inner.config.read().expect("apf lock").clone();
        let e = cfg.levels.get(name)?;
        let b = e.bounds;
        Some((b.nominal, b.lower, b.upper, e.level.limit()))
    }

    /// The admission state of a level, for tests.
    pub fn level(&self, name: &str) -> Option<Arc<Level>> {
        let cfg = self.inner.config.read().expect("apf lock").clone();
        cfg.levels.get(name).map(|e| e.level.clone())
    }

    /// Count stored objects and watchers of a resource with `counter` (work
    /// estimation; without it every request takes one seat).
    pub fn set_counter(&self, counter: work::Counter) {
        *self.inner.counter.write().expect("apf lock") = Some(counter);
    }

    /// (executing, waiting) of a priority level, for tests and reviews.
    pub fn level_load(&self, name: &str) -> Option<(usize, usize)> {
        let cfg = self.inner.config.read().expect("apf lock").clone();
        cfg.levels
            .get(name)
            .map(|e| (e.level.executing(), e.level.waiting()))
    }

    /// The schema and level a request goes to, with its flow hash.
    fn classify(&self, d: &Digest) -> (Arc<Schema>, Arc<Entry>, u64) {
        let cfg = self.inner.config.read().expect("apf lock").clone();
        let schema = cfg.schemas.iter().find(|s| s.matches(d)).cloned();
        let (schema, level) = match schema.and_then(|s| cfg.levels.get(&s.level).map(|l| (s, l))) {
            Some((s, l)) => (s, l.clone()),
            None => {
                let catch_all = cfg
                    .levels
                    .get("catch-all")
                    .expect("catch-all level")
                    .clone();
                let s = cfg
                    .schemas
                    .iter()
                    .find(|s| s.name == "catch-all")
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(Schema::from_object(
                            &serde_json::json!({"metadata": {"name": "catch-all"}}),
                        ))
                    });
                (s, catch_all)
            }
        };
        let mut h = std::hash::DefaultHasher::new();
        schema.name.hash(&mut h);
        schema.flow_distinguisher(d).hash(&mut h);
        let hash = h.finish();
        (schema, level, hash)
    }
}

/// Upstream's max seats of a level: 15 % of its nominal limit, at most the
/// nominal limit over the hand size, at least 1 (and at most 10: `work.rs`).
fn max_seats(spec: &LevelSpec, nominal: usize) -> usize {
    let mut seats = work::max_seats(nominal);
    if let config::LevelKind::Queue { hand_size, .. } = spec.kind {
        seats = seats.min(nominal / hand_size.max(1)).max(1);
    }
    seats
}

fn set_headers(resp: &mut Response, flow: &FlowSeries) {
    let h = resp.headers_mut();
    if let Some(v) = &flow.schema_uid {
        h.insert(FS_HEADER, v.clone());
    }
    if let Some(v) = &flow.level_uid {
        h.insert(PL_HEADER, v.clone());
    }
}

/// What the filter records for the requests of one flow schema at one
/// priority level: its series of the metric families labelled by both, and
/// the response headers naming them. Resolved once per schema (a schema's
/// level does not change: a new configuration makes new schemas), so a
/// request records with atomic additions and no lookup.
pub(crate) struct FlowSeries {
    level: String,
    inqueue: Gauge,
    dispatched: Counter,
    executing: Gauge,
    seats: Gauge,
    waited: Observer,
    schema_uid: Option<HeaderValue>,
    level_uid: Option<HeaderValue>,
}

impl std::fmt::Debug for FlowSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowSeries")
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl FlowSeries {
    fn new(metrics: &Metrics, schema: &Schema, spec: &LevelSpec) -> FlowSeries {
        let l2 = [spec.name.as_str(), schema.name.as_str()];
        FlowSeries {
            level: spec.name.clone(),
            inqueue: metrics.gauge(&INQUEUE, &l2),
            dispatched: metrics.counter(&DISPATCHED, &l2),
            executing: metrics.gauge(&EXECUTING, &l2),
            seats: metrics.gauge(&EXECUTING_SEATS, &l2),
            waited: metrics.histogram(&WAIT, &[l2[0], l2[1], "true"]),
            schema_uid: HeaderValue::from_str(&schema.uid).ok(),
            level_uid: HeaderValue::from_str(&spec.uid).ok(),
        }
    }

    /// `schema`'s series at `spec`'s level: the schema's own once resolved.
    /// (A request whose schema names a missing level runs at `catch-all`
    /// under the `catch-all` schema, so a schema is seen at one level; the
    /// check keeps any other pairing correct, unremembered.)
    fn of(metrics: &Metrics, schema: &Schema, spec: &LevelSpec) -> Arc<FlowSeries> {
        let flow = schema
            .recorded
            .get_or_init(|| Arc::new(FlowSeries::new(metrics, schema, spec)));
        if flow.level == spec.name {
            flow.clone()
        } else {
            Arc::new(FlowSeries::new(metrics, schema, spec))
        }
    }
}

/// The APF filter.
pub async fn layer<N: Next>(State(fc): State<FlowControl>, req: Request, next: N) -> Response {
    let kind = Kind::of(&req);
    let watch = kind.verb == "watch";
    if kind.long_running && !watch {
        return next.run(req).await;
    }
    let user = req
        .extensions()
        .get::<UserInfo>()
        .unwrap_or(UserInfo::anonymous_ref());
    let resource = kind.info.as_ref().map(|i| {
        (
            i.group.as_str(),
            i.resource.as_str(),
            i.namespace.as_deref(),
        )
    });
    let digest = Digest {
        user,
        verb: &kind.verb,
        resource,
        path: req.uri().path(),
    };
    let (schema, entry, hash) = fc.classify(&digest);
    let (spec, level) = (&entry.spec, &entry.level);
    let query = kapi_http::request::Query::parse(req.uri().query());
    let counter = fc.inner.counter.read().expect("apf lock").clone();
    let estimate = if watch {
        work::Estimate::ONE
    } else {
        let max = entry.max_seats;
        work::estimate(
            kind.info.as_ref(),
            &kind.verb,
            &query,
            counter.as_ref(),
            max,
        )
    };
    let metrics = &fc.inner.metrics;
    let flow = FlowSeries::of(metrics, &schema, spec);

    let now = Instant::now();
    let wait_until = match req.extensions().get::<Deadline>() {
        Some(d) => d.received + (d.at - d.received) / 4,
        None => now + fc.inner.request_timeout / 4,
    };
    flow.inqueue.add(1.0);
    let admission = level.admit(hash, estimate.seats, wait_until).await;
    flow.inqueue.add(-1.0);
    let waited = admission.waited.as_secs_f64();
    let seat = match admission.result {
        Ok(seat) => seat,
        Err(why) => {
            let (level, schema) = (spec.name.as_str(), schema.name.as_str());
            metrics.add(&REJECTED, &[level, schema, why.as_str()], 1.0);
            metrics.observe(&WAIT, &[level, schema, "false"], waited);
            Executing::dropped(metrics, kind.mutating);
            let mut resp = limits::too_many_requests();
            set_headers(&mut resp, &flow);
            return resp;
        }
    };
    flow.waited.observe(waited);
    flow.dispatched.inc();
    flow.executing.add(1.0);
    let seats = seat.seats() as f64;
    flow.seats.add(seats);
    let executing = Executing::start(metrics, kind.mutating);
    let mut resp = next.run(req).await;
    set_headers(&mut resp, &flow);
    let release = move || {
        flow.executing.add(-1.0);
        drop(executing);
        let free = move || {
            flow.seats.add(-seats);
            drop(seat);
        };
        if estimate.hold.is_zero() {
            free();
        } else {
            // The watch notifications of a write: its seats stay taken a while.
            tokio::spawn(async move {
                tokio::time::sleep(estimate.hold).await;
                free();
            });
        }
    };
    if watch {
        // The watch is set up: from APF's point of view it is done.
        release();
        resp
    } else {
        limits::on_body_end(resp, limits::NO_FRAMES, release)
    }
}
