//! The watch side of the etcd backend: one etcd watch moved into a channel,
//! its responses translated into [`WatchMessage`]s, with progress requested
//! whenever the watch is idle for a `progress_interval`, so an idle watch
//! still learns the current revision. A compacted start revision ends the
//! stream with `Compacted`.

use etcd_client::EventType;
use tokio::sync::mpsc;

use crate::backend::{Event, EventKind, Result, Revision, StorageError, WatchMessage};
use crate::etcd::{map_err, EtcdBackend};

/// Moves one etcd watch into a channel, translating responses, and asks etcd
/// for progress when the watch is idle.
pub(crate) struct WatchPump {
    pub backend: EtcdBackend,
    pub requested: Revision,
    pub tx: mpsc::Sender<Result<WatchMessage>>,
}

impl WatchPump {
    pub async fn run(self, mut stream: etcd_client::WatchStream) {
        let mut ticker = tokio::time::interval(self.backend.progress_interval);
        ticker.tick().await;
        loop {
            let msg = tokio::select! {
                m = stream.message() => m,
                _ = ticker.tick() => {
                    if stream.request_progress().await.is_err() { return; }
                    continue;
                }
                _ = self.tx.closed() => return,
            };
            let out = match msg {
                Ok(Some(resp)) => match self.translate(&resp) {
                    Some(out) => out,
                    None => continue,
                },
                Ok(None) => Err(StorageError::Unavailable("etcd: watch closed".into())),
                Err(e) => Err(map_err(e)),
            };
            let last = out.is_err();
            if self.tx.send(out).await.is_err() || last {
                return;
            }
        }
    }

    fn translate(&self, resp: &etcd_client::WatchResponse) -> Option<Result<WatchMessage>> {
        if resp.canceled() {
            if resp.compact_revision() > 0 {
                return Some(Err(StorageError::Compacted {
                    requested: self.requested,
                    compacted: resp.compact_revision(),
                }));
            }
            let reason = format!("etcd: watch canceled: {}", resp.cancel_reason());
            return Some(Err(StorageError::Unavailable(reason)));
        }
        if resp.created() && resp.events().is_empty() {
            return None;
        }
        if resp.events().is_empty() {
            let rev = resp.header().map_or(0, |h| h.revision());
            return Some(Ok(WatchMessage::Progress(rev)));
        }
        let events = resp
            .events()
            .iter()
            .filter_map(|e| {
                let kv = self.backend.convert(e.kv()?);
                let prev = e.prev_kv().map(|p| self.backend.convert(p));
                let kind = match e.event_type() {
                    EventType::Put => EventKind::Put,
                    EventType::Delete => EventKind::Delete,
                };
                Some(Event { kind, kv, prev })
            })
            .collect();
        Some(Ok(WatchMessage::Events(events)))
    }
}
