//! Graceful termination on SIGTERM, on the real binary
//! (`--shutdown-delay-duration`, `--shutdown-watch-termination-grace-period`,
//! `--shutdown-send-retry-after`): `/readyz` fails first, a LIST in flight is
//! answered in full, an open watch ends as a finished stream, the process
//! exits 0, and every write that was answered 201 is there after a restart.
//!
//! The LIST is kept in flight by not reading it: HTTP/2 flow control stops the
//! server once the client's window is full.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use serde_json::{json, Value};

use crate::https::Setup;

type H2 = SendRequest<Bytes>;

/// Send a request; the response head and its body stream.
async fn start(
    h2: &mut H2,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<http::Response<h2::RecvStream>, h2::Error> {
    *h2 = h2.clone().ready().await?;
    let mut req = http::Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"));
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let (resp, mut send) = h2.send_request(req.body(()).unwrap(), body.is_none())?;
    if let Some(b) = body {
        send.send_data(Bytes::from(b.to_string()), true)?;
    }
    resp.await
}

/// Read a body to its end, releasing flow control as it goes.
async fn read_all(mut body: h2::RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

async fn call(h2: &mut H2, method: &str, path: &str, body: Option<Value>) -> (u16, Vec<u8>) {
    let resp = start(h2, method, path, body).await.expect("request");
    let code = resp.status().as_u16();
    (code, read_all(resp.into_body()).await.expect("body"))
}

fn configmap(name: &str, size: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
           "data": {"blob": "x".repeat(size)}})
}

async fn namespace(h2: &mut H2, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    assert_eq!(
        call(h2, "POST", "/api/v1/namespaces", Some(ns)).await.0,
        201
    );
}

/// `n` configmaps of 32 KiB in namespace `big`.
async fn fill(h2: &mut H2, n: usize) {
    namespace(h2, "big").await;
    for i in 0..n {
        let cm = configmap(&format!("big-{i}"), 32 * 1024);
        let path = "/api/v1/namespaces/big/configmaps";
        assert_eq!(call(h2, "POST", path, Some(cm)).await.0, 201);
    }
}

/// The `big-*` items of a LIST (the root CA publisher adds its own).
fn big_items(list: &Value) -> usize {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| {
            i["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("big-"))
        })
        .count()
}

/// Create configmaps `w-0`, `w-1`, … in `ns` until the server stops
/// answering; the names answered 201.
async fn write_until_refused(mut h2: H2, ns: String) -> Vec<String> {
    let mut acked = Vec::new();
    for i in 0.. {
        let name = format!("w-{i}");
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let Ok(resp) = start(&mut h2, "POST", &path, Some(configmap(&name, 16))).await else {
            break;
        };
        let code = resp.status().as_u16();
        if read_all(resp.into_body()).await.is_err() || code != 201 {
            break;
        }
        acked.push(name);
    }
    acked
}

async fn readyz_fails(h2: &mut H2) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = call(h2, "GET", "/readyz?verbose", None).await;
        let text = String::from_utf8_lossy(&body).into_owned();
        if code == 500 {
            return text;
        }
        assert!(Instant::now() < deadline, "/readyz never failed: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_a_long_list_ends_watches_and_loses_nothing() {
    let mut s = Setup::start(&[
        "--shutdown-delay-duration=2s".into(),
        "--shutdown-watch-termination-grace-period=10s".into(),
    ]);
    let mut h2 = s.h2().await;
    namespace(&mut h2, "watched").await;
    fill(&mut h2, 200).await;
    // A watch, and a 6 MB LIST of which only the first window is read.
    let mut watch_conn = s.h2().await;
    let watch = start(
        &mut watch_conn,
        "GET",
        "/api/v1/namespaces/watched/configmaps?watch=1",
        None,
    )
    .await
    .expect("watch");
    assert_eq!(watch.status(), 200);
    let watch_events = tokio::spawn(read_all(watch.into_body()));
    let mut list_conn = s.h2().await;
    let list = start(
        &mut list_conn,
        "GET",
        "/api/v1/namespaces/big/configmaps",
        None,
    )
    .await
    .expect("list");
    assert_eq!(list.status(), 200);
    let mut list_body = list.into_body();
    let first = list_body
        .data()
        .await
        .expect("a first chunk")
        .expect("bytes");

    let writer = tokio::spawn(write_until_refused(s.h2().await, "watched".into()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.server.terminate();
    let text = readyz_fails(&mut h2).await;
    assert!(
        text.contains("[-]shutdown failed: reason withheld"),
        "{text}"
    );

    // The watch ends cleanly, the writer is refused, the LIST completes.
    let events = watch_events
        .await
        .unwrap()
        .expect("the watch ends without a reset");
    let acked = writer.await.unwrap();
    assert!(!acked.is_empty());
    let _ = list_body.flow_control().release_capacity(first.len());
    let mut list = first.to_vec();
    list.extend(
        read_all(list_body)
            .await
            .expect("the LIST is answered in full"),
    );
    let list: Value = serde_json::from_slice(&list).expect("a whole JSON list");
    assert_eq!(big_items(&list), 200);
    let events = String::from_utf8_lossy(&events).into_owned();
    assert!(events.contains("\"w-0\""), "the watch saw the writes");
    assert_eq!(s.server.wait_exit(Duration::from_secs(120)), Some(0));

    // Restarted on the same data: every answered write is there.
    let Setup { server, dir, .. } = s;
    drop(server);
    let again = Setup::restart(dir, &[]);
    let mut h2 = again.h2().await;
    let (code, body) = call(
        &mut h2,
        "GET",
        "/api/v1/namespaces/watched/configmaps",
        None,
    )
    .await;
    assert_eq!(code, 200);
    let stored: Value = serde_json::from_slice(&body).unwrap();
    let names: Vec<&str> = stored["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    for name in &acked {
        assert!(
            names.contains(&name.as_str()),
            "{name} was acknowledged and lost"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_send_retry_after_answers_429_while_draining() {
    let mut s = Setup::start(&["--shutdown-send-retry-after".into()]);
    let mut h2 = s.h2().await;
    fill(&mut h2, 100).await;
    let mut list_conn = s.h2().await;
    let list = start(
        &mut list_conn,
        "GET",
        "/api/v1/namespaces/big/configmaps",
        None,
    )
    .await
    .expect("list");
    let mut list_body = list.into_body();
    let first = list_body
        .data()
        .await
        .expect("a first chunk")
        .expect("bytes");
    s.server.terminate();
    // The listener stays open while the LIST is in flight; new requests on
    // new connections are told to come back.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (code, retry) = loop {
        let mut fresh = s.h2().await;
        let resp = start(&mut fresh, "GET", "/api/v1/namespaces", None)
            .await
            .expect("the listener is open");
        let code = resp.status().as_u16();
        let retry = resp.headers().get("retry-after").cloned();
        if code == 429 || Instant::now() > deadline {
            break (code, retry);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(code, 429);
    assert_eq!(retry.unwrap(), "5");
    let _ = list_body.flow_control().release_capacity(first.len());
    let mut list = first.to_vec();
    list.extend(read_all(list_body).await.expect("the LIST completes"));
    let list: Value = serde_json::from_slice(&list).expect("whole JSON");
    assert_eq!(big_items(&list), 100);
    assert_eq!(s.server.wait_exit(Duration::from_secs(120)), Some(0));
}
