//! A webhook's connection as a kubeconfig file describes it — the format of
//! `--authentication-token-webhook-config-file`,
//! `--authorization-webhook-config-file` and of `connectionInfo.kubeConfigFile`
//! in an AuthorizationConfiguration: the current context's cluster (`server`,
//! `certificate-authority[-data]`, `insecure-skip-tls-verify`,
//! `tls-server-name`) and user (`client-certificate[-data]` with
//! `client-key[-data]`, `token` or `tokenFile`).
//!
//! As client-go's loader: relative file names are relative to the kubeconfig's
//! directory; without a `current-context`, a file with one context (or one
//! cluster and at most one user) uses it. Only `https://` servers are called.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use crate::webhook::{self, Call, ClientTls, Target};

/// Where and how a webhook is called.
#[derive(Debug, Clone)]
pub struct WebhookConnection {
    pub target: Target,
    pub tls: ClientTls,
    /// The user's bearer token, sent as `Authorization: Bearer`.
    pub bearer: Option<String>,
}

/// upstream's `DefaultAuthWebhookRetryBackoff`: 500 ms, growing 1.5 times, 5 tries.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_STEPS: u32 = 5;

impl WebhookConnection {
    /// This connection opened by `dialer` (the `controlplane` egress
    /// selection, for the authentication, authorization and audit webhooks).
    pub fn via(mut self, dialer: std::sync::Arc<dyn kapi_egress::Dialer>) -> Self {
        self.target.dialer = dialer;
        self
    }

    /// POST `review` (JSON) and decode the JSON answer. Answers 429 and 5xx
    /// are retried with upstream's backoff; the whole exchange (retries
    /// included) is bounded by `timeout`.
    pub async fn post_json(&self, review: &Value, timeout: Duration) -> Result<Value, String> {
        let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut wait = RETRY_FIRST;
        for attempt in 1..=RETRY_STEPS {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let call = Call {
                method: "POST",
                path: &self.target.path,
                body: Some(body.clone()),
                bearer: self.bearer.as_deref(),
            };
            let (status, bytes) = webhook::send(&self.target, &self.tls, call, left).await?;
            let retry = status == 429 || status >= 500;
            if retry && attempt < RETRY_STEPS && left > wait {
                tokio::time::sleep(wait).await;
                wait = wait.mul_f32(1.5);
                continue;
            }
            if !(200..300).contains(&status) {
                let text = String::from_utf8_lossy(&bytes);
                return Err(format!(
                    "the server responded with the status code {status} but did not return more information: {}",
                    text.trim()
                ));
            }
            return serde_json::from_slice(&bytes)
                .map_err(|e| format!("invalid response from webhook: {e}"));
        }
        Err("webhook retries exhausted".into())
    }

    /// POST `body` (JSON) once: the answer's status and bytes. The caller
    /// decides what to retry (audit retries every failure).
    pub async fn post_bytes(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        let call = Call {
            method: "POST",
            path: &self.target.path,
            body: Some(body),
            bearer: self.bearer.as_deref(),
        };
        webhook::send(&self.target, &self.tls, call, timeout).await
    }
}

/// Read the kubeconfig at `path`.
pub fn load(path: &Path) -> Result<WebhookConnection, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir).map_err(|e| format!("{}: {e}", path.display()))
}

/// The connection `text` (a kubeconfig) describes, files relative to `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<WebhookConnection, String> {
    let doc: Value =
        serde_saphyr::from_str(text).map_err(|e| format!("invalid kubeconfig: {e}"))?;
    let (cluster, user) = pick(&doc)?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let server = s(&cluster, "server");
    if server.is_empty() {
        return Err("invalid configuration: no configuration has been provided".into());
    }
    if !server.starts_with("https://") {
        return Err(format!(
            "invalid configuration: server {server:?}: only https:// webhooks are supported"
        ));
    }
    let target = Target::from_url(&server)?.with_server_name(&s(&cluster, "tls-server-name"));
    let ca = data_or_file(&cluster, "certificate-authority", dir)?;
    let insecure = cluster
        .get("insecure-skip-tls-verify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let cert = data_or_file(&user, "client-certificate", dir)?;
    let key = data_or_file(&user, "client-key", dir)?;
    let client = match (&cert, &key) {
        (Some(c), Some(k)) => Some((c.as_slice(), k.as_slice())),
        (None, None) => None,
        _ => {
            return Err(
                "invalid configuration: client-certificate and client-key go together".into(),
            )
        }
    };
    let tls = ClientTls::new(ca.as_deref(), client, insecure)?;
    let mut bearer = Some(s(&user, "token")).filter(|t| !t.is_empty());
    if bearer.is_none() {
        if let Some(file) = Some(s(&user, "tokenFile")).filter(|f| !f.is_empty()) {
            let path = resolve(dir, &file);
            let token = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            bearer = Some(token.trim().to_string());
        }
    }
    Ok(WebhookConnection {
        target,
        tls,
        bearer,
    })
}

/// The current context's cluster and user (see the module comment).
fn pick(doc: &Value) -> Result<(Value, Value), String> {
    let named = |list: &str, name: &str, field: &str| -> Option<Value> {
        doc.get(list)?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|e| e.get(field).cloned())
    };
    let only = |list: &str, field: &str| -> Option<Value> {
        match doc.get(list).and_then(Value::as_array).map(Vec::as_slice) {
            Some([one]) => one.get(field).cloned(),
            _ => None,
        }
    };
    let current = doc
        .get("current-context")
        .and_then(Value::as_str)
        .unwrap_or("");
    let context = if current.is_empty() {
        only("contexts", "context")
    } else {
        Some(named("contexts", current, "context").ok_or_else(|| {
            format!("invalid configuration: context was not found for specified context: {current}")
        })?)
    };
    let Some(context) = context else {
        let cluster = only("clusters", "cluster")
            .ok_or("invalid configuration: no configuration has been provided")?;
        return Ok((cluster, only("users", "user").unwrap_or(Value::Null)));
    };
    let field = |k: &str| {
        context
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let cluster_name = field("cluster");
    let cluster = named("clusters", &cluster_name, "cluster").ok_or_else(|| {
        format!("invalid configuration: cluster {cluster_name:?} was not found for context")
    })?;
    let user_name = field("user");
    let user = if user_name.is_empty() {
        Value::Null
    } else {
        named("users", &user_name, "user").ok_or_else(|| {
            format!("invalid configuration: user {user_name:?} was not found for context")
        })?
    };
    Ok((cluster, user))
}

/// `<key>-data` (base64) or the file named by `<key>`.
fn data_or_file(v: &Value, key: &str, dir: &Path) -> Result<Option<Vec<u8>>, String> {
    let data_key = format!("{key}-data");
    if let Some(data) = v
        .get(&data_key)
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("invalid {data_key}: {e}"))?;
        return Ok(Some(bytes));
    }
    match v.get(key).and_then(Value::as_str).filter(|f| !f.is_empty()) {
        Some(file) => {
            let path = resolve(dir, file);
            std::fs::read(&path)
                .map(Some)
                .map_err(|e| format!("reading {key} {}: {e}", path.display()))
        }
        None => Ok(None),
    }
}

fn resolve(dir: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }

    #[test]
    fn current_context_cluster_and_user() {
        install();
        let text = "apiVersion: v1\nkind: Config\ncurrent-context: hook\n\
            clusters:\n- name: other\n  cluster: {server: \"https://10.0.0.9\"}\n\
            - name: c\n  cluster: {server: \"https://127.0.0.1:8443/authn\", insecure-skip-tls-verify: true, tls-server-name: hook.example}\n\
            users:\n- name: u\n  user: {token: secret}\n\
            contexts:\n- name: hook\n  context: {cluster: c, user: u}\n";
        let c = parse(text, Path::new("/")).unwrap();
        assert_eq!(c.target.connect, ("127.0.0.1".to_string(), 8443));
        assert_eq!(c.target.path, "/authn");
        assert_eq!(c.target.server_name, "hook.example");
        assert_eq!(c.bearer.as_deref(), Some("secret"));
    }

    #[test]
    fn one_cluster_without_context_and_bad_files() {
        install();
        let text = "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: true}\n";
        let c = parse(text, Path::new("/")).unwrap();
        assert_eq!(c.target.connect, ("h".to_string(), 1));
        assert!(c.bearer.is_none());
        let err = parse("clusters: []\n", Path::new("/")).unwrap_err();
        assert!(err.contains("no configuration has been provided"), "{err}");
        let err = parse(
            "clusters:\n- name: c\n  cluster: {server: \"http://h\"}\n",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(err.contains("only https"), "{err}");
        let missing = "clusters:\n- name: c\n  cluster: {server: \"https://h\", certificate-authority: nope.pem}\n";
        let err = parse(missing, Path::new("/nonexistent")).unwrap_err();
        assert!(err.contains("/nonexistent/nope.pem"), "{err}");
        let err = parse("current-context: x\ncontexts: []\n", Path::new("/")).unwrap_err();
        assert!(err.contains("context was not found"), "{err}");
    }
}
