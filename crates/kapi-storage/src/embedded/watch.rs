//! Watches on the embedded store: one task per watch replays history from the
//! start revision (the index's in-memory log, or before it the WAL, read by
//! revision off the index's lock), then follows the live broadcast. A watcher
//! that falls behind the broadcast (a slow consumer) is not dropped: it re-reads
//! what it missed from history, and only fails if that was compacted away
//! meanwhile.
//! `last` is the highest revision the watcher has accounted for (delivered, or
//! skipped as outside its prefix); it only grows, so nothing is sent twice.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::reads::{disk_error, CatchUp, EventRef};
use super::Shared;
use crate::backend::{Event, Result, Revision, WatchMessage, WatchStream};

const CATCH_UP_CHUNK: usize = 1024;

struct Watcher {
    shared: Arc<Shared>,
    prefix: String,
    last: Revision,
    tx: mpsc::Sender<Result<WatchMessage>>,
}

pub(crate) fn start(shared: Arc<Shared>, prefix: String, after: Revision) -> Result<WatchStream> {
    let live = shared.events.subscribe();
    let last = {
        let index = shared.index.read().expect("index lock");
        let after = if after <= 0 { index.revision } else { after };
        // Fail now, not in the stream, when the start is already compacted.
        index.catch_up(after, 0)?;
        after
    };
    let (tx, rx) = mpsc::channel(256);
    let watcher = Watcher {
        shared,
        prefix,
        last,
        tx,
    };
    tokio::spawn(watcher.run(live));
    Ok(Box::pin(ReceiverStream::new(rx)))
}

impl Watcher {
    async fn run(mut self, mut live: broadcast::Receiver<Arc<Vec<Event>>>) {
        let mut ticker = tokio::time::interval(self.shared.progress_interval);
        ticker.tick().await;
        let mut sent_since_tick = false;
        loop {
            if !self.catch_up().await {
                return;
            }
            loop {
                tokio::select! {
                    batch = live.recv() => match batch {
                        Ok(batch) => {
                            let n = self.deliver(batch.iter().cloned().collect()).await;
                            match n {
                                None => return,
                                Some(sent) => sent_since_tick |= sent,
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = ticker.tick() => {
                        if !sent_since_tick && !self.progress().await {
                            return;
                        }
                        sent_since_tick = false;
                    }
                    _ = self.tx.closed() => return,
                }
            }
        }
    }

    /// Deliver everything in history after `last`. False when the watch ended.
    async fn catch_up(&mut self) -> bool {
        loop {
            match history_after(&self.shared, self.last) {
                Err(e) => {
                    let _ = self.tx.send(Err(e)).await;
                    return false;
                }
                Ok(events) if events.is_empty() => return true,
                Ok(events) => {
                    if self.deliver(events).await.is_none() {
                        return false;
                    }
                }
            }
        }
    }

    /// Send the events after `last` under the prefix. `None` when the receiver is
    /// gone; otherwise whether anything was sent.
    async fn deliver(&mut self, events: Vec<Event>) -> Option<bool> {
        let Some(newest) = events.last().map(Event::revision) else {
            return Some(false);
        };
        let last = self.last;
        let mine: Vec<Event> = events
            .into_iter()
            .filter(|e| e.revision() > last && e.kv.key.starts_with(&self.prefix))
            .collect();
        self.last = self.last.max(newest);
        if mine.is_empty() {
            return Some(false);
        }
        self.tx.send(Ok(WatchMessage::Events(mine))).await.ok()?;
        Some(true)
    }

    /// Report progress: first deliver anything committed, then the revision.
    async fn progress(&mut self) -> bool {
        let current = self.shared.revision();
        if !self.catch_up().await {
            return false;
        }
        self.last = self.last.max(current);
        self.tx
            .send(Ok(WatchMessage::Progress(self.last)))
            .await
            .is_ok()
    }
}

/// Up to a chunk of the events after `after`: from memory, or read from the
/// WAL (records by revision, then the previous values) without holding the
/// index's lock across the reads.
fn history_after(shared: &Shared, after: Revision) -> Result<Vec<Event>> {
    let plan = shared
        .index
        .read()
        .expect("index lock")
        .catch_up(after, CATCH_UP_CHUNK)?;
    let locs = match plan {
        CatchUp::Ready(events) => return Ok(events),
        CatchUp::Records(locs) => locs,
    };
    let records = locs
        .iter()
        .map(|l| l.read())
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(disk_error)?;
    let events = shared
        .index
        .read()
        .expect("index lock")
        .events_from(after, records)?;
    events.into_iter().map(EventRef::resolve).collect()
}
