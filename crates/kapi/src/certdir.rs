//! `--cert-dir`: where the serving certificate lives when no `--tls-cert-file`
//! is given, as kube-apiserver keeps it: `apiserver.crt` and `apiserver.key`
//! are used when both are there (another tool, e.g. envtest, may have written
//! them); otherwise kapi's own serving certificate (signed by its CA under the
//! data dir, so the admin kubeconfig trusts it) is written there and used.
//!
//! Invariant: an existing pair is never overwritten; the key is written 0600.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The serving `(cert, key)` PEMs for `dir`, writing `generated` there first
/// when the directory has no pair yet.
pub fn serving_pair(dir: &Path, generated: (&str, &str)) -> Result<(String, String), String> {
    let cert = dir.join("apiserver.crt");
    let key = dir.join("apiserver.key");
    if cert.is_file() && key.is_file() {
        return Ok((read(&cert)?, read(&key)?));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    write(&cert, generated.0, 0o644)?;
    write(&key, generated.1, 0o600)?;
    tracing::info!("generated serving certificate {}", cert.display());
    Ok((generated.0.to_string(), generated.1.to_string()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("writing {}: {e}", path.display()))
}
