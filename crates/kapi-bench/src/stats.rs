//! Latency samples and the report: throughput, p50/p99/max, and the server's
//! resources from `/proc/<pid>` (peak RSS while the scenario ran, CPU seconds
//! spent), printed as a table and as JSON.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Latencies of one kind of operation.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub name: String,
    pub micros: Vec<u64>,
    pub errors: u64,
    pub elapsed: Duration,
}

impl Samples {
    pub fn new(name: impl Into<String>) -> Self {
        Samples {
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn record(&mut self, d: Duration) {
        self.micros.push(d.as_micros() as u64);
    }

    pub fn merge(&mut self, other: Samples) {
        self.micros.extend(other.micros);
        self.errors += other.errors;
    }

    fn quantile(sorted: &[u64], q: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted[i] as f64 / 1000.0
    }

    pub fn to_json(&self) -> Value {
        let mut s = self.micros.clone();
        s.sort_unstable();
        let secs = self.elapsed.as_secs_f64();
        json!({
            "name": self.name,
            "count": s.len(),
            "errors": self.errors,
            "seconds": (secs * 1000.0).round() / 1000.0,
            "per_second": if secs > 0.0 { ((s.len() as f64 / secs) * 10.0).round() / 10.0 } else { 0.0 },
            "p50_ms": Self::quantile(&s, 0.50),
            "p99_ms": Self::quantile(&s, 0.99),
            "max_ms": s.last().map_or(0.0, |m| *m as f64 / 1000.0),
        })
    }
}

/// A server process watched through `/proc`.
pub struct ProcWatch {
    pid: u32,
    cpu_start: f64,
    peak_kib: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: tokio::sync::watch::Sender<bool>,
    started: Instant,
}

pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl ProcWatch {
    pub fn start(pid: u32) -> Self {
        let peak =
            std::sync::Arc::new(std::sync::atomic::AtomicU64::new(rss_kib(pid).unwrap_or(0)));
        let (stop, mut rx) = tokio::sync::watch::channel(false);
        let p = peak.clone();
        tokio::spawn(async move {
            loop {
                if let Some(r) = rss_kib(pid) {
                    p.fetch_max(r, std::sync::atomic::Ordering::Relaxed);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = rx.changed() => return,
                }
            }
        });
        ProcWatch {
            pid,
            cpu_start: cpu_seconds(pid).unwrap_or(0.0),
            peak_kib: peak,
            stop,
            started: Instant::now(),
        }
    }

    pub fn finish(self) -> Value {
        let _ = self.stop.send(true);
        let cpu = cpu_seconds(self.pid).unwrap_or(0.0) - self.cpu_start;
        let rss = rss_kib(self.pid).unwrap_or(0);
        let peak = self
            .peak_kib
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(rss);
        json!({
            "pid": self.pid,
            "cpu_seconds": (cpu * 100.0).round() / 100.0,
            "cpu_cores_avg": ((cpu / self.started.elapsed().as_secs_f64()) * 100.0).round() / 100.0,
            "rss_mib_end": (rss as f64 / 1024.0 * 10.0).round() / 10.0,
            "rss_mib_peak": (peak as f64 / 1024.0 * 10.0).round() / 10.0,
        })
    }
}

/// Print the report as a table.
pub fn print_table(scenario: &str, results: &[Value], procs: &[Value]) {
    println!("scenario: {scenario}");
    println!(
        "{:<34} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "operation", "count", "errors", "per sec", "p50 ms", "p99 ms", "max ms"
    );
    for r in results {
        println!(
            "{:<34} {:>8} {:>6} {:>9} {:>9.2} {:>9.2} {:>9.2}",
            r["name"].as_str().unwrap_or(""),
            r["count"].as_u64().unwrap_or(0),
            r["errors"].as_u64().unwrap_or(0),
            r["per_second"].as_f64().unwrap_or(0.0),
            r["p50_ms"].as_f64().unwrap_or(0.0),
            r["p99_ms"].as_f64().unwrap_or(0.0),
            r["max_ms"].as_f64().unwrap_or(0.0),
        );
    }
    for p in procs {
        println!(
            "server pid {}: cpu {} s ({} cores avg), rss peak {} MiB, end {} MiB",
            p["pid"], p["cpu_seconds"], p["cpu_cores_avg"], p["rss_mib_peak"], p["rss_mib_end"]
        );
    }
}
