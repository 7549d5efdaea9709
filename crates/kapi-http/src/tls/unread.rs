//! [`KeepUnread`]: an HTTP/2 request answered before its body was read gets
//! the rest of its body read (and dropped) after the answer, instead of a reset.
//!
//! Why: kapi answers some requests before reading their bodies (a 401 or 403
//! from the filters, a 404 for an unknown path, a 429), often within the
//! same poll that read the request's headers, before the body's frames that
//! came with them were read. The HTTP/2 library then ends the stream with
//! `RST_STREAM(NO_ERROR)` (RFC 9113 §8.1, as Go's server does when a client
//! is still sending after the answer). Go's server answers such requests
//! later, when the body has usually arrived, so its clients rarely see that
//! reset; curl 7.88 (Debian 12's) fails on it with "Stream error in the
//! HTTP/2 framing layer" and no answer, for about half of such POSTs to kapi.
//!
//! What: for an HTTP/2 request with a body still to come, the body is wrapped
//! ([`Unread`]) so that dropping it unfinished parks it in a slot the answer's
//! body ([`Held`]) keeps; once the answer is sent, the parked body is read to
//! its end on a task of its own — at most [`DRAIN_BYTES`] within
//! [`DRAIN_FOR`], then dropped (the stream is reset as before). Requests
//! without a body (GETs) and HTTP/1.1 pass unchanged.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::future::{Either, MapOk};
use futures::TryFutureExt as _;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::Request;
use tower::Service;

/// How much of an unread body is read after the answer before the stream is
/// reset instead.
pub const DRAIN_BYTES: usize = 256 * 1024;
/// How long an unread body is waited for after the answer.
pub const DRAIN_FOR: Duration = Duration::from_secs(1);

/// Where an unread request body waits for its answer to be sent.
type Slot = Arc<Mutex<Option<Incoming>>>;

/// A service taking the request body types hyper gives: the inner service
/// sees [`Unread`] bodies.
#[derive(Clone)]
pub struct KeepUnread<S>(pub S);

impl<S> Service<Request<Incoming>> for KeepUnread<S>
where
    S: Service<Request<Unread>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, MapOk<S::Future, Box<dyn FnOnce(Response) -> Response + Send>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        let keep = req.version() == hyper::Version::HTTP_2 && !req.body().is_end_stream();
        if !keep {
            return Either::Left(self.0.call(req.map(|body| Unread {
                body: Some(body),
                slot: None,
            })));
        }
        let slot: Slot = Arc::default();
        let parked = slot.clone();
        let req = req.map(|body| Unread {
            body: Some(body),
            slot: Some(parked),
        });
        let hold: Box<dyn FnOnce(Response) -> Response + Send> = Box::new(move |resp: Response| {
            resp.map(|inner| Body::new(Held { inner, _slot: slot }))
        });
        Either::Right(self.0.call(req).map_ok(hold))
    }
}

/// A request body that, dropped before its end, parks itself in its slot.
pub struct Unread {
    body: Option<Incoming>,
    slot: Option<Slot>,
}

impl Drop for Unread {
    fn drop(&mut self) {
        if let (Some(slot), Some(body)) = (&self.slot, self.body.take()) {
            if !body.is_end_stream() {
                if let Ok(mut parked) = slot.lock() {
                    *parked = Some(body);
                }
            }
        }
    }
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

/// An answer's body keeping the slot of its request's unread body.
struct Held {
    inner: Body,
    _slot: Slot,
}

impl Drop for Held {
    fn drop(&mut self) {
        let parked = self._slot.lock().ok().and_then(|mut p| p.take());
        if let Some(body) = parked {
            tokio::spawn(drain(body));
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

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
