//! API Priority and Fairness: the filter that classifies every request by the
//! FlowSchemas, and admits it to its priority level's seats (at once, after
//! fair queuing, or not: 429), as upstream's `WithPriorityAndFairness` and
//! `util/flowcontrol`.
//!
//! Pieces: `config.rs` (the objects as data, classification), `queueset.rs`
//! (one level's seats and queues), `controller.rs` (keeps the configuration
//! in step with the FlowSchema and PriorityLevelConfiguration objects and
//! their `Dangling` conditions).
//!
//! Semantics kept from upstream: the server's concurrency limit is
//! `--max-requests-inflight + --max-mutating-requests-inflight`, shared among
//! the levels by `nominalConcurrencyShares`; exempt levels never wait;
//! long-running requests other than watches skip APF; a watch holds its seat
//! only until its handler has set it up (upstream: until initialized); a request
//! waits in a queue at most a quarter of its deadline; every answer carries
//! `X-Kubernetes-PF-FlowSchema-UID` / `X-Kubernetes-PF-PriorityLevel-UID`.
//! Requests take the seats their work estimate asks for (`work.rs`: big LISTs
//! and writes with many watchers take more). Not kept: seat borrowing between
//! levels (`lendablePercent` / `borrowingLimitPercent`: each level's current
//! limit is its nominal limit).

pub mod config;
mod controller;
pub mod queueset;
pub mod work;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tokio::time::Instant;

use crate::authn::UserInfo;
use crate::limits::{self, Deadline, Executing, Kind};
use crate::metrics::{Family, Kind as MetricKind, Metrics, WAIT_BUCKETS};
use config::{Digest, LevelSpec, Schema};
use queueset::Level;

pub use controller::spawn as spawn_controller;

const FS_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
const PL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

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

struct Config {
    schemas: Vec<Schema>,
    levels: HashMap<String, (LevelSpec, Arc<Level>)>,
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
                    levels: HashMap::new(),
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

    /// Replace the configuration; levels that stay keep their queues.
    pub fn reconfigure(&self, mut levels: Vec<LevelSpec>, schemas: Vec<Schema>) {
        if !levels.iter().any(|l| l.name == "catch-all") {
            levels.push(LevelSpec::fallback_catch_all());
        }
        let limits = config::nominal_limits(&levels, self.inner.server_limit);
        let mut cfg = self.inner.config.write().expect("apf lock");
        let mut out = HashMap::new();
        for (spec, limit) in levels.iter().zip(limits) {
            let level = match cfg.levels.get(&spec.name) {
                Some((_, level)) => {
                    level.reconfigure(spec.kind.clone(), limit);
                    level.clone()
                }
                None => Level::new(spec.kind.clone(), limit),
            };
            let nominal = limit as f64;
            for family in [&NOMINAL, &CONCURRENCY_LIMIT, &CURRENT_LIMIT] {
                self.inner.metrics.set(family, &[&spec.name], nominal);
            }
            out.insert(spec.name.clone(), (spec.clone(), level));
        }
        *cfg = Arc::new(Config {
            schemas: config::ordered(schemas, &levels),
            levels: out,
        });
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
            .map(|(_, l)| (l.executing(), l.waiting()))
    }

    /// The schema and level a request goes to, with its flow hash.
    fn classify(&self, d: &Digest) -> (Schema, LevelSpec, Arc<Level>, u64) {
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
                        Schema::from_object(&serde_json::json!({"metadata": {"name": "catch-all"}}))
                    });
                (s, catch_all)
            }
        };
        let mut h = std::hash::DefaultHasher::new();
        schema.name.hash(&mut h);
        schema.flow_distinguisher(d).hash(&mut h);
        let hash = h.finish();
        (schema, level.0, level.1, hash)
    }
}

fn set_headers(resp: &mut Response, schema: &Schema, level: &LevelSpec) {
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&schema.uid) {
        h.insert(FS_HEADER, v);
    }
    if let Ok(v) = HeaderValue::from_str(&level.uid) {
        h.insert(PL_HEADER, v);
    }
}

/// The APF filter.
pub async fn layer(State(fc): State<FlowControl>, req: Request, next: Next) -> Response {
    let kind = Kind::of(&req);
    let watch = kind.verb == "watch";
    if kind.long_running && !watch {
        return next.run(req).await;
    }
    let anonymous = UserInfo::anonymous();
    let user = req.extensions().get::<UserInfo>().unwrap_or(&anonymous);
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
    let (schema, spec, level, hash) = fc.classify(&digest);
    let query = crate::request::Query::parse(req.uri().query());
    let counter = fc.inner.counter.read().expect("apf lock").clone();
    let estimate = if watch {
        work::Estimate::ONE
    } else {
        let max = work::max_seats(level.limit());
        work::estimate(
            kind.info.as_ref(),
            &kind.verb,
            &query,
            counter.as_ref(),
            max,
        )
    };
    let metrics = fc.inner.metrics.clone();
    let labels = [spec.name.clone(), schema.name.clone()];
    let l2 = [labels[0].as_str(), labels[1].as_str()];

    let now = Instant::now();
    let wait_until = match req.extensions().get::<Deadline>() {
        Some(d) => d.received + (d.at - d.received) / 4,
        None => now + fc.inner.request_timeout / 4,
    };
    metrics.add(&INQUEUE, &l2, 1.0);
    let admission = level.admit(hash, estimate.seats, wait_until).await;
    metrics.add(&INQUEUE, &l2, -1.0);
    let waited = admission.waited.as_secs_f64();
    let seat = match admission.result {
        Ok(seat) => seat,
        Err(why) => {
            metrics.add(&REJECTED, &[&labels[0], &labels[1], why.as_str()], 1.0);
            metrics.observe(&WAIT, &[&labels[0], &labels[1], "false"], waited);
            Executing::dropped(&metrics, kind.mutating);
            let mut resp = limits::too_many_requests();
            set_headers(&mut resp, &schema, &spec);
            return resp;
        }
    };
    metrics.observe(&WAIT, &[&labels[0], &labels[1], "true"], waited);
    metrics.add(&DISPATCHED, &l2, 1.0);
    metrics.add(&EXECUTING, &l2, 1.0);
    let seats = seat.seats() as f64;
    metrics.add(&EXECUTING_SEATS, &l2, seats);
    let executing = Executing::start(&metrics, kind.mutating);
    let mut resp = next.run(req).await;
    set_headers(&mut resp, &schema, &spec);
    let release = move || {
        metrics.add(&EXECUTING, &[&labels[0], &labels[1]], -1.0);
        drop(executing);
        let free = move || {
            metrics.add(&EXECUTING_SEATS, &[&labels[0], &labels[1]], -seats);
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
        limits::on_body_end(resp, None::<fn()>, release)
    }
}
