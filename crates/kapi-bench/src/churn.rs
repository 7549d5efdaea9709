//! `churn`: a few objects updated without pause by as many clients (each its own
//! object, so no conflicts), while the server's RSS and the size of its data
//! directories are sampled on a fixed period, then the same sampling for a
//! while after the writes stop (does memory come back?). This is issue 23's
//! load: 8 ConfigMaps of about 2 KB, 8 clients, 10 minutes.
//!
//! Each client PUTs the object the previous PUT returned (its resourceVersion
//! is the precondition), changing one field, so every request is one storage
//! write. `rate` caps the total writes per second (0: as fast as they go), to
//! compare two servers at the same rate.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{json, Value};

use crate::client::Api;
use crate::stats::{self, Samples};

/// What a churn run does.
pub struct ChurnPlan {
    pub objects: usize,
    pub size: usize,
    pub duration: Duration,
    /// Sampling goes on this long after the writes stop.
    pub after: Duration,
    pub sample: Duration,
    /// Total writes per second at most; 0 is no cap.
    pub rate: f64,
    pub pids: Vec<u32>,
    pub dirs: Vec<PathBuf>,
}

/// One row of the timeline.
struct Row {
    at: f64,
    writes_per_sec: f64,
    rss_mib: Vec<f64>,
    disk_mib: Vec<f64>,
}

/// Run the churn; returns the PUT latencies and the timeline as JSON.
pub async fn run(api: &Api, prefix: &str, plan: &ChurnPlan) -> Result<(Samples, Value), String> {
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let per_client = (plan.rate > 0.0).then(|| plan.rate / plan.objects.max(1) as f64);
    let mut clients = Vec::new();
    for i in 0..plan.objects.max(1) {
        let obj = ensure(api, &format!("{prefix}-churn-{i}"), plan.size).await?;
        let (api, done, duration) = (api.reconnect()?, done.clone(), plan.duration);
        clients.push(tokio::spawn(async move {
            update_loop(api, obj, done, duration, per_client).await
        }));
    }
    let rows = sample(plan, &done, started).await;
    let mut all = Samples::new("update (PUT)");
    for c in clients {
        all.merge(c.await.map_err(|e| e.to_string())?);
    }
    all.elapsed = plan.duration;
    print_rows(plan, &rows);
    let timeline: Vec<Value> = rows
        .iter()
        .map(|r| json!({"t": r.at, "writes_per_sec": r.writes_per_sec, "rss_mib": r.rss_mib, "disk_mib": r.disk_mib}))
        .collect();
    Ok((
        all,
        json!({"timeline": timeline, "sample_seconds": plan.sample.as_secs_f64()}),
    ))
}

/// The object `name`, created with a `size`-byte payload when missing.
async fn ensure(api: &Api, name: &str, size: usize) -> Result<Value, String> {
    let (code, body) = api
        .send(
            Method::POST,
            &api.configmaps(),
            Some(api.configmap(name, size)),
        )
        .await?;
    let body = match code {
        201 => body,
        409 => {
            let path = format!("{}/{name}", api.configmaps());
            api.send(Method::GET, &path, None).await?.1
        }
        _ => return Err(format!("creating {name}: HTTP {code}")),
    };
    api.decode(&body)
}

async fn update_loop(
    api: Api,
    mut obj: Value,
    done: Arc<AtomicU64>,
    duration: Duration,
    rate: Option<f64>,
) -> Samples {
    let mut s = Samples::new("update (PUT)");
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let path = format!("{}/{name}", api.configmaps());
    let started = Instant::now();
    let interval = rate.map(|r| Duration::from_secs_f64(1.0 / r.max(0.001)));
    let mut n: u64 = 0;
    while started.elapsed() < duration {
        if let Some(every) = interval {
            tokio::time::sleep_until((started + every * n as u32).into()).await;
        }
        n += 1;
        obj["data"]["counter"] = n.to_string().into();
        let t = Instant::now();
        match api.send(Method::PUT, &path, Some(api.body(&obj))).await {
            Ok((200, body)) => {
                s.record(t.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
                match api.decode(&body) {
                    Ok(v) => obj = v,
                    Err(_) => s.errors += 1,
                }
            }
            _ => {
                s.errors += 1;
                // Re-read: a conflict or a failure leaves the local copy stale.
                if let Ok((200, body)) = api.send(Method::GET, &path, None).await {
                    obj = api.decode(&body).unwrap_or(obj);
                }
            }
        }
    }
    s
}

/// Sample every `plan.sample` until the writes and the quiet time after them are over.
async fn sample(plan: &ChurnPlan, done: &AtomicU64, started: Instant) -> Vec<Row> {
    let end = plan.duration + plan.after;
    let mut rows = Vec::new();
    let mut last = (0u64, Instant::now());
    let mut tick = 0u32;
    loop {
        let at = started.elapsed();
        let n = done.load(Ordering::Relaxed);
        let rate = match tick {
            0 => 0.0,
            _ => (n - last.0) as f64 / last.1.elapsed().as_secs_f64().max(1e-3),
        };
        last = (n, Instant::now());
        rows.push(Row {
            at: round1(at.as_secs_f64()),
            writes_per_sec: round1(rate),
            rss_mib: plan
                .pids
                .iter()
                .map(|p| round1(stats::rss_kib(*p).unwrap_or(0) as f64 / 1024.0))
                .collect(),
            disk_mib: plan
                .dirs
                .iter()
                .map(|d| round1(dir_bytes(d) as f64 / (1 << 20) as f64))
                .collect(),
        });
        if at >= end {
            return rows;
        }
        tick += 1;
        tokio::time::sleep_until((started + plan.sample * tick).into()).await;
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Bytes allocated to the files under `dir` (as `du` counts them), recursively.
fn dir_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

fn print_rows(plan: &ChurnPlan, rows: &[Row]) {
    let mut head = format!("{:>7} {:>9}", "t s", "writes/s");
    for p in &plan.pids {
        head.push_str(&format!(" {:>14}", format!("rss {p} MiB")));
    }
    for d in &plan.dirs {
        let name = d.file_name().and_then(|n| n.to_str()).unwrap_or("dir");
        head.push_str(&format!(" {:>14}", format!("{name} MiB")));
    }
    println!("{head}");
    for r in rows {
        let mut line = format!("{:>7} {:>9}", r.at, r.writes_per_sec);
        for v in r.rss_mib.iter().chain(&r.disk_mib) {
            line.push_str(&format!(" {v:>14}"));
        }
        println!("{line}");
    }
}
