//! [`KeepUnread`]: an HTTP/2 request answered before its body was read gets
//! the rest of its body read (and dropped), instead of a reset.
//!
//! Why: kapi answers some requests before reading their bodies (a 401 or 403
//! from the filters, a 404 for an unknown path, a 429), often within the
//! same poll that read the request's headers, before the body's frames that
//! came with them were read. Dropping the body while the client may still be
//! sending makes the HTTP/2 library end the stream with `RST_STREAM` once the
//! answer is out (RFC 9113 §8.1, as Go's server does when a client is still
//! sending after the answer). Go's server answers such requests later, when
//! the body has usually arrived, so its clients rarely see that reset; curl
//! 7.88 (Debian 12's) fails on it with "Stream error in the HTTP/2 framing
//! layer" and no answer, for about half of such POSTs to kapi.
//!
//! What: an HTTP/2 request's body is wrapped ([`Unread`]); dropped before its
//! end, it is read to its end on a task of its own — at most [`DRAIN_BYTES`]
//! within [`DRAIN_FOR`], then dropped (the stream is reset as before). While
//! that task holds the body, the stream is not reset when the answer ends.
//! A body read to its end (every write's) costs one check on drop.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::Request;
use tower::Service;

/// How much of an unread body is read after the answer before the stream is
/// reset instead.
pub const DRAIN_BYTES: usize = 256 * 1024;
/// How long an unread body is waited for.
pub const DRAIN_FOR: Duration = Duration::from_secs(1);

/// A service taking the request body types hyper gives: the inner service
/// sees [`Unread`] bodies.
#[derive(Clone)]
pub struct KeepUnread<S>(pub S);

impl<S: Service<Request<Unread>>> Service<Request<Incoming>> for KeepUnread<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        let drain = req.version() == hyper::Version::HTTP_2;
        self.0.call(req.map(|body| Unread {
            body: Some(body),
            drain,
        }))
    }
}

/// A request body that, dropped before its end over HTTP/2, is read to its
/// end on a task of its own.
pub struct Unread {
    body: Option<Incoming>,
    drain: bool,
}

impl Drop for Unread {
    fn drop(&mut self) {
        match self.body.take() {
            Some(body) if self.drain && !body.is_end_stream() => {
                // Outside a runtime (never while serving) it is just dropped.
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(drain(body));
                }
            }
            _ => {}
        }
    }
}

/// Read `body` to its end, within [`DRAIN_BYTES`] and [`DRAIN_FOR`].
async fn drain(mut body: Incoming) {
    use http_body_util::BodyExt as _;
    let read = async {
        let mut seen = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, Bytes::len);
            if seen > DRAIN_BYTES {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_FOR, read).await;
}

impl HttpBody for Unread {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}
