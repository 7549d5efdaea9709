//! How audit events reach their backends, as upstream's audit options wire
//! them: each backend (the log, the webhook) has a mode — `batch` (a bounded
//! buffer drained by a task in batches of at most `max_size` events, at most
//! `max_wait` after the first, optionally throttled to `qps` batches a second
//! with `burst`), `blocking` (written before the request goes on; failures
//! counted and ignored) or `blocking-strict` (a failure to record the
//! RequestReceived stage fails the request) — and optionally truncation in
//! front: an event larger than `max_event` bytes loses its request and
//! response objects and is annotated `audit.k8s.io/truncated: "true"`, and is
//! dropped if still too large; batches are split at `max_batch` bytes.
//!
//! A full buffer drops the event and counts it
//! (`apiserver_audit_error_total{plugin="buffered"}`); a failed write counts
//! under the backend's name (`log`, `webhook`), a dropped event under
//! `truncate`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use kapi_http::metrics::{Family, Kind, Metrics};

pub use super::logfile::Rotation;
use super::output::{Format, Output};

pub const EVENTS: Family = Family {
    name: "apiserver_audit_event_total",
    help: "Counter of audit events generated and sent to the audit backend.",
    kind: Kind::Counter,
    labels: &[],
};
pub const ERRORS: Family = Family {
    name: "apiserver_audit_error_total",
    help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
    kind: Kind::Counter,
    labels: &["plugin"],
};

/// `--audit-*-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Batch,
    Blocking,
    BlockingStrict,
}

impl Mode {
    pub fn parse(plugin: &str, s: &str) -> Result<Mode, String> {
        match s {
            "batch" => Ok(Mode::Batch),
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            other => Err(format!(
                "invalid audit {plugin} mode {other}, allowed modes are \"batch,blocking,blocking-strict\""
            )),
        }
    }
}

/// `--audit-*-batch-*`.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// Events buffered before new ones are dropped.
    pub buffer: usize,
    /// Events per batch at most.
    pub max_size: usize,
    /// Longest wait, after a batch's first event, for it to fill.
    pub max_wait: Duration,
    /// Batches per second and burst, when throttled.
    pub throttle: Option<(f32, u32)>,
}

/// `--audit-*-truncate-*`, when enabled.
#[derive(Debug, Clone, Copy)]
pub struct Truncate {
    pub max_event: usize,
    pub max_batch: usize,
}

/// How one backend receives events.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub mode: Mode,
    pub batch: BatchConfig,
    pub truncate: Option<Truncate>,
}

impl Delivery {
    /// The log's defaults: blocking; batches of one when batched.
    pub fn log_default() -> Delivery {
        Delivery {
            mode: Mode::Blocking,
            batch: BatchConfig {
                buffer: 10_000,
                max_size: 1,
                max_wait: Duration::ZERO,
                throttle: None,
            },
            truncate: None,
        }
    }

    /// The webhook's defaults: batches of up to 400 within 30 s, 10 a second.
    pub fn webhook_default() -> Delivery {
        Delivery {
            mode: Mode::Batch,
            batch: BatchConfig {
                buffer: 10_000,
                max_size: 400,
                max_wait: Duration::from_secs(30),
                throttle: Some((10.0, 15)),
            },
            truncate: None,
        }
    }
}

/// `--audit-log-*`.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// `-` writes to standard output.
    pub path: PathBuf,
    pub rotation: Rotation,
    pub format: Format,
    pub delivery: Delivery,
}

impl LogOptions {
    pub fn new(path: impl Into<PathBuf>) -> LogOptions {
        LogOptions {
            path: path.into(),
            rotation: Rotation::default(),
            format: Format::Json,
            delivery: Delivery::log_default(),
        }
    }
}

/// `--audit-webhook-*`.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    pub connection: kapi_client::kubeconfig::WebhookConnection,
    pub initial_backoff: Duration,
    pub delivery: Delivery,
}

/// One backend as the request side sees it.
enum Stage {
    Direct { out: Arc<Output>, strict: bool },
    Buffered(mpsc::Sender<Value>),
}

struct Backend {
    stage: Stage,
    truncate: Option<Truncate>,
}

/// The request side of every backend. Cheap to clone.
#[derive(Clone)]
pub struct Sink {
    backends: Arc<Vec<Backend>>,
    metrics: Metrics,
}

impl Sink {
    /// Open the outputs and start the batching tasks (on the current runtime).
    pub fn open(
        log: Option<&LogOptions>,
        webhook: Option<&WebhookOptions>,
        metrics: Metrics,
    ) -> std::io::Result<Sink> {
        let mut outputs = Vec::new();
        if let Some(l) = log {
            let out = Output::log(&l.path, &l.rotation, l.format)?;
            outputs.push((out, l.delivery.clone()));
        }
        if let Some(w) = webhook {
            let out = Output::Webhook {
                conn: w.connection.clone(),
                initial_backoff: w.initial_backoff,
            };
            outputs.push((out, w.delivery.clone()));
        }
        let backends = outputs
            .into_iter()
            .map(|(out, d)| Backend {
                stage: stage(Arc::new(out), &d, &metrics),
                truncate: d.truncate,
            })
            .collect();
        Ok(Sink {
            backends: Arc::new(backends),
            metrics,
        })
    }

    /// Record one event without waiting on the network: buffered backends
    /// queue it, logs are written at once, blocking webhooks are sent in
    /// the background.
    pub fn send(&self, event: Value) {
        self.metrics.add(&EVENTS, &[], 1.0);
        for b in self.backends.iter() {
            let Some(event) = truncated(b.truncate, event.clone(), &self.metrics) else {
                continue;
            };
            match &b.stage {
                Stage::Buffered(tx) => self.queue(tx, event),
                Stage::Direct { out, .. } => match out.write_now(std::slice::from_ref(&event)) {
                    Some(done) => self.count(out, done),
                    None => {
                        let (out, sink) = (out.clone(), self.clone());
                        tokio::spawn(async move {
                            let done = out.write(&[event]).await;
                            sink.count(&out, done);
                        });
                    }
                },
            }
        }
    }

    /// Record one event, waiting for blocking backends; false when a
    /// `blocking-strict` backend failed to record it.
    pub async fn send_and_wait(&self, event: Value) -> bool {
        self.metrics.add(&EVENTS, &[], 1.0);
        let mut ok = true;
        for b in self.backends.iter() {
            let Some(event) = truncated(b.truncate, event.clone(), &self.metrics) else {
                ok &= !matches!(b.stage, Stage::Direct { strict: true, .. });
                continue;
            };
            match &b.stage {
                Stage::Buffered(tx) => self.queue(tx, event),
                Stage::Direct { out, strict } => {
                    let done = out.write(std::slice::from_ref(&event)).await;
                    ok &= done.is_ok() || !strict;
                    self.count(out, done);
                }
            }
        }
        ok
    }

    fn queue(&self, tx: &mpsc::Sender<Value>, event: Value) {
        if tx.try_send(event).is_err() {
            self.metrics.add(&ERRORS, &["buffered"], 1.0);
        }
    }

    fn count(&self, out: &Output, done: Result<(), String>) {
        if let Err(e) = done {
            tracing::warn!("audit {} backend: {e}", out.name());
            self.metrics.add(&ERRORS, &[out.name()], 1.0);
        }
    }
}

fn stage(out: Arc<Output>, d: &Delivery, metrics: &Metrics) -> Stage {
    match d.mode {
        Mode::Blocking => Stage::Direct { out, strict: false },
        Mode::BlockingStrict => Stage::Direct { out, strict: true },
        Mode::Batch => {
            let (tx, rx) = mpsc::channel(d.batch.buffer.max(1));
            tokio::spawn(drain(rx, out, d.batch.clone(), d.truncate, metrics.clone()));
            Stage::Buffered(tx)
        }
    }
}

/// The batching task of one backend; ends when every sender is gone, after
/// writing what was buffered.
async fn drain(
    mut rx: mpsc::Receiver<Value>,
    out: Arc<Output>,
    cfg: BatchConfig,
    truncate: Option<Truncate>,
    metrics: Metrics,
) {
    let mut bucket = cfg.throttle.map(|(qps, burst)| Bucket::new(qps, burst));
    while let Some(first) = rx.recv().await {
        let mut events = vec![first];
        let deadline = Instant::now() + cfg.max_wait;
        while events.len() < cfg.max_size.max(1) {
            let next = match rx.try_recv() {
                Ok(e) => Some(e),
                Err(_) if cfg.max_wait.is_zero() => None,
                Err(_) => tokio::time::timeout_at(deadline, rx.recv())
                    .await
                    .ok()
                    .flatten(),
            };
            match next {
                Some(e) => events.push(e),
                None => break,
            }
        }
        for batch in split(events, truncate.map(|t| t.max_batch)) {
            if let Some(b) = bucket.as_mut() {
                b.take().await;
            }
            if out.is_remote() {
                let (out, metrics) = (out.clone(), metrics.clone());
                tokio::spawn(async move {
                    let n = batch.len();
                    if let Err(e) = out.write(&batch).await {
                        tracing::warn!("audit {} backend: {e}", out.name());
                        metrics.add(&ERRORS, &[out.name()], n as f64);
                    }
                });
            } else if let Some(Err(e)) = out.write_now(&batch) {
                tracing::warn!("audit {} backend: {e}", out.name());
                metrics.add(&ERRORS, &[out.name()], batch.len() as f64);
            }
        }
    }
}

/// `events` in batches of at most `max_bytes` (serialized), each at least one event.
fn split(events: Vec<Value>, max_bytes: Option<usize>) -> Vec<Vec<Value>> {
    let Some(max) = max_bytes else {
        return vec![events];
    };
    let mut out: Vec<Vec<Value>> = Vec::new();
    let mut size = 0;
    for e in events {
        let n = serde_json::to_vec(&e).map_or(0, |b| b.len());
        match out.last_mut() {
            Some(last) if size + n <= max => {
                last.push(e);
                size += n;
            }
            _ => {
                out.push(vec![e]);
                size = n;
            }
        }
    }
    out
}

/// `event` as truncation leaves it: `None` when it must be dropped.
fn truncated(t: Option<Truncate>, mut event: Value, metrics: &Metrics) -> Option<Value> {
    let Some(t) = t else {
        return Some(event);
    };
    let size = |e: &Value| serde_json::to_vec(e).map_or(usize::MAX, |b| b.len());
    let level = event.get("level").and_then(Value::as_str).unwrap_or("");
    if size(&event) > t.max_event && matches!(level, "Request" | "RequestResponse") {
        if let Some(m) = event.as_object_mut() {
            m.remove("requestObject");
            m.remove("responseObject");
            let notes = m
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(notes) = notes.as_object_mut() {
                notes.insert("audit.k8s.io/truncated".into(), "true".into());
            }
        }
    }
    if size(&event) > t.max_event {
        tracing::warn!("audit event dropped: event is too large even after truncating");
        metrics.add(&ERRORS, &["truncate"], 1.0);
        return None;
    }
    Some(event)
}

/// A token bucket: `qps` batches a second on average, `burst` at once.
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(qps: f32, burst: u32) -> Bucket {
        Bucket {
            qps: f64::from(qps).max(f64::MIN_POSITIVE),
            burst: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            at: Instant::now(),
        }
    }

    async fn take(&mut self) {
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.at).as_secs_f64() * self.qps).min(self.burst);
        self.at = now;
        if self.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.qps);
            tokio::time::sleep(wait).await;
            self.tokens = 1.0;
            self.at = Instant::now();
        }
        self.tokens -= 1.0;
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
