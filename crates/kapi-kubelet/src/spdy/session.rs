//! A SPDY/3.1 session over one upgraded connection, for either end: the
//! stream translator opens streams to a kubelet with it, the tests' fake
//! kubelet accepts them.
//!
//! One reader task parses frames and hands each stream's data to it; one
//! writer task owns the write half and the compression stream, so frames leave
//! in the order they were queued. Streams are handles on those tasks.
//!
//! Invariants: data for a stream waits in a small bounded queue, so a stream
//! nobody reads holds up the connection rather than growing memory; when the
//! connection ends (EOF, a frame error, GOAWAY) every stream's queue closes and
//! [`Stream::recv`] returns `None`. Flow control is not enforced, as Go's
//! `spdystream` (the kubelet's and kubectl's implementation) does not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::frame::{self, Frame};
use super::headers::{HeaderCodec, Headers};

/// How long an opened stream waits for the peer's SYN_REPLY.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Data frames are cut at this size.
const CHUNK: usize = 32 * 1024;
const QUEUE: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the SPDY connection is closed")]
    Closed,
    #[error("timed out waiting for the reply to stream {0}")]
    ReplyTimeout(u32),
    #[error("stream {0} was reset by the peer")]
    Reset(u32),
}

struct Slot {
    data: Option<mpsc::Sender<Bytes>>,
    reply: Option<oneshot::Sender<Result<Headers, SessionError>>>,
}

#[derive(Default)]
struct State {
    streams: HashMap<u32, Slot>,
    closed: bool,
}

/// A handle on a running session; clones share it.
#[derive(Clone)]
pub struct Session {
    out: mpsc::Sender<Frame>,
    state: Arc<Mutex<State>>,
    next_id: Arc<AtomicU32>,
    done: watch::Receiver<bool>,
}

/// One stream: the headers it was opened with, and its two directions.
pub struct Stream {
    pub id: u32,
    pub headers: Headers,
    data: mpsc::Receiver<Bytes>,
    out: mpsc::Sender<Frame>,
}

impl Session {
    /// Run a session over `io`. `server` picks the stream-id parity (clients
    /// open odd streams). Streams the peer opens arrive on the returned receiver.
    pub fn start<IO>(io: IO, server: bool) -> (Session, mpsc::Receiver<Stream>)
    where
        IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let (rd, wr) = tokio::io::split(io);
        let (out_tx, out_rx) = mpsc::channel(64);
        let (accept_tx, accept_rx) = mpsc::channel(16);
        let (done_tx, done_rx) = watch::channel(false);
        let session = Session {
            out: out_tx,
            state: Arc::default(),
            next_id: Arc::new(AtomicU32::new(if server { 2 } else { 1 })),
            done: done_rx,
        };
        tokio::spawn(write_loop(wr, out_rx));
        let reader = session.clone();
        tokio::spawn(async move {
            reader.read_loop(rd, accept_tx).await;
            reader.close_all();
            let _ = done_tx.send(true);
        });
        (session, accept_rx)
    }

    /// Open a stream with `headers` and wait for the peer's reply.
    pub async fn open(&self, headers: Headers) -> Result<Stream, SessionError> {
        let id = self.next_id.fetch_add(2, Ordering::Relaxed);
        let (data_tx, data_rx) = mpsc::channel(QUEUE);
        let (reply_tx, reply_rx) = oneshot::channel();
        {
            let mut st = self.state.lock().expect("spdy state");
            if st.closed {
                return Err(SessionError::Closed);
            }
            let slot = Slot {
                data: Some(data_tx),
                reply: Some(reply_tx),
            };
            st.streams.insert(id, slot);
        }
        let syn = Frame::SynStream {
            stream: id,
            associated: 0,
            priority: 0,
            fin: false,
            unidirectional: false,
            headers: headers.clone(),
        };
        self.out.send(syn).await.map_err(|_| SessionError::Closed)?;
        match tokio::time::timeout(REPLY_TIMEOUT, reply_rx).await {
            Ok(Ok(Ok(_))) => Ok(Stream {
                id,
                headers,
                data: data_rx,
                out: self.out.clone(),
            }),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(SessionError::Closed),
            Err(_) => Err(SessionError::ReplyTimeout(id)),
        }
    }

    /// Resolves once the connection has ended.
    pub async fn closed(&self) {
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Say GOAWAY and close the write side.
    pub async fn shutdown(&self) {
        let _ = self
            .out
            .send(Frame::GoAway {
                last_good: 0,
                status: 0,
            })
            .await;
        let _ = self.out.send(Frame::Unknown(0)).await;
    }

    fn close_all(&self) {
        let mut st = self.state.lock().expect("spdy state");
        st.closed = true;
        for (_, slot) in st.streams.drain() {
            if let Some(r) = slot.reply {
                let _ = r.send(Err(SessionError::Closed));
            }
        }
    }

    async fn read_loop<R: AsyncRead + Unpin>(&self, mut rd: R, accept: mpsc::Sender<Stream>) {
        let mut codec = HeaderCodec::new();
        let mut buf = BytesMut::with_capacity(16 * 1024);
        loop {
            let frame = match frame::parse(&mut buf, &mut codec) {
                Ok(Some(f)) => f,
                Ok(None) => match rd.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => continue,
                },
                Err(e) => {
                    tracing::debug!(error = %e, "spdy: bad frame");
                    return;
                }
            };
            if !self.on_frame(frame, &accept).await {
                return;
            }
        }
    }

    /// Act on one frame; false ends the session.
    async fn on_frame(&self, frame: Frame, accept: &mpsc::Sender<Stream>) -> bool {
        match frame {
            Frame::Data { stream, fin, data } => self.deliver(stream, data, fin).await,
            Frame::SynStream {
                stream,
                fin,
                headers,
                ..
            } => {
                let (tx, rx) = mpsc::channel(QUEUE);
                let slot = Slot {
                    data: (!fin).then_some(tx),
                    reply: None,
                };
                self.state
                    .lock()
                    .expect("spdy state")
                    .streams
                    .insert(stream, slot);
                let s = Stream {
                    id: stream,
                    headers,
                    data: rx,
                    out: self.out.clone(),
                };
                if accept.send(s).await.is_err() {
                    let _ = self
                        .out
                        .send(Frame::RstStream {
                            stream,
                            status: frame::RST_CANCEL,
                        })
                        .await;
                }
            }
            Frame::SynReply {
                stream,
                fin,
                headers,
            } => {
                let reply = self.slot(stream, |s| s.reply.take()).flatten();
                if let Some(r) = reply {
                    let _ = r.send(Ok(headers));
                }
                if fin {
                    self.slot(stream, |s| s.data = None);
                }
            }
            Frame::Headers {
                stream, fin: true, ..
            } => self.deliver(stream, Bytes::new(), true).await,
            Frame::RstStream { stream, .. } => {
                let slot = self
                    .state
                    .lock()
                    .expect("spdy state")
                    .streams
                    .remove(&stream);
                if let Some(Slot { reply: Some(r), .. }) = slot {
                    let _ = r.send(Err(SessionError::Reset(stream)));
                }
            }
            Frame::Ping(id) => {
                let _ = self.out.send(Frame::Ping(id)).await;
            }
            Frame::GoAway { .. } => return false,
            _ => {}
        }
        true
    }

    fn slot<T>(&self, id: u32, f: impl FnOnce(&mut Slot) -> T) -> Option<T> {
        self.state
            .lock()
            .expect("spdy state")
            .streams
            .get_mut(&id)
            .map(f)
    }

    async fn deliver(&self, stream: u32, data: Bytes, fin: bool) {
        let tx = self
            .slot(stream, |s| if fin { s.data.take() } else { s.data.clone() })
            .flatten();
        if let (Some(tx), false) = (tx, data.is_empty()) {
            let _ = tx.send(data).await;
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut wr: W, mut frames: mpsc::Receiver<Frame>) {
    let mut codec = HeaderCodec::new();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    while let Some(f) = frames.recv().await {
        if matches!(f, Frame::Unknown(_)) {
            break;
        }
        if let Err(e) = frame::write(&f, &mut buf, &mut codec) {
            tracing::debug!(error = %e, "spdy: cannot write frame");
            break;
        }
        // Batch whatever else is already queued into the same write.
        while let Ok(more) = frames.try_recv() {
            if matches!(more, Frame::Unknown(_))
                || frame::write(&more, &mut buf, &mut codec).is_err()
            {
                let _ = wr.write_all(&buf).await;
                let _ = wr.shutdown().await;
                return;
            }
        }
        if wr.write_all(&buf).await.is_err() || wr.flush().await.is_err() {
            break;
        }
        buf.clear();
    }
    let _ = wr.shutdown().await;
}

impl Stream {
    /// The next chunk of data; `None` once the peer finished or the session ended.
    pub async fn recv(&mut self) -> Option<Bytes> {
        self.data.recv().await
    }

    /// Accept a stream the peer opened.
    pub async fn reply(&self) -> Result<(), SessionError> {
        let f = Frame::SynReply {
            stream: self.id,
            fin: false,
            headers: Vec::new(),
        };
        self.out.send(f).await.map_err(|_| SessionError::Closed)
    }

    pub async fn send(&self, data: Bytes) -> Result<(), SessionError> {
        self.writer().send(data).await
    }

    /// Half-close: no more data from this end.
    pub async fn finish(&self) -> Result<(), SessionError> {
        self.writer().finish().await
    }

    /// A sender for this stream's outgoing direction, usable from another task.
    pub fn writer(&self) -> StreamWriter {
        StreamWriter {
            id: self.id,
            out: self.out.clone(),
        }
    }
}

/// The outgoing half of a stream.
#[derive(Clone)]
pub struct StreamWriter {
    id: u32,
    out: mpsc::Sender<Frame>,
}

impl StreamWriter {
    pub async fn send(&self, mut data: Bytes) -> Result<(), SessionError> {
        while !data.is_empty() {
            let chunk = data.split_to(data.len().min(CHUNK));
            let f = Frame::Data {
                stream: self.id,
                fin: false,
                data: chunk,
            };
            self.out.send(f).await.map_err(|_| SessionError::Closed)?;
        }
        Ok(())
    }

    pub async fn finish(&self) -> Result<(), SessionError> {
        let f = Frame::Data {
            stream: self.id,
            fin: true,
            data: Bytes::new(),
        };
        self.out.send(f).await.map_err(|_| SessionError::Closed)
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
