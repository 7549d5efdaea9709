//! The secure-serving flags on the real binary: `--tls-min-version`,
//! `--tls-cipher-suites`, `--tls-sni-cert-key`,
//! `--http2-max-streams-per-connection`, `--disable-http2-serving` and
//! `--goaway-chance`, each seen from a client of the test's own making; and
//! their bad values refused at start with upstream's messages. Also what
//! HTTP/2 clients get for a body over the limit: the 413 `Status`, as on
//! HTTP/1.1.

use std::sync::Arc;

use rustls::version::{TLS12, TLS13};
use rustls::CipherSuite;

use crate::https::{self, Recorder, Setup};
use crate::pki::{self, Ca};
use crate::proc::run_once;

fn flags(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn tls_min_version_13_refuses_a_tls12_client() {
    let s = Setup::start(&flags(&["--tls-min-version=VersionTLS13"]));
    let tls12 = s.client_config(&[&TLS12], None);
    assert!(s.connect(tls12, "localhost").await.is_err());
    let tls13 = s.client_config(&[&TLS13], None);
    let stream = s.connect(tls13, "localhost").await.expect("TLS 1.3");
    assert_eq!(https::get(stream, "/version").await.0, 200);
    // Without the flag TLS 1.2 is served.
    let plain = Setup::start(&[]);
    let tls12 = plain.client_config(&[&TLS12], None);
    let stream = plain.connect(tls12, "localhost").await.expect("TLS 1.2");
    assert_eq!(https::get(stream, "/version").await.0, 200);
}

#[tokio::test]
async fn tls_cipher_suites_limit_what_tls12_clients_get() {
    // kapi's generated serving key is ECDSA.
    let s = Setup::start(&flags(&[
        "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA",
    ]));
    let other = s.client_config(
        &[&TLS12],
        Some(&[CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]),
    );
    assert!(s.connect(other, "localhost").await.is_err());
    let allowed = s.client_config(
        &[&TLS12],
        Some(&[CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]),
    );
    let stream = s
        .connect(allowed, "localhost")
        .await
        .expect("allowed suite");
    assert_eq!(https::get(stream, "/version").await.0, 200);
    // TLS 1.3 suites are not configurable, as in Go.
    let tls13 = s.client_config(&[&TLS13], None);
    assert!(s.connect(tls13, "localhost").await.is_ok());
    assert!(
        s.server.log_text().contains("TLS_RSA_WITH_AES_128_CBC_SHA"),
        "the suite kapi cannot serve is named:\n{}",
        s.server.log_text()
    );
}

#[tokio::test]
async fn tls_sni_cert_key_serves_a_certificate_per_name() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("sni-ca");
    let (crt, key) = (tmp.path().join("sni.crt"), tmp.path().join("sni.key"));
    pki::write_pair(&ca.serving("sni-serving"), &crt, &key);
    let sni = format!(
        "--tls-sni-cert-key={},{}:sni.example.com,*.wild.example",
        crt.display(),
        key.display()
    );
    let s = Setup::start(&[sni]);
    for (name, want) in [
        ("sni.example.com", "sni-serving"),
        ("a.wild.example", "sni-serving"),
        ("localhost", "kube-apiserver"),
        ("b.a.wild.example", "kube-apiserver"),
    ] {
        let recorder = Arc::new(Recorder::default());
        s.connect(recorder.config(), name).await.expect(name);
        let cn = recorder.common_name();
        if want == "kube-apiserver" {
            assert_ne!(cn, "sni-serving", "{name}");
        } else {
            assert_eq!(cn, want, "{name}");
        }
    }
}

#[tokio::test]
async fn http2_max_streams_per_connection_is_announced() {
    let s = Setup::start(&flags(&["--http2-max-streams-per-connection=7"]));
    let mut h2 = s.h2().await;
    send_version(&mut h2).await.expect("a request");
    assert_eq!(h2.current_max_send_streams(), 7);
    let plain = Setup::start(&[]);
    let mut h2 = plain.h2().await;
    send_version(&mut h2).await.expect("a request");
    assert_eq!(h2.current_max_send_streams(), 100, "upstream's default");
}

#[tokio::test]
async fn disable_http2_serving_negotiates_http1() {
    let s = Setup::start(&flags(&["--disable-http2-serving"]));
    let mut config = (*s.client_config(&[&TLS13], None)).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let stream = s.connect(Arc::new(config), "localhost").await.unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
}

/// A POST of `size` bytes over HTTP/2, sent as fast as flow control lets
/// it; the answer's status and body.
async fn post_h2(h2: &mut h2::client::SendRequest<bytes::Bytes>, size: usize) -> (u16, String) {
    let ready = h2.clone().ready().await.expect("ready");
    *h2 = ready;
    let req = http::Request::post("https://localhost/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (resp, mut send) = h2.send_request(req, false).expect("send");
    let sender = tokio::spawn(async move {
        let mut left = size;
        while left > 0 {
            send.reserve_capacity(left.min(64 * 1024));
            let Some(Ok(n)) = futures::future::poll_fn(|cx| send.poll_capacity(cx)).await else {
                return; // reset by the server
            };
            let n = n.min(left);
            if send
                .send_data(bytes::Bytes::from(vec![b' '; n]), n == left)
                .is_err()
            {
                return;
            }
            left -= n;
        }
    });
    let resp = resp.await.expect("an answer, not a reset stream");
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("the answer's body");
        let _ = body.flow_control().release_capacity(chunk.len());
        text.extend_from_slice(&chunk);
    }
    let _ = sender.await;
    (code, String::from_utf8_lossy(&text).into_owned())
}

#[tokio::test]
async fn an_oversized_body_over_http2_gets_the_413_status() {
    let s = Setup::start(&[]);
    // Whether a reset stream replaced the answer depended on timing: several
    // connections, several bodies each.
    for _ in 0..4 {
        let mut h2 = s.h2().await;
        for size in [4 << 20, 12 << 20] {
            let (code, body) = post_h2(&mut h2, size).await;
            assert_eq!(code, 413, "{body}");
            let status: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(status["reason"], "RequestEntityTooLarge");
            let message = "Request entity too large: limit is 3145728";
            assert_eq!(status["message"], message);
        }
        // The connection still serves.
        assert_eq!(send_version(&mut h2).await.expect("a request"), 200);
    }
    // curl (nghttp2) reported a stream error instead of the 413 when the
    // server stopped reading.
    let body = s.dir.path().join("big.json");
    std::fs::write(&body, vec![b' '; 4 << 20]).unwrap();
    let pki = s.pki();
    for _ in 0..4 {
        let out = std::process::Command::new("curl")
            .args([
                "-sS",
                "--http2",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{http_version}",
            ])
            .arg("--cacert")
            .arg(pki.join("ca.crt"))
            .arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"))
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", body.display()))
            .arg(format!(
                "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
                s.port
            ))
            .output()
            .expect("curl runs");
        let answer = String::from_utf8_lossy(&out.stdout);
        let errors = String::from_utf8_lossy(&out.stderr);
        assert_eq!(answer, "413 2", "{errors}");
    }
}

async fn send_version(h2: &mut h2::client::SendRequest<bytes::Bytes>) -> Result<u16, h2::Error> {
    let ready = h2.clone().ready().await?;
    *h2 = ready;
    let req = http::Request::get("https://localhost/version")
        .body(())
        .unwrap();
    let (resp, _) = h2.send_request(req, true)?;
    let resp = resp.await?;
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok(code)
}

/// Requests sent on one HTTP/2 connection until it ends (at most `limit`).
async fn requests_until_goaway(s: &Setup, limit: usize) -> usize {
    let mut h2 = s.h2().await;
    for n in 0..limit {
        if send_version(&mut h2).await.is_err() {
            return n;
        }
    }
    limit
}

#[tokio::test]
async fn goaway_chance_closes_http2_connections() {
    // At 1 in 50, 3,000 requests all passing would happen with probability 1e-26.
    let s = Setup::start(&flags(&["--goaway-chance=0.02"]));
    let served = requests_until_goaway(&s, 3000).await;
    assert!(served < 3000, "no GOAWAY after {served} requests");
    assert!(served >= 1, "the request that drew GOAWAY is answered");
    let plain = Setup::start(&[]);
    assert_eq!(requests_until_goaway(&plain, 3000).await, 3000);
}

/// Bad values of the flags this part wires stop the start with upstream's message.
#[test]
fn bad_flag_values_are_refused_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["--tls-min-version=VersionTLS14"][..],
            "Error: unknown tls version \"VersionTLS14\"\n",
        ),
        (
            &["--tls-cipher-suites=TLS_NOPE"][..],
            "Error: Cipher suite TLS_NOPE not supported or doesn't exist\n",
        ),
        (
            &["--goaway-chance=0.5"][..],
            "Error: --goaway-chance can not be less than 0 or greater than 0.02\n",
        ),
        (
            &["--feature-gates=NoSuchGate=true"][..],
            "Error: unrecognized feature gate: NoSuchGate\n",
        ),
        (
            &["--feature-gates=CustomResourceFieldSelectors=false"][..],
            "Error: cannot set feature gate CustomResourceFieldSelectors to false, feature is locked to true\n",
        ),
        (
            &["--runtime-config=api/all=maybe"][..],
            "Error: invalid value api/all=maybe\n",
        ),
        (
            &["--admission-control=NamespaceLifecycle", "--enable-admission-plugins=NodeRestriction"][..],
            "Error: admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive\n",
        ),
        (
            &["--admission-control-config-file=/nonexistent/admission.yaml"][..],
            "Error: failed to initialize admission: unable to read admission control configuration from \"/nonexistent/admission.yaml\" [open /nonexistent/admission.yaml: no such file or directory]\n",
        ),
        (
            &["--etcd-servers-overrides=events#http://127.0.0.1:1"][..],
            "Error: --etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated\n",
        ),
        (
            &["--show-hidden-metrics-for-version=1.30"][..],
            "Error: --show-hidden-metrics-for-version must be omitted or have the value '1.32'. Only the previous minor version is allowed\n",
        ),
        (
            &["--disabled-metrics=9lives"][..],
            "Error: --disabled-metrics must be fully qualified metric names matching",
        ),
        (
            &["--allow-metric-labels=apiserver_request_total=200"][..],
            "Error: --allow-metric-labels must have a list of kv pair with format `metricName,labelName=labelValue, labelValue,...`\n",
        ),
        (
            &["--kubernetes-service-node-port=443"][..],
            "Error: kubernetes service node port range 30000-32767 doesn't contain 443\n",
        ),
        (
            &["--strict-transport-security-directives=max-age,preload"][..],
            "Error: --strict-transport-security-directives invalid, allowed values: max-age=expireTime, includeSubDomains, preload.",
        ),
        (
            &["--cors-allowed-origins=example.com"][..],
            "Error: --cors-allowed-origins has an invalid regular expression: regular expression does not pin to start/end of host in the origin header",
        ),
    ] {
        let mut args = args.to_vec();
        let cert_dir = format!("--cert-dir={}", dir.path().display());
        args.extend(["--secure-port=0", "--bind-address=127.0.0.1", &cert_dir]);
        let (code, _, err) = run_once(dir.path(), &args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--permit-port-sharing`: kapi listens on a port another socket with
/// SO_REUSEPORT already holds; without the flag the port is taken.
#[test]
fn permit_port_sharing_shares_the_port() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let holder = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseport(true).unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.listen(16).unwrap()
    });
    let port = holder.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            format!("--cert-dir={}", dir.path().join("certs").display()),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let taken = base(&[]);
    let argv: Vec<&str> = taken.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(dir.path(), &argv);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Address already in use"), "{err}");
    let server = crate::proc::Server::start(dir.path(), &base(&["--permit-port-sharing"]));
    assert_eq!(server.port(), port);
    drop(holder);
}

/// The metrics flags on a real command line: a disabled family is not
/// served; label values outside an allow-list are `unexpected`; object
/// counts are not sampled with a poll period of 0.
#[tokio::test]
async fn metrics_flags_shape_what_metrics_serves() {
    let s = Setup::start(&flags(&[
        "--disabled-metrics=apiserver_request_duration_seconds",
        "--allow-metric-labels=\"apiserver_request_total,resource=namespaces,pods\"",
        "--etcd-count-metric-poll-period=0",
    ]));
    for path in ["/api/v1/namespaces", "/version", "/metrics"] {
        let tls = s.client_config(&[&TLS13], None);
        let stream = s.connect(tls, "localhost").await.expect("TLS");
        assert_eq!(https::get(stream, path).await.0, 200, "{path}");
    }
    let tls = s.client_config(&[&TLS13], None);
    let stream = s.connect(tls, "localhost").await.expect("TLS");
    let (code, text) = https::get(stream, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        !text.contains("apiserver_request_duration_seconds"),
        "disabled"
    );
    assert!(text.contains("disabled_metrics_total 1"), "{text}");
    assert!(!text.contains("apiserver_storage_objects{"), "counts off");
    let totals: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .collect();
    assert!(
        totals.iter().any(|l| l.contains("resource=\"namespaces\"")),
        "{totals:?}"
    );
    // /version and /metrics name no resource: outside the list.
    assert!(
        totals.iter().any(|l| l.contains("resource=\"unexpected\"")),
        "{totals:?}"
    );
    assert!(
        totals.iter().all(|l| l.contains("resource=\"namespaces\"")
            || l.contains("resource=\"pods\"")
            || l.contains("resource=\"unexpected\"")),
        "{totals:?}"
    );
}

/// Scrape `/metrics` of `s` as the admin.
async fn scrape(s: &Setup) -> String {
    let tls = s.client_config(&[&TLS13], None);
    let stream = s.connect(tls, "localhost").await.expect("TLS");
    let (code, text) = https::get(stream, "/metrics").await;
    assert_eq!(code, 200, "{text}");
    text
}

/// The value of the one series of `text` whose line starts with `series`.
fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The storage size metrics against a real etcd: `apiserver_storage_size_bytes`
/// asked at scrape time (`storage_cluster_id="etcd-0"`), and the per-endpoint
/// `apiserver_storage_db_total_size_in_bytes` that
/// `--etcd-db-metric-poll-interval` drives, served only with
/// `--show-hidden-metrics-for-version=1.32` (upstream deprecated it in 1.28),
/// and not polled with an interval of 0.
#[tokio::test]
async fn storage_size_metrics_poll_each_etcd_member() {
    let etcd = tokio::task::spawn_blocking(kapi_testkit::Etcd::start)
        .await
        .unwrap();
    let servers = format!("--etcd-servers={}", etcd.client_url);
    let endpoint = format!("endpoint=\"{}\"", etcd.client_url);
    let shown = Setup::start(&flags(&[
        &servers,
        "--show-hidden-metrics-for-version=1.32",
        "--etcd-db-metric-poll-interval=1s",
    ]));
    let size = "apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"}";
    let total = format!("apiserver_storage_db_total_size_in_bytes{{{endpoint}}}");
    let mut text = scrape(&shown).await;
    for _ in 0..50 {
        if text.contains(&total) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        text = scrape(&shown).await;
    }
    let bytes = series_value(&text, size).expect("storage size");
    assert!(bytes > 0.0, "{text}");
    let polled = series_value(&text, &total).expect("polled size");
    assert!(polled > 0.0, "{text}");
    drop(shown);

    let hidden = Setup::start(&flags(&[&servers, "--etcd-db-metric-poll-interval=1s"]));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let text = scrape(&hidden).await;
    assert!(series_value(&text, size).is_some_and(|b| b > 0.0), "{text}");
    assert!(
        !text.contains("apiserver_storage_db_total_size_in_bytes"),
        "hidden: {text}"
    );
    drop(hidden);

    let off = Setup::start(&flags(&[
        &servers,
        "--show-hidden-metrics-for-version=1.32",
        "--etcd-db-metric-poll-interval=0",
    ]));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let text = scrape(&off).await;
    assert!(!text.contains(&total), "not polled: {text}");
}

/// The embedded store reports its data directory's size as `etcd-0`.
#[tokio::test]
async fn storage_size_metric_of_the_embedded_store() {
    let s = Setup::start(&[]);
    let text = scrape(&s).await;
    let size = "apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"}";
    assert!(series_value(&text, size).is_some_and(|b| b > 0.0), "{text}");
}

/// `--emulated-version`: `/version` reports the emulated minor and the
/// minimum compatibility one (its minor minus one, not below 1.31); versions
/// outside 1.31–1.33, a gate set that did not exist yet at the emulated
/// version, and the forward-compatible switches without an older emulated
/// version stop the start with upstream's messages.
#[tokio::test]
async fn emulated_version_shows_in_version_and_is_checked() {
    for (flag, emulated, min_compat) in [("1.32", "32", "31"), ("kube=1.31", "31", "31")] {
        let s = Setup::start(&flags(&[
            &format!("--emulated-version={flag}"),
            "--emulation-forward-compatible=true",
        ]));
        let tls = s.client_config(&[&TLS13], None);
        let stream = s.connect(tls, "localhost").await.expect("TLS");
        let (code, text) = https::get(stream, "/version").await;
        assert_eq!(code, 200, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["minor"], "33", "{v}");
        assert_eq!(v["emulationMinor"], emulated, "{v}");
        assert_eq!(v["minCompatibilityMinor"], min_compat, "{v}");
    }
    let dir = tempfile::tempdir().unwrap();
    let base = [
        format!("--cert-dir={}", dir.path().join("certs").display()),
        "--secure-port=0".to_string(),
        "--bind-address=127.0.0.1".to_string(),
    ];
    for (extra, message) in [
        ("--emulated-version=1.30", "emulation version 1.30 is not between [1.31, 1.33.0]"),
        ("--emulated-version=wardle=1.2", "component not registered: wardle"),
        ("--emulated-version=1.32.1", "patch version not allowed, got: kube=1.32.1"),
        (
            "--emulated-version=1.31 --feature-gates=ExternalServiceAccountTokenSigner=true",
            "cannot set feature gate ExternalServiceAccountTokenSigner to true, feature is PreAlpha at emulated version 1.31",
        ),
        (
            "--runtime-config-emulation-forward-compatible=true",
            "ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version",
        ),
    ] {
        let mut argv: Vec<&str> = base.iter().map(String::as_str).collect();
        argv.extend(extra.split(' '));
        let (code, _, err) = run_once(dir.path(), &argv);
        assert_eq!(code, 1, "{extra}: {err}");
        assert!(err.contains(message), "{extra}: {err}");
    }
}
