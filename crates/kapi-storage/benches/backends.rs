//! Storage benchmark: both backends on this machine, in one run.
//!
//! `cargo bench -p kapi-storage --bench backends` (add `-- --quick` for a short
//! run). Prints a Markdown table: durable creates/s at 1, 16 and 64 concurrent
//! writers (1 KiB values), gets/s at 64 readers, one list of 10k keys, and the
//! time to deliver 1,024 writes to each of 100 watchers. etcd is Debian's, started
//! on a loopback port with default durability (fsync on every commit).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::{Backend, ListOptions, WatchMessage};

struct Row {
    name: &'static str,
    embedded: String,
    etcd: String,
}

async fn creates(b: &Arc<dyn Backend>, writers: usize, total: usize, tag: &str) -> f64 {
    let value = Bytes::from(vec![b'v'; 1024]);
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let b = b.clone();
            let value = value.clone();
            let tag = tag.to_owned();
            tokio::spawn(async move {
                for i in 0..total / writers {
                    b.create(&format!("/bench/{tag}/{w}/{i}"), value.clone())
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

async fn gets(b: &Arc<dyn Backend>, readers: usize, total: usize, tag: &str) -> f64 {
    let start = Instant::now();
    let tasks: Vec<_> = (0..readers)
        .map(|w| {
            let b = b.clone();
            let tag = tag.to_owned();
            tokio::spawn(async move {
                for i in 0..total / readers {
                    let key = format!("/bench/{tag}/{}/{}", w % 64, i % 10);
                    b.get(&key, None).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

async fn list_10k(b: &Arc<dyn Backend>) -> Duration {
    let value = Bytes::from(vec![b'l'; 1024]);
    let tasks: Vec<_> = (0..64)
        .map(|w| {
            let b = b.clone();
            let value = value.clone();
            tokio::spawn(async move {
                for i in 0..10_000 / 64 + 1 {
                    let _ = b
                        .create(&format!("/list/{w:02}/{i:05}"), value.clone())
                        .await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let start = Instant::now();
    let page = b.list("/list/", ListOptions::default()).await.unwrap();
    assert!(page.kvs.len() >= 10_000);
    start.elapsed()
}

async fn watch_fanout(b: &Arc<dyn Backend>, watchers: usize, writes: usize) -> Duration {
    let rev = b.current_revision().await.unwrap();
    let mut streams = Vec::new();
    for _ in 0..watchers {
        streams.push(b.watch("/fan/", rev).await.unwrap());
    }
    let start = Instant::now();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut n = 0;
                while n < writes {
                    if let Some(Ok(WatchMessage::Events(e))) = s.next().await {
                        n += e.len();
                    }
                }
            })
        })
        .collect();
    let value = Bytes::from(vec![b'w'; 1024]);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let b = b.clone();
            let value = value.clone();
            tokio::spawn(async move {
                for i in 0..writes / 16 {
                    b.create(&format!("/fan/{w}/{i}"), value.clone())
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in writers.into_iter().chain(readers) {
        t.await.unwrap();
    }
    start.elapsed()
}

async fn run(b: Arc<dyn Backend>, quick: bool) -> Vec<String> {
    let scale = if quick { 1 } else { 4 };
    let mut out = Vec::new();
    for (writers, total) in [(1, 200 * scale), (16, 1_000 * scale), (64, 2_000 * scale)] {
        let rate = creates(&b, writers, total, &format!("c{writers}")).await;
        eprintln!("{}: creates with {writers} writers: {rate:.0}/s", b.name());
        out.push(format!("{rate:.0}/s"));
    }
    out.push(format!(
        "{:.0}/s",
        gets(&b, 64, 20_000 * scale, "c64").await
    ));
    eprintln!("{}: gets done", b.name());
    out.push(format!("{:.0} ms", list_10k(&b).await.as_secs_f64() * 1e3));
    eprintln!("{}: list done", b.name());
    out.push(format!(
        "{:.0} ms",
        watch_fanout(&b, 100, 1_024).await.as_secs_f64() * 1e3
    ));
    out
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let embedded: Arc<dyn Backend> =
            Arc::new(EmbeddedBackend::open(EmbeddedConfig::new(dir.path())).unwrap());
        let e = run(embedded, quick).await;
        let etcd_proc = tokio::task::spawn_blocking(kapi_testkit::Etcd::start)
            .await
            .unwrap();
        let cfg = EtcdConfig::new(vec![etcd_proc.client_url.clone()]);
        let etcd: Arc<dyn Backend> = Arc::new(EtcdBackend::connect(&cfg).await.unwrap());
        let c = run(etcd, quick).await;
        let names = [
            "durable creates, 1 writer",
            "durable creates, 16 writers",
            "durable creates, 64 writers",
            "gets, 64 readers",
            "list 10k keys (1 KiB values)",
            "1,024 writes to 100 watchers",
        ];
        let rows: Vec<Row> = names
            .iter()
            .zip(e.into_iter().zip(c))
            .map(|(name, (embedded, etcd))| Row {
                name,
                embedded,
                etcd,
            })
            .collect();
        println!("| figure | embedded | etcd 3.4 |\n|---|---|---|");
        for r in rows {
            println!("| {} | {} | {} |", r.name, r.embedded, r.etcd);
        }
    });
}
