//! The connect subresources' options, read from the query as upstream's
//! parameter codec reads `PodLogOptions`, `PodExecOptions`,
//! `PodAttachOptions` and `PodPortForwardOptions`, validated as upstream,
//! and turned into the kubelet URL (`/containerLogs`, `/exec`, `/attach`,
//! `/portForward`, with the kubelet's own parameter names).

use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

/// The query's pairs in order (repeated keys kept).
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn parse(query: Option<&str>) -> Params {
        let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .into_owned()
            .collect();
        Params(pairs)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A boolean as Go's `strconv.ParseBool` (what the parameter codec uses).
    pub fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(false),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
            Some(v) => Err(ApiError::bad_request(format!(
                "strconv.ParseBool: parsing {v:?}: invalid syntax"
            ))),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "strconv.ParseInt: parsing {v:?}: invalid syntax"
                    ))
                })
            })
            .transpose()
    }
}

/// The container a request names, or the pod's only one, as upstream's
/// `validateContainer`.
pub fn container(pod: &Value, asked: Option<&str>) -> Result<String, ApiError> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let names = |field: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect()
    };
    let containers = names("containers");
    match asked.filter(|c| !c.is_empty()) {
        Some(c) => {
            let (init, ephemeral) = (names("initContainers"), names("ephemeralContainers"));
            if containers
                .iter()
                .chain(&init)
                .chain(&ephemeral)
                .any(|n| n == c)
            {
                Ok(c.to_owned())
            } else {
                Err(ApiError::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
        }
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None if containers.is_empty() => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        None => {
            let mut msg = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            let init = names("initContainers");
            if !init.is_empty() {
                msg.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(ApiError::bad_request(msg))
        }
    }
}

/// `pods/log`'s options that shape the kubelet request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub container: Option<String>,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    pub fn parse(p: &Params, pod_name: &str) -> Result<LogOptions, ApiError> {
        let opts = LogOptions {
            container: p.get("container").map(str::to_owned),
            follow: p.flag("follow")?,
            previous: p.flag("previous")?,
            timestamps: p.flag("timestamps")?,
            since_seconds: p.int("sinceSeconds")?,
            since_time: p
                .get("sinceTime")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            tail_lines: p.int("tailLines")?,
            limit_bytes: p.int("limitBytes")?,
            insecure_skip_tls_verify_backend: p.flag("insecureSkipTLSVerifyBackend")?,
        };
        opts.validate(pod_name)?;
        Ok(opts)
    }

    /// Upstream's `ValidatePodLogOptions`.
    fn validate(&self, pod_name: &str) -> Result<(), ApiError> {
        let mut errs = Vec::new();
        let ge = |field: &str, v: Option<i64>, min: i64, errs: &mut Vec<FieldError>| {
            if let Some(v) = v.filter(|v| *v < min) {
                let msg = format!("must be greater than or equal to {min}");
                errs.push(FieldError::invalid(&FieldPath::new(field), v, msg));
            }
        };
        ge("tailLines", self.tail_lines, 0, &mut errs);
        ge("limitBytes", self.limit_bytes, 1, &mut errs);
        if self.since_seconds.is_some() && self.since_time.is_some() {
            errs.push(FieldError::forbidden(
                &FieldPath::new(""),
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        }
        ge("sinceSeconds", self.since_seconds, 1, &mut errs);
        if let Some(t) = &self.since_time {
            if chrono_like_rfc3339(t).is_none() {
                return Err(ApiError::bad_request(format!(
                    "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                )));
            }
        }
        if errs.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            GroupKind::new("", "PodLogOptions"),
            pod_name,
            &errs,
        ))
    }

    /// `/containerLogs/<ns>/<pod>/<container>?...` on the kubelet.
    pub fn kubelet_path(&self, ns: &str, pod: &str, container: &str) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        let mut flag = |k: &str, on: bool| {
            if on {
                q.append_pair(k, "true");
            }
        };
        flag("follow", self.follow);
        flag("previous", self.previous);
        flag("timestamps", self.timestamps);
        if let Some(v) = self.since_seconds {
            q.append_pair("sinceSeconds", &v.to_string());
        }
        if let Some(v) = &self.since_time {
            q.append_pair("sinceTime", v);
        }
        if let Some(v) = self.tail_lines {
            q.append_pair("tailLines", &v.to_string());
        }
        if let Some(v) = self.limit_bytes {
            q.append_pair("limitBytes", &v.to_string());
        }
        let q = q.finish();
        let path = format!("/containerLogs/{}/{}/{}", esc(ns), esc(pod), esc(container));
        if q.is_empty() {
            path
        } else {
            format!("{path}?{q}")
        }
    }
}

/// A time in RFC 3339 form (what `metav1.Time` accepts in a query).
fn chrono_like_rfc3339(s: &str) -> Option<()> {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let ok = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    ok.then_some(())
}

fn esc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Which streaming subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    Exec,
    Attach,
    PortForward,
}

/// The kubelet path and query of an exec, attach or port-forward, from the
/// client's query; `container` is already validated.
pub fn stream_path(
    kind: StreamKind,
    p: &Params,
    ns: &str,
    pod: &str,
    container: &str,
) -> Result<String, ApiError> {
    let mut q = form_urlencoded::Serializer::new(String::new());
    let base = match kind {
        StreamKind::PortForward => {
            for port in p.all("ports") {
                for one in port.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let n: u16 = one.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "invalid port {one:?}: must be between 1 and 65535"
                        ))
                    })?;
                    q.append_pair("port", &n.to_string());
                }
            }
            format!("/portForward/{}/{}", esc(ns), esc(pod))
        }
        StreamKind::Exec | StreamKind::Attach => {
            let (stdin, stdout, stderr, tty) = (
                p.flag("stdin")?,
                p.flag("stdout")?,
                p.flag("stderr")?,
                p.flag("tty")?,
            );
            if !stdin && !stdout && !stderr {
                return Err(ApiError::bad_request(
                    "you must specify at least 1 of stdin, stdout, stderr",
                ));
            }
            for (on, k) in [
                (stdin, "input"),
                (stdout, "output"),
                (stderr, "error"),
                (tty, "tty"),
            ] {
                if on {
                    q.append_pair(k, "1");
                }
            }
            if kind == StreamKind::Exec {
                let commands = p.all("command");
                if commands.is_empty() {
                    return Err(ApiError::bad_request("you must specify at least 1 command"));
                }
                for c in commands {
                    q.append_pair("command", c);
                }
                format!("/exec/{}/{}/{}", esc(ns), esc(pod), esc(container))
            } else {
                format!("/attach/{}/{}/{}", esc(ns), esc(pod), esc(container))
            }
        }
    };
    let q = q.finish();
    Ok(if q.is_empty() {
        base
    } else {
        format!("{base}?{q}")
    })
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
