//! `/containerLogs/<ns>/<pod>/<container>`: five numbered lines stamped a
//! second apart from 2024-01-01T00:00:00Z, shaped by the options as a
//! kubelet would (`tailLines`, `limitBytes`, `timestamps`, `sinceTime`,
//! `previous`); `follow` adds a line every 50 ms, at most 40. Containers
//! named `hang` never answer, `cut` stops mid-stream without ending the
//! body properly, `missing` is a 404, and `flood` writes 64 KiB chunks as
//! fast as they are taken, without end ([`FLOODS_OPEN`] and
//! [`FLOOD_BYTES`] say how many such streams are open and what they wrote).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

use super::{query, text, Body};

/// `flood` log streams open now (a stream is closed when its reader lets go).
pub static FLOODS_OPEN: AtomicUsize = AtomicUsize::new(0);

/// Bytes all `flood` streams have handed to their readers.
pub static FLOOD_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Counts one open `flood` stream while it lives.
struct Open;

impl Open {
    fn new() -> Open {
        FLOODS_OPEN.fetch_add(1, Ordering::SeqCst);
        Open
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        FLOODS_OPEN.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An endless log: 64 KiB chunks, each produced when the last was taken.
fn flood() -> Response<Body> {
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let open = Open::new();
    let stream = futures::stream::unfold(open, move |open| {
        let chunk = chunk.clone();
        async move {
            FLOOD_BYTES.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((Ok::<_, std::io::Error>(Frame::data(chunk)), open))
        }
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, "text/plain".parse().unwrap());
    r
}

pub async fn serve(req: &Request<Incoming>, container: &str) -> Response<Body> {
    let q = query(req);
    let get = |k: &str| {
        q.iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    };
    match container {
        "hang" => std::future::pending().await,
        "missing" => return text(StatusCode::NOT_FOUND, "container not found (\"missing\")"),
        "flood" => return flood(),
        _ => {}
    }
    let prefix = if get("previous") == Some("true") {
        "previous "
    } else {
        ""
    };
    let stamps = get("timestamps") == Some("true");
    let cut = container == "cut";
    let container = container.to_owned();
    let line = std::sync::Arc::new(move |i: usize| {
        let ts = format!("2024-01-01T00:00:{i:02}Z");
        let body = format!("{prefix}{container} line {i}\n");
        if stamps {
            format!("{ts} {body}")
        } else {
            body
        }
    });
    let mut first: Vec<usize> = (1..=5).collect();
    if let Some(since) = get("sinceTime") {
        first.retain(|i| format!("2024-01-01T00:00:{i:02}Z").as_str() >= since);
    }
    if let Some(n) = get("tailLines").and_then(|n| n.parse::<usize>().ok()) {
        let skip = first.len().saturating_sub(n);
        first.drain(..skip);
    }
    let mut text_now: String = first.into_iter().map(|i| line(i)).collect();
    let limit = get("limitBytes").and_then(|n| n.parse::<usize>().ok());
    if let Some(l) = limit {
        text_now.truncate(l);
    }
    let follow = get("follow") == Some("true") && limit.is_none();
    let line2 = line.clone();
    let head = futures::stream::once(async move {
        Ok::<_, std::io::Error>(Frame::data(Bytes::from(text_now)))
    });
    let more = futures::stream::unfold(6usize, move |i| {
        let line2 = line2.clone();
        async move {
            if !follow && !cut || i > 45 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            if cut && i > 6 {
                return Some((Err(std::io::Error::other("kubelet went away")), 99));
            }
            Some((Ok(Frame::data(Bytes::from(line2(i)))), i + 1))
        }
    });
    let body = BodyExt::boxed(StreamBody::new(head.chain(more)));
    let mut r = Response::new(body);
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, "text/plain".parse().unwrap());
    r
}
