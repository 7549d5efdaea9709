//! Slow and idle clients: thousands of TCP connections that never start TLS,
//! hundreds of TLS connections that never send a request, and slow-loris
//! clients trickling a request head a byte at a time — while they all hang on,
//! ordinary clients are still served, and the server's own health stays 200.
//!
//! The long variant (`KAPI_LONG_TESTS=1`) also checks the bounds themselves:
//! a slow-loris connection is closed by the server once the header read timeout
//! (32 s, upstream's `ReadHeaderTimeout`) has passed, while a watch over
//! HTTP/1.1 that lasts longer than that is not cut.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::proc::Kapi;
use crate::util::long;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_and_slow_clients_do_not_starve_others() {
    let dir = tempfile::tempdir().unwrap();
    let kapi = Kapi::start(dir.path(), &[]).await;
    let ns = crate::util::namespace(&kapi.client, "loris").await;
    let api: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), &ns);
    let tls = kapi.tls(true);

    // 2,000 TCP connections that never say a word.
    let mut idle_tcp = Vec::new();
    for _ in 0..2000 {
        idle_tcp.push(
            tokio::net::TcpStream::connect(&kapi.addr)
                .await
                .expect("tcp connect"),
        );
    }
    // 200 TLS connections that never send a request.
    let mut idle_tls = Vec::new();
    for _ in 0..200 {
        idle_tls.push(tls.connect().await);
    }
    // 50 slow-loris clients: a request head, one byte every 200 ms, never finished.
    let mut lorises = Vec::new();
    for i in 0..50 {
        let tls = tls.clone();
        lorises.push(tokio::spawn(async move {
            let mut s = tls.connect().await;
            let head = format!("GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: ");
            let mut sent = 0usize;
            for b in head.bytes().chain(std::iter::repeat(b'a')) {
                if s.write_all(&[b]).await.is_err() || s.flush().await.is_err() {
                    return sent; // closed by the server
                }
                sent += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            sent
        }));
    }

    // Meanwhile ordinary clients are served.
    for i in 0..50 {
        api.create(
            &PostParams::default(),
            &crate::util::configmap(&format!("c{i}")),
        )
        .await
        .expect("served despite idle and slow clients");
    }
    let head = "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (code, body) = tls.request(head, b"").await;
    assert_eq!(code, 200, "{body}");

    let mut closed = None;
    if long() {
        // A watch longer than the header timeout is not cut...
        let watch = tokio::spawn({
            let api = api.clone();
            async move {
                use futures::StreamExt as _;
                let params = kube::api::WatchParams::default().timeout(120);
                let mut stream = api.watch(&params, "0").await.expect("watch").boxed();
                while let Some(ev) = stream.next().await {
                    if let Ok(kube::api::WatchEvent::Added(c)) = ev {
                        if c.metadata.name.as_deref() == Some("late") {
                            return true;
                        }
                    }
                }
                false
            }
        });
        // ...while the slow-loris connections are closed by the server.
        let mut raw = tls.connect().await;
        raw.write_all(b"GET /api HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(60), raw.read_to_end(&mut buf)).await;
        assert!(
            read.is_ok(),
            "a stalled request head is closed by the server"
        );
        closed = Some(read.is_ok());
        tokio::time::sleep(Duration::from_secs(5)).await;
        api.create(&PostParams::default(), &crate::util::configmap("late"))
            .await
            .unwrap();
        assert!(
            watch.await.unwrap(),
            "a watch over 32 s long still delivers"
        );
    }
    for l in lorises {
        l.abort();
    }
    eprintln!(
        "loris: {} idle TCP + {} idle TLS + 50 slow-loris connections held, 50 creates served{}",
        idle_tcp.len(),
        idle_tls.len(),
        if closed.is_some() {
            "; stalled heads closed by the server, long watch intact"
        } else {
            ""
        }
    );
}
