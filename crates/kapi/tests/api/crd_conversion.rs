//! Webhook conversion of custom resources, against a conversion webhook the
//! test starts on loopback (HTTPS with its own CA, given to the definition as
//! `caBundle`): objects stored at v1 are read at v2 and written at v2 are
//! stored at v1 (`spec.cronSpec` ⇄ `spec.schedule`); lists go to the webhook
//! in one review, watches are converted; a webhook that is down or answers
//! wrongly makes the request fail with upstream's 500 and leaves storage
//! alone. Also: the definition's webhook config is validated, a service
//! reference is resolved through its Endpoints, and defaults added to a
//! schema later show on read.
//!
//! The tests run on the multi-threaded runtime: a conversion blocks its
//! caller (`block_in_place`), and the webhook runs on its own thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use kube::api::{DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::{json, Value};

use crate::crd::{crd_api, establish};
use crate::harness::{self, api_error, TestServer};

/// What the test webhook answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Convert,
    WrongUid,
    WrongCount,
    Refuse,
    RenameObject,
}

/// A conversion webhook on `127.0.0.1`, serving until dropped.
struct Webhook {
    port: u16,
    ca_pem: String,
    mode: Arc<Mutex<Mode>>,
    /// The number of objects in each review received.
    batches: Arc<Mutex<Vec<usize>>>,
    requests: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

impl Webhook {
    fn start(sans: &[&str]) -> Webhook {
        let dir = tempfile::tempdir().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let pki = kapi_server::tls::load_or_generate(dir.path(), &sans).unwrap();
        let tls = kapi_server::tls::server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[])
            .unwrap();
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(Mode::Convert));
        let batches = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = (mode.clone(), batches.clone(), requests.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(serve(std_listener, tls, state, stopped));
        });
        Webhook {
            port,
            ca_pem: pki.ca_cert_pem,
            mode,
            batches,
            requests,
            stop: Some(stop),
            _dir: dir,
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn ca_bundle(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }
}

type State = (Arc<Mutex<Mode>>, Arc<Mutex<Vec<usize>>>, Arc<AtomicUsize>);

async fn serve(
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    state: State,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        let tcp = tokio::select! {
            r = listener.accept() => match r { Ok((tcp, _)) => tcp, Err(_) => continue },
            _ = &mut stopped => return,
        };
        let (acceptor, state) = (acceptor.clone(), state.clone());
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(tcp).await else {
                return;
            };
            let svc = hyper::service::service_fn(move |req| handle(req, state.clone()));
            let _ =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
        });
    }
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    (mode, batches, requests): State,
) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, std::convert::Infallible> {
    use http_body_util::BodyExt;
    requests.fetch_add(1, Ordering::SeqCst);
    assert_eq!(req.uri().path(), "/convert");
    assert_eq!(req.uri().query(), Some("timeout=30s"));
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap();
    let objects = review["request"]["objects"].as_array().cloned().unwrap();
    batches.lock().unwrap().push(objects.len());
    let desired = review["request"]["desiredAPIVersion"].as_str().unwrap();
    let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
    let mut uid = review["request"]["uid"].clone();
    let mut result = json!({"status": "Success"});
    match *mode.lock().unwrap() {
        Mode::Convert => {}
        Mode::WrongUid => uid = json!("not-the-request"),
        Mode::WrongCount => converted.clear(),
        Mode::Refuse => result = json!({"status": "Failure", "message": "no conversion today"}),
        Mode::RenameObject => {
            for o in &mut converted {
                o["metadata"]["name"] = json!("renamed");
            }
        }
    }
    let answer = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": converted, "result": result}});
    let out = hyper::Response::builder()
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            answer.to_string(),
        )))
        .unwrap();
    Ok(out)
}

/// v1 `spec.cronSpec` is v2 `spec.schedule`; a label records the conversion.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    let spec = out["spec"].as_object_mut().unwrap();
    let (from, to) = if desired.ends_with("/v2") {
        ("cronSpec", "schedule")
    } else {
        ("schedule", "cronSpec")
    };
    if let Some(v) = spec.remove(from) {
        spec.insert(to.into(), v);
    }
    out["apiVersion"] = json!(desired);
    out["metadata"]["labels"]["converted-to"] = json!(desired.rsplit('/').next().unwrap());
    out
}

fn widget_crd(client_config: Value) -> Value {
    let version = |name: &str, field: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {
            "group": "conv.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", "cronSpec", true), version("v2", "schedule", false)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": client_config}}
        }
    })
}

fn widgets(s: &TestServer, version: &str) -> Api<DynamicObject> {
    harness::dynamic(
        &s.client,
        "conv.example.com",
        version,
        "Widget",
        "widgets",
        Some("default"),
    )
}

fn widget(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": format!("conv.example.com/{version}"),
        "kind": "Widget", "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

async fn stored(s: &TestServer, name: &str) -> Option<Value> {
    let key = format!("/conv.example.com/widgets/default/{name}");
    let kv = s.backend.get(&key, None).await.unwrap()?;
    Some(serde_json::from_slice(&kv.value).unwrap())
}

async fn start_with_webhook() -> (TestServer, Webhook) {
    let s = harness::start().await;
    let hook = Webhook::start(&["127.0.0.1"]);
    let url = format!("https://127.0.0.1:{}/convert", hook.port);
    establish(
        &s,
        widget_crd(json!({"url": url, "caBundle": hook.ca_bundle()})),
    )
    .await;
    (s, hook)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_at_v1_served_at_v2_through_the_webhook() {
    let (s, hook) = start_with_webhook().await;
    let v2 = widgets(&s, "v2");
    let created = v2
        .create(
            &PostParams::default(),
            &widget("v2", "a", json!({"schedule": "*/5"})),
        )
        .await
        .unwrap();
    assert_eq!(created.types.unwrap().api_version, "conv.example.com/v2");
    assert_eq!(created.data["spec"], json!({"schedule": "*/5"}));
    let raw = stored(&s, "a").await.unwrap();
    assert_eq!(raw["apiVersion"], "conv.example.com/v1");
    assert_eq!(raw["spec"], json!({"cronSpec": "*/5"}));
    // Labels the webhook changes are kept (upstream restores the rest of metadata).
    assert_eq!(raw["metadata"]["labels"]["converted-to"], "v1");

    let v1 = widgets(&s, "v1");
    let as_v1 = v1.get("a").await.unwrap();
    assert_eq!(as_v1.data["spec"], json!({"cronSpec": "*/5"}));
    let as_v2 = v2.get("a").await.unwrap();
    assert_eq!(as_v2.data["spec"], json!({"schedule": "*/5"}));
    assert_eq!(as_v2.metadata.uid, as_v1.metadata.uid);

    // A list goes to the webhook in one review.
    v1.create(
        &PostParams::default(),
        &widget("v1", "b", json!({"cronSpec": "@daily"})),
    )
    .await
    .unwrap();
    hook.batches.lock().unwrap().clear();
    let list = v2.list(&ListParams::default()).await.unwrap();
    let specs: Vec<Value> = list.items.iter().map(|o| o.data["spec"].clone()).collect();
    assert_eq!(
        specs,
        vec![json!({"schedule": "*/5"}), json!({"schedule": "@daily"})]
    );
    assert_eq!(*hook.batches.lock().unwrap(), vec![2]);

    // Watch events arrive converted.
    let mut events = v2
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match events.try_next().await.unwrap().expect("an event") {
            WatchEvent::Added(o) => seen.push(o.data["spec"].clone()),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    seen.sort_by_key(|v| v.to_string());
    assert_eq!(
        seen,
        vec![json!({"schedule": "*/5"}), json!({"schedule": "@daily"})]
    );
    v1.patch(
        "b",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"cronSpec": "@hourly"}})),
    )
    .await
    .unwrap();
    loop {
        match events.try_next().await.unwrap().expect("an event") {
            WatchEvent::Modified(o) => {
                assert_eq!(o.data["spec"], json!({"schedule": "@hourly"}));
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    // An update at v2 goes back through the webhook to storage.
    let mut cur = v2.get("a").await.unwrap();
    cur.data["spec"] = json!({"schedule": "@weekly"});
    v2.replace("a", &PostParams::default(), &cur).await.unwrap();
    assert_eq!(
        stored(&s, "a").await.unwrap()["spec"],
        json!({"cronSpec": "@weekly"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_answers_and_a_webhook_that_is_down_fail_with_500() {
    let (s, mut hook) = start_with_webhook().await;
    let v1 = widgets(&s, "v1");
    let v2 = widgets(&s, "v2");
    v1.create(
        &PostParams::default(),
        &widget("v1", "a", json!({"cronSpec": "x"})),
    )
    .await
    .unwrap();
    let gvk = "conv.example.com/v1, Kind=Widget";
    let cases = [
        (Mode::WrongUid, format!("conversion webhook for {gvk} failed: expected response.uid=")),
        (Mode::WrongCount, format!("conversion webhook for {gvk} returned 0 objects, expected 1")),
        (Mode::Refuse, format!("conversion webhook for {gvk} failed: no conversion today")),
        (
            Mode::RenameObject,
            format!("conversion webhook for {gvk} returned invalid object: must have the same name: a != renamed"),
        ),
    ];
    for (mode, message) in cases {
        hook.set(mode);
        let err = api_error(v2.get("a").await);
        assert_eq!(err.code, 500, "{mode:?}: {err:?}");
        assert_eq!(err.reason, "", "{mode:?}");
        assert!(
            err.message.starts_with(&message),
            "{mode:?}: {}",
            err.message
        );
        // The list fails the same way (a list of one object is one review).
        let (code, _) = s
            .get_json("/apis/conv.example.com/v2/namespaces/default/widgets")
            .await;
        assert_eq!(code, 500, "{mode:?}");
    }
    // A write at v2 cannot reach the storage version: nothing is stored.
    hook.set(Mode::Refuse);
    let err = api_error(
        v2.create(
            &PostParams::default(),
            &widget("v2", "b", json!({"schedule": "y"})),
        )
        .await,
    );
    assert_eq!(err.code, 500);
    assert!(stored(&s, "b").await.is_none());

    // Down: the connection is refused.
    let port = hook.port;
    hook.stop.take().unwrap().send(()).unwrap();
    let mut message = String::new();
    for _ in 0..100 {
        let err = api_error(v2.get("a").await);
        assert_eq!(err.code, 500);
        message = err.message;
        if message.contains("connection refused") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        message,
        format!(
            "conversion webhook for {gvk} failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    // The storage version needs no webhook, and the server keeps serving.
    assert_eq!(
        v1.get("a").await.unwrap().data["spec"],
        json!({"cronSpec": "x"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_reference_is_resolved_through_its_endpoints() {
    let s = harness::start().await;
    let hook = Webhook::start(&["conv.default.svc"]);
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "conv", "namespace": "default"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}});
    let eps = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "conv", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": hook.port}]}]});
    for (path, body) in [
        ("/api/v1/namespaces/default/services", svc),
        ("/api/v1/namespaces/default/endpoints", eps),
    ] {
        let (code, out) = s
            .send_json("POST", path, body.to_string().into_bytes())
            .await;
        assert_eq!(code, 201, "{out}");
    }
    let cc = json!({"service": {"namespace": "default", "name": "conv", "path": "/convert"},
                    "caBundle": hook.ca_bundle()});
    let crd = establish(&s, widget_crd(cc)).await;
    let crd = serde_json::to_value(crd).unwrap();
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
    widgets(&s, "v2")
        .create(
            &PostParams::default(),
            &widget("v2", "a", json!({"schedule": "s"})),
        )
        .await
        .unwrap();
    assert_eq!(
        stored(&s, "a").await.unwrap()["spec"],
        json!({"cronSpec": "s"})
    );
    assert!(hook.requests.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn webhook_config_is_validated_as_upstream() {
    let s = harness::start().await;
    let cases = [
        (
            json!({"url": "http://example.com/convert"}),
            json!(["v1"]),
            "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            json!({"url": "https://example.com/convert?x=1"}),
            json!(["v1"]),
            "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
        ),
        (
            json!({"url": "https://example.com", "service": {"namespace": "a", "name": "b"}}),
            json!(["v1"]),
            "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
        ),
        (
            json!({"service": {"namespace": "", "name": "b", "path": "/a//b"}}),
            json!(["v1"]),
            "spec.conversion.webhookClientConfig.service.namespace: Required value: service namespace is required",
        ),
        (
            json!({"url": "https://example.com", "caBundle": "bm90IGEgY2VydA=="}),
            json!(["v1"]),
            "spec.conversion.webhookClientConfig.caBundle: Invalid value",
        ),
        (
            json!({"url": "https://example.com"}),
            json!(["v3"]),
            "must include at least one of v1, v1beta1",
        ),
    ];
    for (cc, versions, want) in cases {
        let mut crd = widget_crd(cc);
        crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = versions;
        let obj = serde_json::from_value(crd).unwrap();
        let err = api_error(crd_api(&s).create(&PostParams::default(), &obj).await);
        assert_eq!(err.code, 422, "{}", err.message);
        assert!(
            err.message.contains(want),
            "want {want}\n got {}",
            err.message
        );
    }
}

#[tokio::test]
async fn status_subresource_limits_the_root_schema() {
    let s = harness::start().await;
    let mut crd = widget_crd(json!({}));
    crd["spec"]["conversion"] = json!({"strategy": "None"});
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-embedded-resource"] =
        json!(true);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["apiVersion"] =
        json!({"type": "string"});
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["kind"] =
        json!({"type": "string"});
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
        json!({"type": "object"});
    let obj = serde_json::from_value(crd).unwrap();
    let err = api_error(crd_api(&s).create(&PostParams::default(), &obj).await);
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.versions[0].schema.openAPIV3Schema: Invalid value: ")
            && err.message.contains(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn defaults_added_later_show_on_read() {
    let s = harness::start().await;
    let mut crd = widget_crd(json!({}));
    crd["spec"]["conversion"] = json!({"strategy": "None"});
    crd["spec"]["versions"] = json!([crd["spec"]["versions"][0].clone()]);
    establish(&s, crd).await;
    let v1 = widgets(&s, "v1");
    v1.create(
        &PostParams::default(),
        &widget("v1", "a", json!({"cronSpec": "x"})),
    )
    .await
    .unwrap();
    let mut def = crd_api(&s).get("widgets.conv.example.com").await.unwrap();
    let mut value = serde_json::to_value(&def).unwrap();
    value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = json!({"type": "string", "default": "blue"});
    def = serde_json::from_value(value).unwrap();
    crd_api(&s)
        .replace("widgets.conv.example.com", &PostParams::default(), &def)
        .await
        .unwrap();
    let mut spec = Value::Null;
    for _ in 0..500 {
        spec = v1.get("a").await.unwrap().data["spec"].clone();
        if spec.get("color").is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(spec, json!({"cronSpec": "x", "color": "blue"}));
    // On read only: storage still holds the object as written.
    assert_eq!(
        stored(&s, "a").await.unwrap()["spec"],
        json!({"cronSpec": "x"})
    );
    let list = v1.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items[0].data["spec"]["color"], "blue");
}
