//! `--encryption-provider-config-automatic-reload`: the file is read every
//! `reload_interval`; when its content (its SHA-256) differs from the
//! configuration in force, it is loaded, its KMS providers must pass the
//! health check (polled for up to twice their timeouts, at least 10 s), and
//! only then does it replace the old one. A file that does not load or whose
//! plugins stay unhealthy leaves the old configuration in force and is tried
//! again at the next read, as upstream's controller.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::loaded::{read_file, Encryption, Loaded};

impl Encryption {
    /// Start watching the file (when reload is on); the task ends with the
    /// last user of this configuration.
    pub fn spawn_reload(self: &Arc<Self>) {
        if !self.settings.reload {
            return;
        }
        let weak = Arc::downgrade(self);
        let interval = self.settings.reload_interval;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some(enc) = weak.upgrade() else { return };
                match enc.reload_once().await {
                    Ok(true) => tracing::info!("loaded new encryption provider configuration"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::error!(error = %e, path = %enc.settings.path.display(), "error processing encryption config file")
                    }
                }
            }
        });
    }

    /// Load the file if it changed; true when a new configuration is in force.
    pub async fn reload_once(&self) -> Result<bool, String> {
        let (data, hash) = read_file(&self.settings.path)?;
        if hash == self.current().hash {
            return Ok(false);
        }
        let loaded = Loaded::from_bytes(&data, &self.settings).await?;
        healthy(&loaded).await?;
        self.replace(loaded);
        Ok(true)
    }
}

/// Poll the new configuration's check until it passes or the grace period ends.
async fn healthy(loaded: &Loaded) -> Result<(), String> {
    let timeouts: Duration = loaded
        .transformers
        .probes
        .iter()
        .map(|p| p.client().timeout())
        .sum();
    let grace = (timeouts * 2).max(Duration::from_secs(10));
    let deadline = Instant::now() + grace;
    loop {
        let err = match loaded.check().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!("health check for new transformers failed: {err}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
