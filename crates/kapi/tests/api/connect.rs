//! The connect subresources end to end, against the fake kubelet
//! (`connect_env.rs`): discovery, `pods/log` with its options and errors,
//! exec through the WebSocket→SPDY translator (kube-rs speaks v5),
//! port-forward over WebSocket, RBAC on `pods/exec`, a kubelet that hangs
//! or breaks off, and a client that never reads.

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, LogParams};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connect_env::{self, pod};
use crate::harness::api_error;

#[tokio::test]
async fn discovery_lists_the_connect_subresources_with_upstream_verbs() {
    let env = connect_env::start(|_| {}).await;
    let (_, v) = env.s.get_json("/api/v1").await;
    let verbs = |name: &str| -> Value {
        let r = v["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name);
        r.unwrap_or_else(|| panic!("{name} missing"))["verbs"].clone()
    };
    for sub in ["pods/exec", "pods/attach", "pods/portforward"] {
        assert_eq!(verbs(sub), serde_json::json!(["create", "get"]), "{sub}");
    }
    assert_eq!(verbs("pods/log"), serde_json::json!(["get"]));
    for sub in ["pods/proxy", "services/proxy", "nodes/proxy"] {
        assert_eq!(
            verbs(sub),
            serde_json::json!(["create", "delete", "get", "patch", "update"]),
            "{sub}"
        );
    }
}

#[tokio::test]
async fn logs_follow_the_options_and_stream() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let all = pods.logs("web", &LogParams::default()).await.unwrap();
    assert_eq!(all.lines().count(), 5);
    assert_eq!(all.lines().next(), Some("app line 1"));
    let lp = LogParams {
        tail_lines: Some(2),
        timestamps: true,
        ..Default::default()
    };
    let tail = pods.logs("web", &lp).await.unwrap();
    assert_eq!(
        tail,
        "2024-01-01T00:00:04Z app line 4\n2024-01-01T00:00:05Z app line 5\n"
    );
    let lp = LogParams {
        limit_bytes: Some(7),
        previous: true,
        ..Default::default()
    };
    assert_eq!(pods.logs("web", &lp).await.unwrap(), "previou");
    let lp = LogParams {
        follow: true,
        ..Default::default()
    };
    let mut lines = pods.log_stream("web", &lp).await.unwrap().lines();
    let mut got = Vec::new();
    while got.len() < 8 {
        got.push(lines.next().await.unwrap().unwrap());
    }
    assert_eq!(got[5], "app line 6");
    assert_eq!(got[7], "app line 8");
}

#[tokio::test]
async fn log_errors_read_as_upstream() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "two", &["a", "b"], Some("n1")).await;
    pod(&env.s, "pending", &["app"], None).await;
    pod(&env.s, "gone", &["missing"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let e = api_error(pods.logs("two", &LogParams::default()).await);
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    let lp = LogParams {
        container: Some("c".into()),
        ..Default::default()
    };
    assert_eq!(
        api_error(pods.logs("two", &lp).await).message,
        "container c is not valid for pod two"
    );
    assert_eq!(
        pods.logs("pending", &LogParams::default()).await.unwrap(),
        ""
    );
    let e = api_error(pods.logs("gone", &LogParams::default()).await);
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        e.message,
        "the server could not find the requested resource ( pods/log gone)"
    );
    let e = api_error(pods.logs("nope", &LogParams::default()).await);
    assert_eq!(e.message, "pods \"nope\" not found");
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/pods/two/log?container=a&tailLines=-1")
        .await;
    assert_eq!(code, 422, "{v}");
}

#[tokio::test]
async fn a_kubelet_that_hangs_or_breaks_off_leaves_the_server_healthy() {
    let env = connect_env::start(|o| {
        let _ = o;
    })
    .await;
    pod(&env.s, "bad", &["hang", "cut"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let lp = LogParams {
        container: Some("hang".into()),
        ..Default::default()
    };
    let e = api_error(pods.logs("bad", &lp).await);
    assert_eq!(e.code, 500);
    assert!(
        e.message.contains("/containerLogs/default/bad/hang"),
        "{}",
        e.message
    );
    let lp = LogParams {
        container: Some("cut".into()),
        follow: true,
        ..Default::default()
    };
    let mut lines = pods.log_stream("bad", &lp).await.unwrap().lines();
    let mut n = 0;
    while let Some(Ok(_)) = lines.next().await {
        n += 1;
    }
    assert!((5..=7).contains(&n), "{n} lines before the break");
    let (code, _) = env.s.get_json("/readyz").await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn exec_through_the_translator_carries_streams_and_exit_codes() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let ap = AttachParams::default().stderr(true);
    let cmd = ["sh", "-c", "echo out; echo err >&2; exit 3"];
    let mut p = pods.exec("web", cmd, &ap).await.unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    p.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    p.stderr().unwrap().read_to_string(&mut err).await.unwrap();
    let status = p.take_status().unwrap().await.unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let causes = status.details.unwrap().causes.unwrap();
    assert_eq!(causes[0].message.as_deref(), Some("3"));

    let ap = AttachParams::default().stdin(true).stderr(false);
    let mut p = pods.exec("web", ["cat"], &ap).await.unwrap();
    let mut stdin = p.stdin().unwrap();
    stdin.write_all(b"hello through spdy\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    let mut out = String::new();
    p.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "hello through spdy\n");
    let status = p.take_status().unwrap().await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Success"));
}

/// `--max-connection-bytes-per-sec`: exec's streams arrive whole, no faster
/// than the limit.
#[tokio::test]
async fn max_connection_bytes_per_sec_paces_exec_streams() {
    let env = connect_env::start_with(|k| k.max_bytes_per_sec = 4_000, |_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let ap = AttachParams::default().stdin(true).stderr(false);
    let started = std::time::Instant::now();
    let mut p = pods.exec("web", ["cat"], &ap).await.unwrap();
    let mut stdin = p.stdin().unwrap();
    let sent = "x".repeat(6_000);
    stdin.write_all(sent.as_bytes()).await.unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    let mut out = String::new();
    p.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    assert_eq!(out, sent);
    // 6 kB at 4 kB/s: past the first second's budget, it waits.
    assert!(started.elapsed() >= std::time::Duration::from_millis(1_000));
}

#[tokio::test]
async fn portforward_over_websocket_reaches_the_pod_port() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let mut pf = pods.portforward("web", &[8080]).await.unwrap();
    let mut port = pf.take_stream(8080).unwrap();
    port.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    port.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    drop(port);
    pf.abort();
}

#[tokio::test]
async fn streams_need_an_upgrade_a_scheduled_pod_and_permission() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    pod(&env.s, "pending", &["app"], None).await;
    let (code, v) = env
        .s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true",
            Vec::new(),
        )
        .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (400, Some("Upgrade request required"))
    );
    let pods: Api<Pod> = env.s.api("default");
    let e = api_error(
        pods.exec("pending", ["ls"], &AttachParams::default())
            .await
            .map(|_| ()),
    );
    assert_eq!(e.message, "pod pending does not have a host assigned");
    // alice may read pods but not exec into them.
    let role = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get"]}]});
    let bind = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]});
    let base = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    assert_eq!(
        env.s
            .send_json(
                "POST",
                &format!("{base}/roles"),
                role.to_string().into_bytes()
            )
            .await
            .0,
        201
    );
    assert_eq!(
        env.s
            .send_json(
                "POST",
                &format!("{base}/rolebindings"),
                bind.to_string().into_bytes()
            )
            .await
            .0,
        201
    );
    let alice: Api<Pod> = Api::namespaced(env.s.client_with_token("alice-token").await, "default");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(alice.get("web").await.is_ok());
    assert!(alice.logs("web", &LogParams::default()).await.is_ok());
    let e = api_error(
        alice
            .exec("web", ["ls"], &AttachParams::default())
            .await
            .map(|_| ()),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods \"web\" is forbidden: User \"alice\" cannot get resource \"pods/exec\" in API group \"\" in the namespace \"default\""
    );
    let alice_raw = env.s.client_with_token("alice-token").await;
    let req =
        http::Request::post("/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true")
            .header("connection", "Upgrade")
            .header("upgrade", "SPDY/3.1")
            .header("x-stream-protocol-version", "v4.channel.k8s.io")
            .body(kube::client::Body::empty())
            .unwrap();
    let resp = alice_raw.send(req).await.unwrap();
    assert_eq!(resp.status(), 403);
}

/// A client that opens an endless log and never reads it holds back the
/// kubelet (flow control all the way, nothing piles up in the server), the
/// server keeps serving, and letting go of the stream closes the kubelet's.
#[tokio::test]
async fn a_client_that_never_reads_holds_back_the_kubelet_and_is_let_go() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use kapi_testkit::kubelet::logs::{FLOODS_OPEN, FLOOD_BYTES};

    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "loud", &["flood"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let lp = LogParams {
        container: Some("flood".into()),
        follow: true,
        ..Default::default()
    };
    let stream = pods.log_stream("loud", &lp).await.unwrap();
    assert_eq!(FLOODS_OPEN.load(Ordering::SeqCst), 1);
    // What the kubelet writes stops growing once the buffers on the way are
    // full.
    let mut written = FLOOD_BYTES.load(Ordering::SeqCst);
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = FLOOD_BYTES.load(Ordering::SeqCst);
        if now == written {
            break;
        }
        written = now;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(FLOOD_BYTES.load(Ordering::SeqCst), written, "still writing");
    assert!(written < 64 << 20, "{written} bytes taken from the kubelet");
    // The server serves meanwhile.
    assert_eq!(env.s.get_json("/readyz").await.0, 200);
    assert!(pods.get("loud").await.is_ok());
    drop(stream);
    for _ in 0..100 {
        if FLOODS_OPEN.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        FLOODS_OPEN.load(Ordering::SeqCst),
        0,
        "the kubelet stream is closed"
    );
}
