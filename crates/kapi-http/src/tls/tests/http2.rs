//! HTTP/2 serving: frames sent in batches (`coalesce.rs`) and streams run
//! in the connection's task until they wait (`serve.rs`).

use super::*;

/// `n` bytes of `x`, streamed in 64 KiB chunks as the LIST fast path streams.
async fn bytes(axum::extract::Path(n): axum::extract::Path<usize>) -> axum::body::Body {
    let chunks = (0..n.div_ceil(64 * 1024)).map(move |i| {
        let len = (n - i * 64 * 1024).min(64 * 1024);
        Ok::<_, std::convert::Infallible>(bytes::Bytes::from(vec![b'x'; len]))
    });
    axum::body::Body::from_stream(futures::stream::iter(chunks))
}

/// Over HTTP/2 the server holds flushes back to batch DATA frames
/// (`coalesce.rs`); every response must still arrive whole and without
/// waiting for anything else to happen on the connection: the smallest, one
/// inside the held-back window, one just past it, and a long stream, one after
/// another and all at once.
#[tokio::test]
async fn http2_responses_arrive_whole_while_frames_are_batched() {
    use http_body_util::BodyExt as _;

    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let config = server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[]).unwrap();
    let app = Router::new().route("/bytes/{n}", get(bytes));
    let (addr, stop_tx, server) = start_tls(config, app).await;

    let sender = h2_sender(addr, &pki).await;
    let fetch = |n: usize| {
        let mut sender = sender.clone();
        async move {
            let req = http::Request::get(format!("https://localhost/bytes/{n}"))
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap();
            let resp = sender.send_request(req).await.unwrap();
            assert_eq!(resp.status(), 200);
            resp.into_body().collect().await.unwrap().to_bytes().len()
        }
    };
    let within = std::time::Duration::from_secs(10);
    let sizes = [
        0,
        10,
        coalesce::DEFER_FROM + 1,
        100_000,
        coalesce::FLUSH_AT + 1,
        5_000_000,
    ];
    for n in sizes {
        let got = tokio::time::timeout(within, fetch(n)).await;
        assert_eq!(got.expect("the response arrives without help"), n);
    }
    let all = futures::future::join_all(sizes.iter().map(|&n| fetch(n)));
    let got = tokio::time::timeout(within, all).await.expect("all arrive");
    assert_eq!(got, sizes);

    stop_tx.send(()).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), server).await;
}

/// HTTP/2 streams are polled once in the connection's task and spawned only
/// when they wait (`serve.rs`, `FirstPollInline`): on one connection, many
/// streams answered at once, streams that wait (for a timer, for another
/// stream's request) and a request whose body arrives well after its
/// headers all complete, and the ones that wait do not hold up the others.
#[tokio::test]
async fn http2_streams_that_wait_and_streams_that_do_not_share_a_connection() {
    use http_body_util::BodyExt as _;
    use std::sync::Arc;

    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = gate.clone();
    let app = Router::new()
        .route("/now", get(|| async { "now" }))
        .route(
            "/later",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                "later"
            }),
        )
        .route(
            "/gate",
            get(move || {
                let gate = gate.clone();
                async move {
                    gate.notified().await;
                    "opened"
                }
            }),
        )
        .route(
            "/open",
            get(move || async move {
                opened.notify_waiters();
                "opening"
            }),
        )
        .route(
            "/echo",
            axum::routing::post(|body: axum::body::Bytes| async move { body }),
        );
    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let config = server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[]).unwrap();
    let (addr, stop_tx, server) = start_tls(config, app).await;
    let sender = h2_sender(addr, &pki).await;
    let send = |req: http::Request<axum::body::Body>| {
        let mut sender = sender.clone();
        async move {
            let resp = sender.send_request(req).await.unwrap();
            assert_eq!(resp.status(), 200);
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8(body.to_vec()).unwrap()
        }
    };
    let get = |path: &str| {
        http::Request::get(format!("https://localhost{path}"))
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let within = std::time::Duration::from_secs(10);

    // A stream waiting on the gate; meanwhile others are answered, and one
    // of them opens it.
    let waiting = tokio::spawn(send(get("/gate")));
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mixed = futures::future::join_all(
        (0..40).map(|i| send(get(if i % 4 == 0 { "/later" } else { "/now" }))),
    );
    let got = tokio::time::timeout(within, mixed)
        .await
        .expect("all answered");
    for (i, body) in got.iter().enumerate() {
        assert_eq!(body, if i % 4 == 0 { "later" } else { "now" });
    }
    assert!(!waiting.is_finished());
    assert_eq!(send(get("/open")).await, "opening");
    let opened = tokio::time::timeout(within, waiting).await.expect("opened");
    assert_eq!(opened.unwrap(), "opened");

    // A body sent in pieces, the last well after the headers.
    let (mut tx, rx) = futures::channel::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(4);
    let body = axum::body::Body::from_stream(rx);
    let req = http::Request::post("https://localhost/echo")
        .body(body)
        .unwrap();
    let echoed = tokio::spawn(send(req));
    use futures::SinkExt as _;
    tx.send(Ok(bytes::Bytes::from_static(b"first ")))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    tx.send(Ok(bytes::Bytes::from_static(b"second")))
        .await
        .unwrap();
    drop(tx);
    let echoed = tokio::time::timeout(within, echoed).await.expect("echoed");
    assert_eq!(echoed.unwrap(), "first second");

    stop_tx.send(()).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), server).await;
}

/// A request answered without its body being read (a refusal before the
/// handler reads it, a 404) gets its whole answer, and the rest of its body
/// is read afterwards (`unread.rs`): a client still sending it is not reset
/// (curl 7.88 fails on that reset), one that never sends it is reset with
/// `NO_ERROR` once the wait is over, as Go's server ends such streams.
#[tokio::test]
async fn http2_answers_to_unread_requests_end_their_streams_cleanly() {
    use futures::FutureExt as _;

    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let config = server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[]).unwrap();
    let app = Router::new()
        .route(
            "/refuse",
            axum::routing::post(|| async { (axum::http::StatusCode::FORBIDDEN, "refused") }),
        )
        .fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "404 page not found") });
    let (addr, stop_tx, server) = start_tls(config, app).await;
    let tls = connect_h2(addr, &pki).await;
    let (client, conn) = h2::client::handshake(tls).await.unwrap();
    tokio::spawn(conn);
    for (path, code, sends_body) in [
        ("/refuse", 403, true),
        ("/nowhere", 404, true),
        ("/refuse", 403, false),
    ] {
        let mut client = client.clone().ready().await.unwrap();
        let req = http::Request::post(format!("https://localhost{path}"))
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        // Headers only: the body is still to come when the answer goes.
        let (resp, mut body_tx) = client.send_request(req, false).unwrap();
        let resp = resp.await.expect("an answer");
        assert_eq!(resp.status(), code, "{path}");
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while let Some(chunk) = body.data().await {
            got.extend_from_slice(&chunk.expect("the whole answer"));
        }
        assert!(!got.is_empty(), "{path}");
        if sends_body {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let reset = futures::future::poll_fn(|cx| body_tx.poll_reset(cx)).now_or_never();
            assert!(
                reset.is_none(),
                "{path}: reset while the client sends: {reset:?}"
            );
            body_tx
                .send_data(bytes::Bytes::from_static(b"{}"), true)
                .expect("the body is taken");
        } else {
            let reason = tokio::time::timeout(
                unread::DRAIN_FOR * 5,
                futures::future::poll_fn(|cx| body_tx.poll_reset(cx)),
            )
            .await
            .expect("reset once the wait is over")
            .unwrap();
            assert_eq!(reason, h2::Reason::NO_ERROR, "{path}");
        }
    }
    stop_tx.send(()).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), server).await;
}
