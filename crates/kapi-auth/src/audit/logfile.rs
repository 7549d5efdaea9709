//! The audit log file as lumberjack keeps it for kube-apiserver: past
//! `max_size` bytes the file is renamed to `<name>-<UTC time>.<ext>` and a new
//! one started; with `compress` the renamed file is gzipped in the background
//! to `<name>-<UTC time>.<ext>.gz`; backups beyond `max_backups` (0: keep all)
//! and older than `max_age` days (0: keep) are removed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The file's rotation settings (`--audit-log-maxsize`, `-maxbackup`,
/// `-maxage`, `-compress`).
#[derive(Debug, Clone, Default)]
pub struct Rotation {
    /// Bytes before rotation (0: lumberjack's 100 MB).
    pub max_size: u64,
    pub max_backups: usize,
    /// Days.
    pub max_age: u32,
    /// Gzip rotated files.
    pub compress: bool,
}

/// A log file that rotates by size (lumberjack's rules).
pub struct Rotating {
    path: PathBuf,
    file: File,
    size: u64,
    max_size: u64,
    rotation: Rotation,
}

impl Rotating {
    pub fn open(path: &Path, rotation: &Rotation) -> io::Result<Rotating> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(Rotating {
            path: path.to_path_buf(),
            file,
            size,
            max_size: if rotation.max_size == 0 {
                100 * 1024 * 1024
            } else {
                rotation.max_size
            },
            rotation: rotation.clone(),
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
        if self.rotation.compress {
            // As lumberjack: compress off the writer's path, then clean up.
            let (path, rotation) = (self.path.clone(), self.rotation.clone());
            std::thread::spawn(move || {
                if let Err(e) = gzip(&backup) {
                    tracing::warn!("compressing audit log {}: {e}", backup.display());
                }
                cleanup(&path, &rotation);
            });
        } else {
            cleanup(&self.path, &self.rotation);
        }
        Ok(())
    }
}

/// `path` gzipped to `path.gz`, the original removed.
fn gzip(path: &Path) -> io::Result<()> {
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    let mut input = File::open(path)?;
    let out = File::create(&name)?;
    let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    io::copy(&mut input, &mut enc)?;
    enc.finish()?.sync_all()?;
    fs::remove_file(path)
}

/// Remove the backups of `path` beyond the count and age limits.
fn cleanup(path: &Path, rotation: &Rotation) {
    let mut backups = backups(path);
    backups.sort_by_key(|b| std::cmp::Reverse(b.1));
    let cutoff = (rotation.max_age > 0)
        .then(|| SystemTime::now() - Duration::from_secs(u64::from(rotation.max_age) * 86_400));
    for (i, (path, modified)) in backups.iter().enumerate() {
        let too_many = rotation.max_backups > 0 && i >= rotation.max_backups;
        let too_old = cutoff.is_some_and(|c| *modified < c);
        if too_many || too_old {
            let _ = fs::remove_file(path);
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
        let gzipped = dir.join(format!("{stem}-{stamp}{ext}.gz"));
        if !candidate.exists() && !gzipped.exists() {
            return candidate;
        }
        t += time::Duration::milliseconds(1);
    }
}

/// The backups of `path` (gzipped or not) with their modification times.
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
            let plain = name.strip_suffix(".gz").unwrap_or(&name);
            name.starts_with(&stem) && plain.ends_with(&ext) && e.path() != path
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

    fn write_lines(path: &Path, rotation: &Rotation, n: usize) {
        let mut w = Rotating::open(path, rotation).unwrap();
        for i in 0..n {
            w.write_all(format!("{{\"line\":{i:040}}}\n").as_bytes())
                .unwrap();
        }
    }

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size: 100,
            max_backups: 2,
            ..Default::default()
        };
        write_lines(&path, &rotation, 10);
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
    fn compress_gzips_rotated_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size: 100,
            compress: true,
            ..Default::default()
        };
        write_lines(&path, &rotation, 5);
        let mut gz = Vec::new();
        for _ in 0..100 {
            gz = backups(&path)
                .into_iter()
                .filter(|(p, _)| p.to_string_lossy().ends_with(".log.gz"))
                .collect();
            if gz.len() == 2 && backups(&path).len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(gz.len(), 2, "{:?}", backups(&path));
        let mut text = String::new();
        let file = File::open(&gz[0].0).unwrap();
        io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
        assert!(text.starts_with("{\"line\":"), "{text}");
    }
}
