//! Automatic compaction: every interval, compact to the revision seen one interval
//! earlier (as kube-apiserver does), so history covers at least one interval and
//! disk and memory stay bounded under churn. Several kapi instances on one etcd
//! may all run it; compacting an already compacted revision is harmless.

use std::sync::Arc;
use std::time::Duration;

use crate::{Backend, StorageError};

pub fn spawn(backend: Arc<dyn Backend>, interval: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        let mut previous = 0;
        loop {
            ticker.tick().await;
            if previous > 0 {
                match backend.compact(previous).await {
                    Ok(()) => tracing::debug!(revision = previous, "compacted"),
                    Err(StorageError::Compacted { .. }) => {}
                    Err(e) => tracing::warn!(error = %e, "compaction failed"),
                }
            }
            match backend.current_revision().await {
                Ok(rev) => previous = rev,
                Err(e) => tracing::warn!(error = %e, "compaction: reading revision failed"),
            }
        }
    })
}
