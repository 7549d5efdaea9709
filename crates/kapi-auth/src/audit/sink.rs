//! Where audit events go: a bounded buffer drained in batches by one writer
//! thread (upstream's `plugin/pkg/audit/buffered` in front of
//! `plugin/pkg/audit/log`), so writing never stalls a request. A full buffer
//! drops the event and counts it (`apiserver_audit_error_total{plugin="buffered"}`);
//! a failed write counts under `plugin="log"`.
//!
//! The file rotates as lumberjack does for kube-apiserver: past `max_size`
//! bytes the file is renamed to `<name>-<UTC time>.<ext>` and a new one
//! started; backups beyond `max_backups` (0: keep all) and older than
//! `max_age` days (0: keep) are removed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use kapi_http::metrics::{Family, Kind, Metrics};

pub const EVENTS: Family = Family {
    name: "apiserver_audit_event_total",
    help: "Counter of audit events generated and sent to the audit backend.",
    kind: Kind::Counter,
    labels: &[],
};
pub const ERRORS: Family = Family {
    name: "apiserver_audit_error_total",
    help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
    kind: Kind::Counter,
    labels: &["plugin"],
};

/// `--audit-log-*` settings.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// `-` writes to standard output.
    pub path: PathBuf,
    /// Bytes before rotation (`--audit-log-maxsize` MB; 0 means lumberjack's 100 MB).
    pub max_size: u64,
    pub max_backups: usize,
    /// Days (`--audit-log-maxage`).
    pub max_age: u32,
    /// Events buffered before new ones are dropped (`--audit-log-batch-buffer-size`).
    pub buffer: usize,
    /// Events written per batch at most (`--audit-log-batch-max-size`).
    pub batch: usize,
}

impl LogOptions {
    pub fn new(path: impl Into<PathBuf>) -> LogOptions {
        LogOptions {
            path: path.into(),
            max_size: 0,
            max_backups: 0,
            max_age: 0,
            buffer: 10_000,
            batch: 400,
        }
    }
}

/// The request side of the sink. Cheap to clone.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Value>,
    metrics: Metrics,
}

impl Sink {
    /// Open the log and start its writer thread.
    pub fn open(opts: &LogOptions, metrics: Metrics) -> io::Result<Sink> {
        let out: Box<dyn Write + Send> = if opts.path.as_os_str() == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(Rotating::open(opts)?)
        };
        let (tx, rx) = mpsc::sync_channel(opts.buffer.max(1));
        let m = metrics.clone();
        let batch = opts.batch.max(1);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(rx, out, batch, m))?;
        Ok(Sink { tx, metrics })
    }

    /// Queue one event; never blocks.
    pub fn send(&self, event: Value) {
        self.metrics.add(&EVENTS, &[], 1.0);
        match self.tx.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.metrics.add(&ERRORS, &["buffered"], 1.0);
            }
        }
    }
}

fn write_loop(rx: Receiver<Value>, mut out: Box<dyn Write + Send>, batch: usize, m: Metrics) {
    while let Ok(first) = rx.recv() {
        let mut events = vec![first];
        while events.len() < batch {
            match rx.try_recv() {
                Ok(e) => events.push(e),
                Err(_) => break,
            }
        }
        let mut buf = Vec::with_capacity(events.len() * 512);
        for e in &events {
            if serde_json::to_writer(&mut buf, e).is_ok() {
                buf.push(b'\n');
            }
        }
        if out.write_all(&buf).and_then(|_| out.flush()).is_err() {
            m.add(&ERRORS, &["log"], events.len() as f64);
        }
    }
}

/// A log file that rotates by size (lumberjack's rules).
pub struct Rotating {
    path: PathBuf,
    file: File,
    size: u64,
    max_size: u64,
    max_backups: usize,
    max_age: u32,
}

impl Rotating {
    pub fn open(opts: &LogOptions) -> io::Result<Rotating> {
        if let Some(dir) = opts.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&opts.path)?;
        let size = file.metadata()?.len();
        Ok(Rotating {
            path: opts.path.clone(),
            file,
            size,
            max_size: if opts.max_size == 0 {
                100 * 1024 * 1024
            } else {
                opts.max_size
            },
            max_backups: opts.max_backups,
            max_age: opts.max_age,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let backup = backup_name(&self.path, time::OffsetDateTime::now_utc());
        fs::rename(&self.path, &backup)?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = 0;
        self.cleanup();
        Ok(())
    }

    /// Remove backups beyond the count and age limits.
    fn cleanup(&self) {
        let mut backups = backups(&self.path);
        backups.sort_by_key(|b| std::cmp::Reverse(b.1));
        let cutoff = (self.max_age > 0)
            .then(|| SystemTime::now() - Duration::from_secs(u64::from(self.max_age) * 86_400));
        for (i, (path, modified)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = cutoff.is_some_and(|c| *modified < c);
            if too_many || too_old {
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// `<stem>-<2006-01-02T15-04-05.000>.<ext>`, unique in its directory.
fn backup_name(path: &Path, now: time::OffsetDateTime) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new(""));
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]-[minute]-[second].[subsecond digits:3]"
    );
    let mut t = now;
    loop {
        let stamp = t.format(&fmt).unwrap_or_default();
        let candidate = dir.join(format!("{stem}-{stamp}{ext}"));
        if !candidate.exists() {
            return candidate;
        }
        t += time::Duration::milliseconds(1);
    }
}

/// The backups of `path` with their modification times.
fn backups(path: &Path) -> Vec<(PathBuf, SystemTime)> {
    let stem = path
        .file_stem()
        .map(|s| format!("{}-", s.to_string_lossy()))
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&stem) && name.ends_with(&ext) && e.path() != path
        })
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.modified().ok()?)))
        .collect()
}

impl Write for Rotating {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max_size {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut opts = LogOptions::new(&path);
        opts.max_size = 100;
        opts.max_backups = 2;
        let mut w = Rotating::open(&opts).unwrap();
        for i in 0..10 {
            w.write_all(format!("{{\"line\":{i:040}}}\n").as_bytes())
                .unwrap();
        }
        let backups = backups(&path);
        assert_eq!(backups.len(), 2, "{backups:?}");
        for (p, _) in &backups {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.starts_with("audit-") && name.ends_with(".log"),
                "{name}"
            );
            assert!(fs::metadata(p).unwrap().len() <= 100);
        }
        // The newest lines are in the current file.
        let current = fs::read_to_string(&path).unwrap();
        assert!(current.contains(&format!("{:040}", 9)));
    }

    #[test]
    fn a_full_buffer_drops_and_counts() {
        let metrics = Metrics::default();
        let (tx, _rx) = mpsc::sync_channel(1);
        let sink = Sink {
            tx,
            metrics: metrics.clone(),
        };
        sink.send(serde_json::json!({"n": 1}));
        sink.send(serde_json::json!({"n": 2}));
        assert_eq!(metrics.value(&EVENTS, &[]), 2.0);
        assert_eq!(metrics.value(&ERRORS, &["buffered"]), 1.0);
    }
}
