//! `--max-connection-bytes-per-sec`: the bytes of a piped upgrade (exec,
//! attach, port-forward, upgraded proxy connections) and of the WebSocket
//! translations (exec's streams, port-forward's tunnel) limited to a rate in
//! each direction, as upstream wraps both sides of a hijacked connection in
//! rate-limited readers and writers.
//!
//! Invariant: on average no direction moves more than `rate` bytes a second
//! since the pipe opened; a chunk is at most one second's worth, so a burst
//! never exceeds it.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// Pipe `a` and `b` both ways, each direction at most `rate` bytes a second,
/// until both directions have ended; a direction's end shuts the other
/// side's writer.
pub async fn copy_bidirectional<A, B>(a: A, b: B, rate: u64) -> std::io::Result<()>
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    tokio::try_join!(copy(ar, bw, rate), copy(br, aw, rate))?;
    Ok(())
}

/// Copy `r` into `w` at most `rate` bytes a second; the byte count.
pub async fn copy<R, W>(mut r: R, mut w: W, rate: u64) -> std::io::Result<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut limit = Limiter::new(rate.max(1));
    let mut buf = vec![0; rate.clamp(1, 32 * 1024) as usize];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            w.shutdown().await?;
            return Ok(limit.total);
        }
        w.write_all(&buf[..n]).await?;
        w.flush().await?;
        limit.pass(n).await;
    }
}

/// One direction's budget: `rate` bytes a second since it was made.
#[derive(Debug)]
pub struct Limiter {
    rate: u64,
    start: Instant,
    total: u64,
}

impl Limiter {
    pub fn new(rate: u64) -> Limiter {
        Limiter {
            rate: rate.max(1),
            start: Instant::now(),
            total: 0,
        }
    }

    /// A limiter for `rate`, none when it is 0 (unlimited).
    pub fn of(rate: u64) -> Option<Limiter> {
        (rate > 0).then(|| Limiter::new(rate))
    }

    /// Count `n` bytes that went through, waiting until the rate allows them.
    pub async fn pass(&mut self, n: usize) {
        self.total += n as u64;
        let due = self.start + Duration::from_secs_f64(self.total as f64 / self.rate as f64);
        tokio::time::sleep_until(due).await;
    }
}

/// [`Limiter::pass`] when there is a limiter.
pub async fn pass(limit: &mut Option<Limiter>, n: usize) {
    if let Some(l) = limit {
        l.pass(n).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_move_no_faster_than_the_rate_and_all_arrive() {
        let (mut client, near) = tokio::io::duplex(64 * 1024);
        let (far, mut backend) = tokio::io::duplex(64 * 1024);
        let pipe = tokio::spawn(copy_bidirectional(near, far, 20_000));
        let start = std::time::Instant::now();
        let sent = vec![7u8; 30_000];
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.unwrap();
            client.shutdown().await.unwrap();
            client
        });
        let mut got = Vec::new();
        backend.read_to_end(&mut got).await.unwrap();
        assert_eq!(got.len(), 30_000);
        // 30 kB at 20 kB/s: the last chunk waits for the first second to pass.
        assert!(start.elapsed() >= Duration::from_millis(990));
        // The other direction still works, then both end.
        backend.write_all(b"reply").await.unwrap();
        backend.shutdown().await.unwrap();
        let mut client = writer.await.unwrap();
        let mut reply = Vec::new();
        client.read_to_end(&mut reply).await.unwrap();
        assert_eq!(reply, b"reply");
        pipe.await.unwrap().unwrap();
    }
}
