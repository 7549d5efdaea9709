//! `/exec` and `/attach` over SPDY (`v4.channel.k8s.io`), as a kubelet's
//! streaming server: the client opens an error stream and one stream per
//! standard stream it asked for (plus resize with a TTY); commands run as
//! real processes in the kubelet's work directory; the exit status goes on
//! the error stream as a v4 `Status`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kapi_kubelet::spdy::{headers, Session, Stream, StreamWriter};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{query, text, Body, Shared};

#[derive(Default, Clone)]
struct Opts {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
    command: Vec<String>,
    attach: Option<String>,
}

/// The SPDY upgrade answer for `protocol`, or why not.
pub fn spdy_upgrade(
    req: &Request<Incoming>,
    protocol: &str,
) -> Result<Response<Body>, Response<Body>> {
    let h = req.headers();
    let is_spdy = h.get(hyper::header::UPGRADE).and_then(|v| v.to_str().ok()) == Some("SPDY/3.1");
    if !is_spdy {
        return Err(text(StatusCode::BAD_REQUEST, "Upgrade request required"));
    }
    let offered = h
        .get_all("x-stream-protocol-version")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == protocol);
    if !offered {
        return Err(text(StatusCode::FORBIDDEN, format!("unable to upgrade: unable to negotiate protocol: client supports {:?}, server supports [{protocol}]", h.get("x-stream-protocol-version"))));
    }
    let mut r = text(StatusCode::SWITCHING_PROTOCOLS, "");
    let rh = r.headers_mut();
    rh.remove(hyper::header::CONTENT_TYPE);
    rh.insert(hyper::header::CONNECTION, "Upgrade".parse().unwrap());
    rh.insert(hyper::header::UPGRADE, "SPDY/3.1".parse().unwrap());
    rh.insert("x-stream-protocol-version", protocol.parse().unwrap());
    Ok(r)
}

pub async fn serve(shared: Arc<Shared>, mut req: Request<Incoming>) -> Response<Body> {
    let q = query(&req);
    let on = |k: &str| q.iter().any(|(a, v)| a == k && v == "1");
    let parts: Vec<String> = req.uri().path().split('/').map(str::to_owned).collect();
    let tty = on("tty");
    let opts = Opts {
        stdin: on("input"),
        stdout: on("output"),
        stderr: on("error") && !tty,
        tty,
        command: q
            .iter()
            .filter(|(k, _)| k == "command")
            .map(|(_, v)| v.clone())
            .collect(),
        attach: (parts.get(1).map(String::as_str) == Some("attach"))
            .then(|| parts.last().cloned().unwrap_or_default()),
    };
    let resp = match spdy_upgrade(&req, "v4.channel.k8s.io") {
        Ok(r) => r,
        Err(r) => return r,
    };
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(up) = upgrade.await else { return };
        let (session, incoming) = Session::start(TokioIo::new(up), true);
        run(shared, session, incoming, opts).await;
    });
    resp
}

#[derive(Default)]
struct Streams {
    error: Option<Stream>,
    stdin: Option<Stream>,
    stdout: Option<Stream>,
    stderr: Option<Stream>,
    resize: Option<Stream>,
}

async fn collect(mut incoming: tokio::sync::mpsc::Receiver<Stream>, o: &Opts) -> Option<Streams> {
    let want = 1
        + usize::from(o.stdin)
        + usize::from(o.stdout)
        + usize::from(o.stderr)
        + usize::from(o.tty);
    let mut s = Streams::default();
    for _ in 0..want {
        let st = tokio::time::timeout(Duration::from_secs(30), incoming.recv())
            .await
            .ok()??;
        st.reply().await.ok()?;
        let kind = headers::get(&st.headers, "streamtype")
            .unwrap_or("")
            .to_owned();
        let slot = match kind.as_str() {
            "error" => &mut s.error,
            "stdin" => &mut s.stdin,
            "stdout" => &mut s.stdout,
            "stderr" => &mut s.stderr,
            "resize" => &mut s.resize,
            _ => return None,
        };
        *slot = Some(st);
    }
    s.error.is_some().then_some(s)
}

async fn run(
    shared: Arc<Shared>,
    session: Session,
    incoming: tokio::sync::mpsc::Receiver<Stream>,
    o: Opts,
) {
    let Some(mut s) = collect(incoming, &o).await else {
        session.shutdown().await;
        return;
    };
    if let Some(mut r) = s.resize.take() {
        tokio::spawn(async move { while r.recv().await.is_some() {} });
    }
    let status = match &o.attach {
        Some(c) => attach(c, &mut s).await,
        None => exec(&shared, &o, &mut s).await,
    };
    for w in [&s.stdout, &s.stderr].into_iter().flatten() {
        let _ = w.finish().await;
    }
    if let Some(e) = &s.error {
        let _ = e.send(Bytes::from(status.to_string())).await;
        let _ = e.finish().await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    session.shutdown().await;
}

fn success() -> serde_json::Value {
    serde_json::json!({"metadata": {}, "status": "Success"})
}

fn exit_status(code: i32) -> serde_json::Value {
    serde_json::json!({
        "metadata": {}, "status": "Failure",
        "message": format!("command terminated with non-zero exit code: exit status {code}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}

async fn attach(container: &str, s: &mut Streams) -> serde_json::Value {
    let out = s.stdout.as_ref().or(s.stderr.as_ref()).map(Stream::writer);
    if let Some(w) = &out {
        let _ = w
            .send(Bytes::from(format!("attached to {container}\n")))
            .await;
    }
    if let Some(stdin) = s.stdin.as_mut() {
        while let Some(chunk) = stdin.recv().await {
            if let Some(w) = &out {
                let _ = w.send(chunk).await;
            }
        }
    }
    success()
}

async fn pump(mut from: impl AsyncRead + Unpin, to: Option<StreamWriter>) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(w) = &to {
            let _ = w.send(Bytes::copy_from_slice(&buf[..n])).await;
        }
    }
}

async fn exec(shared: &Shared, o: &Opts, s: &mut Streams) -> serde_json::Value {
    let Some((prog, args)) = o.command.split_first() else {
        return exit_status(126);
    };
    let mut cmd = tokio::process::Command::new(prog);
    cmd.args(args)
        .current_dir(&shared.workdir)
        .stdin(if o.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return serde_json::json!({"metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
                "message": format!("exec: {prog:?}: {e}")})
        }
    };
    if let (Some(mut stdin), Some(mut from)) = (child.stdin.take(), s.stdin.take()) {
        tokio::spawn(async move {
            while let Some(chunk) = from.recv().await {
                if stdin.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
    }
    let out_w = s.stdout.as_ref().map(Stream::writer);
    let err_w = if o.tty {
        out_w.clone()
    } else {
        s.stderr.as_ref().map(Stream::writer)
    };
    let out = pump(child.stdout.take().expect("piped"), out_w);
    let err = pump(child.stderr.take().expect("piped"), err_w);
    let (_, _, status) = tokio::join!(out, err, child.wait());
    match status.ok().and_then(|s| s.code()) {
        Some(0) => success(),
        Some(code) => exit_status(code),
        None => exit_status(137),
    }
}
