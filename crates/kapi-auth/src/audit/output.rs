//! Where a batch of audit events ends up, as upstream's `plugin/pkg/audit/log`
//! and `plugin/pkg/audit/webhook`: a log (a rotating file or standard output),
//! one line per event as JSON or in the legacy one-line text format; or a
//! webhook named by a kubeconfig file, sent an audit.k8s.io/v1 `EventList`
//! per batch and retried on any failure with exponential backoff from
//! `--audit-webhook-initial-backoff` (growing 1.5 times, five tries).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use kapi_client::kubeconfig::WebhookConnection;
use kapi_machinery::validation::go_quote;

use super::logfile::{Rotating, Rotation};

/// `--audit-log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    /// One line of text per event (upstream's `EventString`).
    Legacy,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "json" => Ok(Format::Json),
            "legacy" => Ok(Format::Legacy),
            other => Err(format!(
                "invalid audit log format {other}, allowed formats are \"legacy,json\""
            )),
        }
    }
}

/// One backend's destination.
pub enum Output {
    Log {
        writer: Mutex<Box<dyn Write + Send>>,
        format: Format,
    },
    Webhook {
        conn: WebhookConnection,
        initial_backoff: Duration,
    },
}

/// The whole exchange with the webhook, retries included, is bounded as
/// upstream's generic webhook bounds one call (30 s) times its tries.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);
const WEBHOOK_TRIES: u32 = 5;

impl Output {
    /// The log at `path` (`-`: standard output).
    pub fn log(path: &Path, rotation: &Rotation, format: Format) -> io::Result<Output> {
        let writer: Box<dyn Write + Send> = if path.as_os_str() == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(Rotating::open(path, rotation)?)
        };
        Ok(Output::Log {
            writer: Mutex::new(writer),
            format,
        })
    }

    /// The plugin name upstream counts errors under.
    pub fn name(&self) -> &'static str {
        match self {
            Output::Log { .. } => "log",
            Output::Webhook { .. } => "webhook",
        }
    }

    /// Whether a write waits on the network (and so runs off the batching task).
    pub fn is_remote(&self) -> bool {
        matches!(self, Output::Webhook { .. })
    }

    /// Write to a log at once; `None` for a webhook, which must be awaited.
    pub fn write_now(&self, events: &[Value]) -> Option<Result<(), String>> {
        let Output::Log { writer, format } = self else {
            return None;
        };
        let mut buf = Vec::with_capacity(events.len() * 512);
        for e in events {
            match format {
                Format::Json => {
                    if serde_json::to_writer(&mut buf, e).is_err() {
                        continue;
                    }
                }
                Format::Legacy => buf.extend_from_slice(legacy_line(e).as_bytes()),
            }
            buf.push(b'\n');
        }
        let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
        Some(
            w.write_all(&buf)
                .and_then(|_| w.flush())
                .map_err(|e| e.to_string()),
        )
    }

    /// Write `events` wherever this output goes.
    pub async fn write(&self, events: &[Value]) -> Result<(), String> {
        if let Some(done) = self.write_now(events) {
            return done;
        }
        let Output::Webhook {
            conn,
            initial_backoff,
        } = self
        else {
            unreachable!("a log is written at once");
        };
        let list = json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1",
            "metadata": {}, "items": events});
        let body = serde_json::to_vec(&list).map_err(|e| e.to_string())?;
        let mut wait = *initial_backoff;
        let mut last = String::new();
        for attempt in 1..=WEBHOOK_TRIES {
            match conn.post_bytes(body.clone(), WEBHOOK_TIMEOUT).await {
                Ok((status, _)) if (200..300).contains(&status) => return Ok(()),
                Ok((status, bytes)) => {
                    last = format!(
                        "the server responded with the status code {status}: {}",
                        String::from_utf8_lossy(&bytes).trim()
                    )
                }
                Err(e) => last = e,
            }
            if attempt < WEBHOOK_TRIES {
                tokio::time::sleep(wait).await;
                wait = wait.mul_f32(1.5);
            }
        }
        Err(last)
    }
}

/// Upstream's one-line text form of an event.
pub fn legacy_line(ev: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let groups_of = |u: &Value| {
        u.get("groups").and_then(Value::as_array).map(|g| {
            g.iter()
                .map(|x| go_quote(x.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
    };
    let user = ev.get("user").cloned().unwrap_or(Value::Null);
    let (username, groups) = match s(&user, "username") {
        n if n.is_empty() => ("<none>".to_owned(), "<none>".to_owned()),
        n => (
            n,
            groups_of(&user)
                .filter(|g| !g.is_empty())
                .unwrap_or_else(|| "<none>".into()),
        ),
    };
    let (as_user, as_groups) = match ev.get("impersonatedUser") {
        Some(u) => (
            s(u, "username"),
            groups_of(u).unwrap_or_else(|| "<lookup>".into()),
        ),
        None => ("<self>".to_owned(), "<lookup>".to_owned()),
    };
    let namespace = ev
        .pointer("/objectRef/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    let response = ev
        .pointer("/responseStatus/code")
        .and_then(Value::as_i64)
        .map_or_else(|| "<deferred>".to_owned(), |c| c.to_string());
    let ip = ev
        .pointer("/sourceIPs/0")
        .and_then(Value::as_str)
        .unwrap_or("<unknown>");
    format!(
        "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} user-agent={} namespace={} uri={} response=\"{}\"",
        rfc3339_nano(&s(ev, "requestReceivedTimestamp")),
        go_quote(&s(ev, "auditID")),
        go_quote(&s(ev, "stage")),
        go_quote(ip),
        go_quote(&s(ev, "verb")),
        go_quote(&username),
        go_quote(&groups),
        go_quote(&as_user),
        go_quote(&as_groups),
        go_quote(&s(ev, "userAgent")),
        go_quote(namespace),
        go_quote(&s(ev, "requestURI")),
        response,
    )
}

/// A timestamp as Go's RFC3339Nano prints it: no trailing zeros in the fraction.
fn rfc3339_nano(t: &str) -> String {
    let Some((secs, frac)) = t.strip_suffix('Z').and_then(|t| t.split_once('.')) else {
        return t.to_owned();
    };
    match frac.trim_end_matches('0') {
        "" => format!("{secs}Z"),
        f => format!("{secs}.{f}Z"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_lines_as_upstream_prints_them() {
        let ev = json!({"auditID": "a1", "stage": "ResponseComplete", "verb": "create",
            "requestURI": "/api/v1/namespaces/ns/configmaps?x=\"y\"",
            "requestReceivedTimestamp": "2024-05-01T10:11:12.120000Z",
            "user": {"username": "alice", "groups": ["dev", "system:authenticated"]},
            "sourceIPs": ["10.0.0.1", "10.0.0.2"], "userAgent": "kubectl/v1.33",
            "objectRef": {"namespace": "ns", "resource": "configmaps"},
            "responseStatus": {"code": 201}});
        assert_eq!(
            legacy_line(&ev),
            r#"2024-05-01T10:11:12.12Z AUDIT: id="a1" stage="ResponseComplete" ip="10.0.0.1" method="create" user="alice" groups="\"dev\",\"system:authenticated\"" as="<self>" asgroups="<lookup>" user-agent="kubectl/v1.33" namespace="ns" uri="/api/v1/namespaces/ns/configmaps?x=\"y\"" response="201""#
        );
        let anon = json!({"auditID": "a2", "stage": "RequestReceived", "verb": "get",
            "requestURI": "/version", "requestReceivedTimestamp": "2024-05-01T10:11:12.000000Z",
            "user": {}, "impersonatedUser": {"username": "bob"}});
        assert_eq!(
            legacy_line(&anon),
            r#"2024-05-01T10:11:12Z AUDIT: id="a2" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" as="bob" asgroups="<lookup>" user-agent="" namespace="<none>" uri="/version" response="<deferred>""#
        );
    }

    #[test]
    fn formats_parse_as_upstream_names_them() {
        assert_eq!(Format::parse("legacy").unwrap(), Format::Legacy);
        assert!(Format::parse("yaml")
            .unwrap_err()
            .contains("allowed formats are \"legacy,json\""));
    }
}
