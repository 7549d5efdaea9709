//! The `--audit-log-*` and `--audit-webhook-*` families as upstream's audit
//! options read and validate them: each backend's mode, batching, throttle
//! and truncation, the log's format, rotation and compression, and the
//! events' API version (only `audit.k8s.io/v1` exists in 1.33). Options of
//! a backend that is not enabled (no `--audit-log-path`, no
//! `--audit-webhook-config-file`) are not checked, as upstream.

use std::time::Duration;

use kapi_auth::audit::output::Format;
use kapi_auth::audit::sink::{BatchConfig, Delivery, Mode, Rotation, Truncate};

use super::Flags;

/// What the audit flags ask for, before files are opened.
#[derive(Debug, Clone)]
pub struct AuditFlags {
    pub log_format: Format,
    pub log_rotation: Rotation,
    pub log_delivery: Delivery,
    pub webhook_initial_backoff: Duration,
    pub webhook_delivery: Delivery,
}

impl AuditFlags {
    pub fn read(f: &Flags) -> Result<AuditFlags, String> {
        let log_on = f.opt_string("audit-log-path").is_some();
        let webhook_on = f.opt_string("audit-webhook-config-file").is_some();
        let log_format = if log_on {
            Format::parse(&f.string("audit-log-format"))?
        } else {
            Format::Json
        };
        for (plugin, on) in [("log", log_on), ("webhook", webhook_on)] {
            let v = f.string(&format!("audit-{plugin}-version"));
            if on && v != "audit.k8s.io/v1" {
                return Err(format!(
                    "--audit-{plugin}-version {v}: invalid group version, allowed versions are [\"audit.k8s.io/v1\"]"
                ));
            }
        }
        Ok(AuditFlags {
            log_format,
            log_rotation: Rotation {
                max_size: f.int_in("audit-log-maxsize", 0, i64::MAX)? as u64 * 1024 * 1024,
                max_backups: f.int_in("audit-log-maxbackup", 0, i64::MAX)? as usize,
                max_age: f.int_in("audit-log-maxage", 0, u32::MAX as i64)? as u32,
                compress: f.bool("audit-log-compress"),
            },
            log_delivery: delivery(f, "log", log_on)?,
            webhook_initial_backoff: f.duration("audit-webhook-initial-backoff")?,
            webhook_delivery: delivery(f, "webhook", webhook_on)?,
        })
    }
}

/// One backend's `--audit-<plugin>-mode`, `-batch-*` and `-truncate-*`.
fn delivery(f: &Flags, plugin: &str, on: bool) -> Result<Delivery, String> {
    let flag = |s: &str| format!("audit-{plugin}-{s}");
    let int = |s: &str| -> Result<i64, String> { f.int_in(&flag(s), i64::MIN, i64::MAX) };
    let mode = match Mode::parse(plugin, &f.string(&flag("mode"))) {
        Ok(mode) => mode,
        Err(e) if on => return Err(e),
        Err(_) => Mode::Blocking,
    };
    let buffer = int("batch-buffer-size")?;
    let max_size = int("batch-max-size")?;
    let qps: f32 = f
        .string(&flag("batch-throttle-qps"))
        .parse()
        .map_err(|e| format!("--{}: {e}", flag("batch-throttle-qps")))?;
    let burst = int("batch-throttle-burst")?;
    let throttle = f.bool(&flag("batch-throttle-enable"));
    let max_event = int("truncate-max-event-size")?;
    let max_batch = int("truncate-max-batch-size")?;
    let truncate = f.bool(&flag("truncate-enabled"));
    if on && mode == Mode::Batch {
        let positive = |what: &str, v: f64| {
            if v > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "invalid audit batch {plugin} {what} {v}, must be a positive number"
                ))
            }
        };
        positive("buffer size", buffer as f64)?;
        positive("max batch size", max_size as f64)?;
        if throttle {
            positive("throttle QPS", f64::from(qps))?;
            positive("throttle burst", burst as f64)?;
        }
    }
    if on && truncate {
        if max_event <= 0 {
            return Err(format!(
                "invalid audit truncate {plugin} max event size {max_event}, must be a positive number"
            ));
        }
        if max_batch < max_event {
            return Err(format!("invalid audit truncate {plugin} max batch size {max_batch}, must be greater than max event size ({max_event})"));
        }
    }
    Ok(Delivery {
        mode,
        batch: BatchConfig {
            buffer: buffer.max(1) as usize,
            max_size: max_size.max(1) as usize,
            max_wait: f.duration(&flag("batch-max-wait"))?,
            throttle: throttle.then_some((qps, burst.max(1) as u32)),
        },
        truncate: truncate.then_some(Truncate {
            max_event: max_event as usize,
            max_batch: max_batch as usize,
        }),
    })
}
