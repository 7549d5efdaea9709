//! Request bodies: upstream's 3 MiB limit and reading a body under it.
//!
//! A body over the limit is refused with 413 only after the rest of it has
//! been read (up to [`DRAIN_LIMIT`], for at most [`DRAIN_TIME`]) and dropped:
//! on HTTP/2 a stream whose request is still arriving is reset once the
//! response is written, and the reset discards the response frames still
//! queued, so without the drain the client would see a reset stream and no
//! `Status` (HTTP/1.1 closes the connection after the answer instead).

use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use kapi_machinery::status::ApiError;

/// Request bodies above this are refused with 413, as upstream's 3 MiB limit.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// How much of an oversized body is read and dropped before the 413.
pub const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// How long an oversized body is read before the 413 goes out regardless.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

fn too_large() -> ApiError {
    ApiError::request_entity_too_large(format!("limit is {MAX_BODY}"))
}

/// The whole body, or 413 when it is larger than [`MAX_BODY`].
pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut buf = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        // A body that cannot be read (the client went away) is answered as
        // one over the limit, as before; nobody is there to read it.
        let chunk = chunk.map_err(|_| too_large())?;
        if buf.len() + chunk.len() > MAX_BODY {
            let mut seen = buf.len() + chunk.len();
            let drain = async {
                while let Some(Ok(c)) = stream.next().await {
                    seen += c.len();
                    if seen > DRAIN_LIMIT {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_up_to_the_limit_are_read_whole() {
        let exact = vec![b'x'; MAX_BODY];
        let read = read_body(Body::from(exact.clone())).await.unwrap();
        assert_eq!(read.len(), MAX_BODY);
        let chunks = futures::stream::iter(
            (0..4).map(|i| Ok::<_, std::io::Error>(Bytes::from(vec![i as u8; 1000]))),
        );
        let read = read_body(Body::from_stream(chunks)).await.unwrap();
        assert_eq!(read.len(), 4000);
        assert_eq!(read[3999], 3);
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_after_it_is_read() {
        let chunk = Bytes::from(vec![b'y'; 1024 * 1024]);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let sender = tokio::spawn(async move {
            let mut sent = 0;
            for _ in 0..8 {
                if tx.send(Ok(chunk.clone())).await.is_err() {
                    break;
                }
                sent += 1;
            }
            sent
        });
        let stream = tokio_stream_from(rx);
        let err = read_body(Body::from_stream(stream)).await.unwrap_err();
        assert_eq!(err.code, 413);
        assert_eq!(err.message, "Request entity too large: limit is 3145728");
        assert_eq!(sender.await.unwrap(), 8, "the whole body was read");
    }

    fn tokio_stream_from(
        mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
