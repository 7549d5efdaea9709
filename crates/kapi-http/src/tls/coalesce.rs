//! [`Coalesced`]: a TLS stream whose HTTP/2 writes reach the socket in large
//! batches instead of one `writev` per DATA frame, and whose writes start
//! records where rustls copies their large buffers fast ([`super::records`]).
//!
//! Why: the h2 codec flushes its transport after every frame it writes, and a
//! DATA frame is at most the peer's `SETTINGS_MAX_FRAME_SIZE` (16 KiB for Go,
//! curl and most clients). Through `tokio-rustls` each flush is a system call,
//! so a LIST of 450 MB took about 29,000 `writev`s over HTTP/2 against about 900
//! over HTTP/1.1, and each one on loopback also wakes the reader.
//!
//! What: plaintext goes straight into rustls (encrypted into its send queue,
//! which [`super::serve::TLS_SEND_BUFFER`] bounds). A flush with at least
//! [`DEFER_FROM`] and less than [`FLUSH_AT`] bytes written since the last one is
//! deferred: the task is woken and the flush reported done, and the bytes go out
//! on the task's next poll, which always reads the connection first (h2 polls
//! its transport for frames every time it runs), or on the next flush that
//! finds [`FLUSH_AT`] bytes. Small writes (a GET's response, a watch event,
//! control frames) are flushed at once, so nothing small waits.
//!
//! Invariant: bytes are held back only on a connection that negotiated HTTP/2
//! (ALPN `h2`), whose one driver (h2's connection task) polls the read side on
//! every poll; an HTTP/1.1 connection may be handed to an upgraded stream's task
//! that would not, so it passes every call straight through.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::records;

/// Unflushed bytes below this are flushed at once: a frame smaller than the
/// largest DATA frame means the writer has nothing more queued behind it.
pub const DEFER_FROM: usize = 16 * 1024;
/// A flush that finds this many unflushed bytes goes to the socket.
pub const FLUSH_AT: usize = 256 * 1024;
/// The most buffers one write is split over (hyper's own limit per `writev`);
/// a write of more goes as it is.
const MAX_BUFS: usize = 64;

pub struct Coalesced {
    inner: TlsStream<TcpStream>,
    /// Hold flushes back at all (HTTP/2 only).
    defer: bool,
    /// Plaintext bytes written since the last flush that reached the socket.
    unflushed: usize,
    /// A flush was reported done while bytes stayed in rustls's queue.
    deferred: bool,
}

impl Coalesced {
    pub fn new(inner: TlsStream<TcpStream>) -> Self {
        let defer = inner.get_ref().1.alpn_protocol() == Some(b"h2");
        Coalesced {
            inner,
            defer,
            unflushed: 0,
            deferred: false,
        }
    }

    /// Send everything queued to the socket.
    fn flush_now(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = res {
            self.unflushed = 0;
            self.deferred = false;
        }
        res
    }

    /// A write handed on whole: to rustls and the socket over HTTP/1.1, into
    /// rustls's queue over HTTP/2.
    fn write_as_is(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if !self.defer {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        let len = bufs.iter().map(|b| b.len()).sum();
        self.queue(cx, len, |conn| {
            io::Write::write_vectored(&mut conn.writer(), bufs)
        })
    }

    /// Encrypt `write`'s bytes into rustls's queue without touching the socket,
    /// sending the queue first when it is full.
    fn queue(
        &mut self,
        cx: &mut Context<'_>,
        len: usize,
        mut write: impl FnMut(&mut rustls::ServerConnection) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        if len == 0 {
            return Poll::Ready(Ok(0));
        }
        loop {
            let n = write(self.inner.get_mut().1)?;
            if n > 0 {
                self.unflushed += n;
                return Poll::Ready(Ok(n));
            }
            // rustls took nothing: its queue is at the limit.
            std::task::ready!(self.flush_now(cx))?;
        }
    }
}

impl AsyncRead for Coalesced {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.deferred {
            // Pending means the socket is full and the task is registered to
            // run when it drains; the read below goes on meanwhile.
            if let Poll::Ready(Err(err)) = this.flush_now(cx) {
                return Poll::Ready(Err(err));
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Coalesced {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    /// The write in pieces that start records where its large buffers are
    /// copied fast ([`records`]): every piece but the last queued into rustls
    /// directly, the last one written as any write is.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if bufs.len() > MAX_BUFS {
            return this.write_as_is(cx, bufs);
        }
        let (starts, n) = records::record_starts(bufs);
        if n == 0 {
            return this.write_as_is(cx, bufs);
        }
        let mut pieces = [io::IoSlice::new(&[]); MAX_BUFS];
        let mut done = 0;
        for &at in &starts[..n] {
            let k = records::between(bufs, done, at, &mut pieces);
            let queued =
                io::Write::write_vectored(&mut this.inner.get_mut().1.writer(), &pieces[..k]);
            let took = match queued {
                Ok(took) => took,
                Err(err) if done == 0 => return Poll::Ready(Err(err)),
                // What was queued counts; the error comes again on the next write.
                Err(_) => return Poll::Ready(Ok(done)),
            };
            this.unflushed += took;
            if took < at - done {
                // rustls's queue is full: report what it took, or, when that
                // is nothing, write this piece the usual way (which flushes).
                return match done + took {
                    0 => this.write_as_is(cx, &pieces[..k]),
                    sent => Poll::Ready(Ok(sent)),
                };
            }
            done = at;
        }
        let total = bufs.iter().map(|b| b.len()).sum();
        let k = records::between(bufs, done, total, &mut pieces);
        match this.write_as_is(cx, &pieces[..k]) {
            Poll::Ready(Ok(rest)) => Poll::Ready(Ok(done + rest)),
            // What was queued counts; the rest is asked for again.
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Ready(Ok(done)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.defer && (DEFER_FROM..FLUSH_AT).contains(&this.unflushed) {
            this.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        this.flush_now(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.flush_now(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}
