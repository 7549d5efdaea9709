//! The watch scenario spread over several client processes (`watch --procs N`):
//! one client process holding 1,000 TLS connections and parsing 100,000 events
//! a second on shared cores measures itself, not the server. The parent starts
//! N copies of this binary (`watch-child`, hidden), each holding its share of
//! the watchers (one connection each, as separate informers would), waits until
//! all are connected, writes at the planned rate itself, then tells the children
//! to stop and collects every receipt.
//!
//! Latency is from the create's acknowledgement (in the parent) to the event's
//! arrival (in a child): both are wall-clock instants (`CLOCK_REALTIME`, the
//! same clock for every process of the machine), sent as nanoseconds. The
//! child protocol on stdout: `ready <connected>`, then after `stop` on stdin
//! one line per ADDED event received, `<object index> <unix nanos>`, then `end`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use http::Method;
use http_body_util::BodyExt;
use serde_json::{json, Value};

use crate::client::{first_string, Api};
use crate::scenarios::{write_at_rate, WatchPlan};
use crate::stats::{cpu_seconds, Samples};

fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The child: `watchers` watches of the namespace from now; see the module doc.
pub async fn child(api: &Api, prefix: &str, watchers: usize, lean: bool) -> Result<(), String> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (conn_tx, mut conn_rx) = tokio::sync::mpsc::channel::<bool>(watchers.max(1));
    let name_prefix = format!("{prefix}-w-");
    let path = api.watch_from_now().await?;
    let mut handles = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        let (api, mut stop, conn_tx) = (api.clone(), stop_rx.clone(), conn_tx.clone());
        let (name_prefix, path) = (name_prefix.clone(), path.clone());
        handles.push(tokio::spawn(async move {
            if lean {
                let body = tokio::select! {
                    b = crate::lean::open_watch(&api.config, &path) => b.ok(),
                    _ = stop.wait_for(|s| *s) => None,
                };
                let _ = conn_tx.send(body.is_some()).await;
                let Some(body) = body else {
                    return Vec::new();
                };
                return read_lean(body, &name_prefix, &mut stop).await;
            }
            let api = match api.reconnect() {
                Ok(mut a) => {
                    a.protobuf = false;
                    a
                }
                Err(_) => {
                    let _ = conn_tx.send(false).await;
                    return Vec::new();
                }
            };
            let resp = tokio::select! {
                r = api.open(Method::GET, &path, None) => r.ok().filter(|r| r.status() == 200),
                _ = stop.wait_for(|s| *s) => None,
            };
            let _ = conn_tx.send(resp.is_some()).await;
            let Some(resp) = resp else {
                return Vec::new();
            };
            read_events(resp, &name_prefix, &mut stop).await
        }));
    }
    drop(conn_tx);
    let mut connected = 0;
    let deadline = tokio::time::sleep(Duration::from_secs(180));
    tokio::pin!(deadline);
    for _ in 0..watchers {
        tokio::select! {
            ok = conn_rx.recv() => match ok {
                Some(true) => connected += 1,
                Some(false) => {}
                None => break,
            },
            _ = &mut deadline => break,
        }
    }
    // Plain blocking stdio (a few lines), so the tool needs no more of tokio.
    println!("ready {connected}");
    let _ = std::io::stdout().flush();
    // Wait for `stop` (or the parent going away).
    let stopped = tokio::task::spawn_blocking(|| {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) if l.trim() == "stop" => return,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    let _ = stopped.await;
    let _ = stop_tx.send(true);
    let mut text = String::new();
    for h in handles {
        if let Ok(Ok(got)) = tokio::time::timeout(Duration::from_secs(15), h).await {
            for (i, t) in got {
                text.push_str(&format!("{i} {t}\n"));
            }
        }
    }
    text.push_str("end\n");
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

/// Read a watch stream until stopped: `(object index, arrival)` of every ADDED
/// event of an object named `<name_prefix><index>`.
async fn read_events(
    resp: http::Response<kube::client::Body>,
    name_prefix: &str,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Vec<(u32, u64)> {
    let mut body = resp.into_body().into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut got = Vec::new();
    loop {
        let chunk = tokio::select! {
            c = body.next() => c,
            _ = stop.wait_for(|s| *s) => None,
        };
        let Some(Ok(chunk)) = chunk else { break };
        buf.extend_from_slice(&chunk);
        take_lines(&mut buf, name_prefix, &mut got);
    }
    got
}

/// As [`read_events`], from a lean reader's body.
async fn read_lean(
    mut body: crate::lean::WatchBody,
    name_prefix: &str,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Vec<(u32, u64)> {
    let mut buf: Vec<u8> = Vec::new();
    let mut got = Vec::new();
    loop {
        let more = tokio::select! {
            m = body.read_into(&mut buf) => m.unwrap_or(false),
            _ = stop.wait_for(|s| *s) => false,
        };
        take_lines(&mut buf, name_prefix, &mut got);
        if !more {
            break;
        }
    }
    got
}

/// Take the complete lines (watch events) out of `buf`: each ADDED event of an
/// object named `<name_prefix><index>` is a receipt, now.
fn take_lines(buf: &mut Vec<u8>, name_prefix: &str, got: &mut Vec<(u32, u64)>) {
    let now = unix_nanos(SystemTime::now());
    let mut start = 0;
    while let Some(nl) = buf[start..].iter().position(|b| *b == b'\n') {
        let line = &buf[start..start + nl];
        start += nl + 1;
        if first_string(line, "type") != Some("ADDED") {
            continue;
        }
        let idx = first_string(line, "name")
            .and_then(|n| n.strip_prefix(name_prefix))
            .and_then(|i| i.parse::<u32>().ok());
        if let Some(i) = idx {
            got.push((i, now));
        }
    }
    buf.drain(..start);
}

/// How the parent starts its children: the global arguments they share, how
/// many, and whether their watchers read lean (`lean.rs`).
pub struct Children<'a> {
    pub args: &'a [String],
    pub procs: usize,
    pub lean: bool,
}

/// One child: its stdin, and its stdout read line by line on a thread of its own.
struct Child {
    proc: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// The parent: `plan.watchers` watchers over `procs` children. Returns the
/// samples and, per server PID, its CPU seconds during the writes alone.
pub async fn parent(
    api: &Api,
    how: &Children<'_>,
    prefix: &str,
    plan: &WatchPlan,
    pids: &[u32],
) -> Result<(Vec<Samples>, Value), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut children = Vec::new();
    let procs = how.procs.max(1);
    for p in 0..procs {
        let share = plan.watchers / procs + usize::from(p < plan.watchers % procs);
        let mut proc = std::process::Command::new(&exe)
            .args(how.args)
            .args(["watch-child", "--watchers", &share.to_string()])
            .args(how.lean.then_some("--lean"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting a child: {e}"))?;
        let stdin = proc.stdin.take().expect("piped");
        let stdout = proc.stdout.take().expect("piped");
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        children.push(Child { proc, stdin, lines });
    }
    let mut connected = 0usize;
    for c in &mut children {
        let line = c.lines.recv().await;
        let n = line
            .as_deref()
            .and_then(|l| l.strip_prefix("ready "))
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| format!("a child did not start: {line:?}"))?;
        connected += n;
    }
    eprintln!("{connected} of {} watchers connected", plan.watchers);
    // Wall clock of the parent's monotonic instants, for the children's receipts.
    let (base_instant, base_wall) = (Instant::now(), unix_nanos(SystemTime::now()));
    let wall = |t: Instant| base_wall + t.duration_since(base_instant).as_nanos() as u64;
    let cpu_before: Vec<_> = pids
        .iter()
        .map(|p| cpu_seconds(*p).unwrap_or(0.0))
        .collect();
    let writes_started = Instant::now();
    let (acks, writes) = write_at_rate(api, prefix, plan).await;
    let write_secs = writes_started.elapsed().as_secs_f64();
    let cpu: Vec<Value> = pids
        .iter()
        .zip(&cpu_before)
        .map(|(p, before)| {
            let used = cpu_seconds(*p).unwrap_or(0.0) - before;
            json!({"pid": p, "cpu_seconds": (used * 100.0).round() / 100.0,
                   "cpu_cores_avg": (used / write_secs * 100.0).round() / 100.0})
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let acks: Vec<Option<u64>> = acks.iter().map(|a| a.map(wall)).collect();
    let mut delivery = Samples::new(format!("watch delivery ({connected} watchers)"));
    let mut received = 0usize;
    for c in &mut children {
        let _ = c.stdin.write_all(b"stop\n");
        let _ = c.stdin.flush();
    }
    for c in &mut children {
        while let Some(line) = c.lines.recv().await {
            if line == "end" {
                break;
            }
            let mut it = line.split(' ');
            let (Some(i), Some(t)) = (it.next(), it.next()) else {
                continue;
            };
            let (Ok(i), Ok(t)) = (i.parse::<usize>(), t.parse::<u64>()) else {
                continue;
            };
            received += 1;
            if let Some(Some(ack)) = acks.get(i) {
                delivery.record(Duration::from_nanos(t.saturating_sub(*ack)));
            }
        }
        let _ = c.proc.wait();
    }
    let expected = acks.iter().flatten().count() * connected;
    delivery.errors = expected.saturating_sub(received) as u64;
    delivery.elapsed = plan.duration;
    let mut out = writes;
    out.push(delivery);
    Ok((
        out,
        json!({"write_phase_servers": cpu, "connected": connected}),
    ))
}
