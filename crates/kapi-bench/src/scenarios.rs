//! The scenarios. Each returns one [`Samples`] per kind of operation; latency is
//! measured around the whole request (for watches: from the write's
//! acknowledgement to the event's arrival at the watcher).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use http::Method;
use http_body_util::BodyExt;

use crate::client::{first_string, Api};
use crate::stats::Samples;

/// `count` creates of `size`-byte ConfigMaps named `{prefix}-{i}` at `concurrency`.
pub async fn create(
    api: &Api,
    prefix: &str,
    count: usize,
    size: usize,
    concurrency: usize,
) -> Samples {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (api, next, prefix) = (api.clone(), next.clone(), prefix.to_owned());
            tokio::spawn(async move {
                let mut s = Samples::new("create");
                let path = api.configmaps();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return s;
                    }
                    let body = api.configmap(&format!("{prefix}-{i}"), size);
                    let t = Instant::now();
                    match api.send(Method::POST, &path, Some(body)).await {
                        Ok((201, _)) => s.record(t.elapsed()),
                        _ => s.errors += 1,
                    }
                }
            })
        })
        .collect();
    collect("create", workers, started).await
}

async fn collect(
    name: &str,
    workers: Vec<tokio::task::JoinHandle<Samples>>,
    started: Instant,
) -> Samples {
    let mut all = Samples::new(name);
    for w in workers {
        all.merge(w.await.expect("worker"));
    }
    all.elapsed = started.elapsed();
    all
}

/// Random GETs by name among `count` objects for `duration`.
pub async fn get(
    api: &Api,
    prefix: &str,
    count: usize,
    duration: Duration,
    concurrency: usize,
) -> Samples {
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (api, prefix) = (api.clone(), prefix.to_owned());
            tokio::spawn(async move {
                let mut s = Samples::new("get");
                while started.elapsed() < duration {
                    let i = rand::random_range(0..count.max(1));
                    let path = format!("{}/{prefix}-{i}", api.configmaps());
                    let t = Instant::now();
                    match api.send(Method::GET, &path, None).await {
                        Ok((200, _)) => s.record(t.elapsed()),
                        _ => s.errors += 1,
                    }
                }
                s
            })
        })
        .collect();
    collect("get", workers, started).await
}

/// LIST variants, each `repeat` times, one at a time (the paged one only with
/// a `page` size; with `only`, just the variants whose name contains it).
pub async fn list(
    api: &Api,
    repeat: usize,
    page: Option<usize>,
    only: Option<&str>,
) -> Vec<Samples> {
    let ns = api.configmaps();
    let mut variants = vec![
        ("list ns, consistent", ns.clone(), false),
        (
            "list ns, resourceVersion=0",
            format!("{ns}?resourceVersion=0"),
            false,
        ),
        (
            "list cluster, consistent",
            "/api/v1/configmaps".to_owned(),
            false,
        ),
        (
            "list ns, selector matches none",
            format!("{ns}?labelSelector=bench%3Dnone"),
            false,
        ),
        (
            "list cluster, selector matches none",
            "/api/v1/configmaps?labelSelector=bench%3Dnone".to_owned(),
            false,
        ),
    ];
    if let Some(page) = page {
        variants.insert(2, ("list ns, paged", format!("{ns}?limit={page}"), true));
    }
    if let Some(only) = only {
        variants.retain(|(name, _, _)| name.contains(only));
    }
    let mut out = Vec::new();
    let mut conn = None;
    for (name, path, paged) in variants {
        let mut s = Samples::new(name);
        let started = Instant::now();
        for _ in 0..repeat.max(1) {
            if api.lean && conn.is_none() {
                match crate::lean::Conn::open(&api.config).await {
                    Ok(c) => conn = Some(c),
                    Err(e) => eprintln!("kapi-bench: a lean connection: {e}"),
                }
            }
            let t = Instant::now();
            match list_all(api, &mut conn, &path, paged).await {
                Ok(_) => s.record(t.elapsed()),
                Err(e) => {
                    if s.errors == 0 {
                        eprintln!("kapi-bench: {name}: {e}");
                    }
                    s.errors += 1;
                }
            }
        }
        s.elapsed = started.elapsed();
        out.push(s);
    }
    out
}

/// A whole list, following `continue` when `paged`; returns the number of bytes.
/// An unpaged list is timed to its last byte and not kept; it is read on the
/// lean connection `conn` when there is one (dropped if the read fails).
async fn list_all(
    api: &Api,
    conn: &mut Option<crate::lean::Conn>,
    path: &str,
    paged: bool,
) -> Result<usize, String> {
    let mut total = 0;
    let mut cont: Option<String> = None;
    loop {
        let p = match &cont {
            Some(c) => format!("{path}&continue={c}"),
            None => path.to_owned(),
        };
        if !paged {
            let (code, bytes) = match conn {
                Some(c) => c
                    .drain(&p, &api.accept())
                    .await
                    .inspect_err(|_| *conn = None)?,
                None => api.drain(Method::GET, &p).await?,
            };
            return if code == 200 {
                Ok(bytes)
            } else {
                Err(format!("{code}"))
            };
        }
        let (code, body) = api.send(Method::GET, &p, None).await?;
        if code != 200 {
            return Err(format!("{code}"));
        }
        total += body.len();
        let v = api.decode(&body)?;
        match v["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => cont = Some(c.to_owned()),
            _ => return Ok(total),
        }
    }
}

/// Compare-and-swap updates (GET, change, PUT) on the first `hot` objects.
pub async fn update(
    api: &Api,
    prefix: &str,
    hot: usize,
    duration: Duration,
    concurrency: usize,
) -> Vec<Samples> {
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (api, prefix) = (api.clone(), prefix.to_owned());
            tokio::spawn(async move {
                let mut s = Samples::new("update (CAS)");
                let mut conflicts = Samples::new("update conflicts (409)");
                while started.elapsed() < duration {
                    let i = rand::random_range(0..hot.max(1));
                    let path = format!("{}/{prefix}-{i}", api.configmaps());
                    let t = Instant::now();
                    let Ok((200, body)) = api.send(Method::GET, &path, None).await else {
                        s.errors += 1;
                        continue;
                    };
                    let mut obj = api.decode(&body).unwrap_or_default();
                    obj["data"]["counter"] = t.elapsed().as_nanos().to_string().into();
                    match api.send(Method::PUT, &path, Some(api.body(&obj))).await {
                        Ok((200, _)) => s.record(t.elapsed()),
                        Ok((409, _)) => conflicts.record(t.elapsed()),
                        _ => s.errors += 1,
                    }
                }
                (s, conflicts)
            })
        })
        .collect();
    let mut s = Samples::new("update (CAS)");
    let mut c = Samples::new("update conflicts (409)");
    for w in workers {
        let (a, b) = w.await.expect("worker");
        s.merge(a);
        c.merge(b);
    }
    s.elapsed = started.elapsed();
    c.elapsed = s.elapsed;
    vec![s, c]
}

/// What a watch scenario does.
pub struct WatchPlan {
    pub watchers: usize,
    pub rate: f64,
    pub duration: Duration,
    pub size: usize,
    /// Informers: LIST first and watch from its revision (else watch from "now").
    pub informers: bool,
    /// Each created object is also updated and deleted (churn).
    pub churn: bool,
}

/// `watchers` watches on the namespace while writes go on at `rate` per second;
/// delivery latency is measured for ADDED events, from the create's response.
pub async fn watch(api: &Api, prefix: &str, plan: &WatchPlan) -> Vec<Samples> {
    let received: Arc<Mutex<Vec<(u32, Instant)>>> = Arc::default();
    let connected = Arc::new(AtomicUsize::new(0));
    // Level-triggered, so a watcher busy with a chunk (or still connecting)
    // when the scenario ends sees it too.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut handles = Vec::new();
    let from_now = if plan.informers {
        None
    } else {
        match api.watch_from_now().await {
            Ok(path) => Some(path),
            Err(e) => {
                eprintln!("watch: {e}");
                return Vec::new();
            }
        }
    };
    for _ in 0..plan.watchers {
        let (received, connected) = (received.clone(), connected.clone());
        let from_now = from_now.clone();
        let mut stop = stop_rx.clone();
        let (prefix, informers) = (format!("{prefix}-w-"), plan.informers);
        // Each watcher on its own connection, as separate informer processes
        // would be (on one HTTP/2 connection they would share one client task).
        let api = api.reconnect().ok().map(|mut a| {
            a.protobuf = false; // events are read as JSON lines
            a
        });
        handles.push(tokio::spawn(async move {
            let api = api?;
            let base = api.configmaps();
            let rv = if informers {
                let (_, body) = api
                    .send(Method::GET, &format!("{base}?limit=500"), None)
                    .await
                    .ok()?;
                first_string(&body, "resourceVersion").map(str::to_owned)
            } else {
                None
            };
            let path = match rv {
                Some(rv) => {
                    format!("{base}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true")
                }
                None => from_now?,
            };
            let resp = tokio::select! {
                r = api.open(Method::GET, &path, None) => r.ok()?,
                _ = stop.wait_for(|s| *s) => return None,
            };
            connected.fetch_add(1, Ordering::Relaxed);
            let mut body = resp.into_body().into_data_stream();
            let mut buf: Vec<u8> = Vec::new();
            let mut mine = Vec::new();
            loop {
                let chunk = tokio::select! {
                    c = body.next() => c,
                    _ = stop.wait_for(|s| *s) => None,
                };
                let Some(Ok(chunk)) = chunk else { break };
                let now = Instant::now();
                buf.extend_from_slice(&chunk);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    if first_string(&line, "type") != Some("ADDED") {
                        continue;
                    }
                    let idx = first_string(&line, "name")
                        .and_then(|n| n.strip_prefix(prefix.as_str()))
                        .and_then(|i| i.parse::<u32>().ok());
                    if let Some(i) = idx {
                        mine.push((i, now));
                    }
                }
            }
            received.lock().expect("lock").extend(mine);
            Some(())
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while connected.load(Ordering::Relaxed) < plan.watchers && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (acks, writes) = write_at_rate(api, prefix, plan).await;
    // Let the last events arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(15), futures::future::join_all(handles)).await;
    let mut delivery = Samples::new(format!("watch delivery ({} watchers)", plan.watchers));
    let got = received.lock().expect("lock");
    for (i, at) in got.iter() {
        if let Some(Some(ack)) = acks.get(*i as usize) {
            delivery.record(at.saturating_duration_since(*ack));
        }
    }
    let expected = acks.iter().flatten().count() * plan.watchers;
    delivery.errors = expected.saturating_sub(got.len()) as u64;
    delivery.elapsed = plan.duration;
    let mut out = writes;
    out.push(delivery);
    out
}

/// Creates (and with churn: updates and deletes) at a fixed rate; the ack
/// instant of each create by index.
pub async fn write_at_rate(
    api: &Api,
    prefix: &str,
    plan: &WatchPlan,
) -> (Vec<Option<Instant>>, Vec<Samples>) {
    let total = (plan.rate * plan.duration.as_secs_f64()).ceil() as usize;
    let interval = Duration::from_secs_f64(1.0 / plan.rate.max(0.001));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        let at = started + interval * i as u32;
        tokio::time::sleep_until(at.into()).await;
        let (api, name, size, churn) = (
            api.clone(),
            format!("{prefix}-w-{i}"),
            plan.size,
            plan.churn,
        );
        tasks.push(tokio::spawn(async move {
            let path = api.configmaps();
            let t = Instant::now();
            let (code, body) = api
                .send(Method::POST, &path, Some(api.configmap(&name, size)))
                .await
                .ok()?;
            let ack = Instant::now();
            let create = (code == 201).then(|| ack - t);
            let mut other = Vec::new();
            if churn && code == 201 {
                let mut obj = api.decode(&body).ok()?;
                obj["data"]["payload"] = "y".into();
                let p = format!("{path}/{name}");
                let t = Instant::now();
                let ok = matches!(
                    api.send(Method::PUT, &p, Some(api.body(&obj))).await,
                    Ok((200, _))
                );
                other.push(("update", ok.then(|| t.elapsed())));
                let t = Instant::now();
                let ok = matches!(api.send(Method::DELETE, &p, None).await, Ok((200, _)));
                other.push(("delete", ok.then(|| t.elapsed())));
            }
            Some((ack, create, other))
        }));
    }
    let mut acks = vec![None; total];
    let mut by_name: Vec<Samples> = ["create", "update", "delete"]
        .iter()
        .map(|n| Samples::new(*n))
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.ok().flatten() {
            Some((ack, create, other)) => {
                match create {
                    Some(d) => {
                        acks[i] = Some(ack);
                        by_name[0].record(d);
                    }
                    None => by_name[0].errors += 1,
                }
                for (name, d) in other {
                    let s = by_name.iter_mut().find(|s| s.name == name).expect("named");
                    match d {
                        Some(d) => s.record(d),
                        None => s.errors += 1,
                    }
                }
            }
            None => by_name[0].errors += 1,
        }
    }
    let elapsed = started.elapsed();
    for s in &mut by_name {
        s.elapsed = elapsed;
    }
    by_name.retain(|s| !s.micros.is_empty() || s.errors > 0);
    (acks, by_name)
}
