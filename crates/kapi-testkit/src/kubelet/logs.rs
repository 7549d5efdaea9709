//! `/containerLogs/<ns>/<pod>/<container>`: five numbered lines stamped a
//! second apart from 2024-01-01T00:00:00Z, shaped by the options as a
//! kubelet would (`tailLines`, `limitBytes`, `timestamps`, `sinceTime`,
//! `previous`); `follow` adds a line every 50 ms, at most 40. Containers
//! named `hang` never answer, `cut` stops mid-stream without ending the
//! body properly, `missing` is a 404.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

use super::{query, text, Body};

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
