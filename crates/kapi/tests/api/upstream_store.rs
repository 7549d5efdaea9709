//! kapi over storage kube-apiserver wrote: the etcd that kube-apiserver
//! 1.28.4 and its controller manager filled (`tests/fixtures/upstream-etcd-1.28`:
//! protobuf for built-in kinds, JSON for the CRD, APIServices and the custom
//! object; FlowSchemas at flowcontrol `v1beta3` and EndpointSlices at
//! discovery `v1beta1`, the storage versions of 1.28), loaded into a real etcd
//! and into the embedded store. kapi must serve every object as
//! kube-apiserver served it, field for field, except where 1.33 reads the
//! same bytes differently ([`differences_in_1_33`], each one named).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use kapi_storage::embedded::EmbeddedConfig;
use kapi_storage::etcd::EtcdConfig;
use kapi_storage::factory::{self, StorageConfig};
use kapi_storage::slot::BackendSlot;
use kapi_storage::Backend;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/upstream-etcd-1.28"
);

fn read_json(file: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/{file}")).expect("fixture file");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// Every key (without upstream's `/registry` prefix) and value of the dump.
pub fn dump() -> Vec<(String, Bytes)> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let text = |v: &Value| b64.decode(v.as_str().expect("base64")).expect("base64");
    read_json("etcd-dump.json")["kvs"]
        .as_array()
        .expect("kvs")
        .iter()
        .map(|kv| {
            let key = String::from_utf8(text(&kv["key"])).expect("utf-8 key");
            let key = key
                .strip_prefix("/registry")
                .expect("upstream prefix")
                .to_owned();
            (key, Bytes::from(text(&kv["value"])))
        })
        .collect()
}

/// The objects as kube-apiserver 1.28.4 served them (`kubectl get -o json`).
fn served() -> Vec<Value> {
    ["namespaced-objects.json", "cluster-objects.json"]
        .iter()
        .flat_map(|f| read_json(f)["items"].as_array().expect("items").clone())
        .collect()
}

async fn load(slot: &BackendSlot, kvs: &[(String, Bytes)]) {
    slot.wait_ready(Duration::from_secs(10))
        .await
        .expect("ready");
    let backend = slot.current().expect("backend");
    for (key, value) in kvs {
        backend.create(key, value.clone()).await.expect("load key");
    }
}

/// What kube-apiserver 1.33 serves differently from 1.28 for the same stored
/// bytes — it applies 1.33's defaults to what it reads — made to `want`.
fn differences_in_1_33(want: &mut Value) {
    if want["kind"] == "Job" {
        // `podReplacementPolicy` (beta, on since 1.29) defaults to
        // `TerminatingOrFailed` without a pod failure policy.
        want["spec"]["podReplacementPolicy"] = json!("TerminatingOrFailed");
    }
}

/// `obj` without what differs by construction: `managedFields` (kubectl hides
/// them) and `resourceVersion` (the revision in this etcd, not upstream's).
fn comparable(mut obj: Value) -> Value {
    if let Some(m) = obj["metadata"].as_object_mut() {
        m.shift_remove("managedFields");
        let rv = m.shift_remove("resourceVersion");
        assert!(rv.and_then(|r| r.as_str()?.parse::<u64>().ok()).is_some());
    }
    obj
}

/// The URL path of `obj` on kapi.
fn path_of(s: &TestServer, obj: &Value) -> String {
    let av = obj["apiVersion"].as_str().expect("apiVersion");
    let kind = obj["kind"].as_str().expect("kind");
    let entry = s
        .server
        .apis
        .resolve_kind(av, kind)
        .unwrap_or_else(|| panic!("kapi serves {av} {kind}"));
    let base = if av.contains('/') {
        format!("/apis/{av}")
    } else {
        format!("/api/{av}")
    };
    let name = obj["metadata"]["name"].as_str().expect("name");
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{base}/namespaces/{ns}/{}/{name}", entry.def.resource),
        None => format!("{base}/{}/{name}", entry.def.resource),
    }
}

/// Every fixture object, read from kapi as JSON (GET, from the cache and
/// from storage) and as protobuf, is the object kube-apiserver served.
async fn check_served(s: &TestServer) {
    let objects = served();
    assert_eq!(objects.len(), 54);
    for want in objects {
        let path = path_of(s, &want);
        let mut want = comparable(want);
        differences_in_1_33(&mut want);
        for query in ["", "?resourceVersion=0"] {
            let (code, got) = s.get_json(&format!("{path}{query}")).await;
            assert_eq!(code, 200, "{path}: {got}");
            let d = differences(&comparable(got), &want);
            assert!(d.is_empty(), "{path}{query}: {d:#?}");
        }
        if want["kind"] != "Example" {
            let got = s.get_protobuf(&path).await;
            let want = as_protobuf_carries_it(&want);
            let d = differences(&comparable(got), &want);
            assert!(d.is_empty(), "{path} as protobuf: {d:#?}");
        }
    }
}

/// `obj` as a protobuf response carries it, read into the JSON model: what
/// kube-apiserver's protobuf answer holds too. Two things JSON shows are not
/// in the messages: the type of an embedded object (a StatefulSet's
/// `volumeClaimTemplates[].apiVersion`/`kind`), and zeros of Go's non-pointer
/// fields, which every protobuf writer writes and this model reads as absent
/// (`status.availableReplicas: 0`).
fn as_protobuf_carries_it(obj: &Value) -> Value {
    let bytes = kapi_protobuf::encode_object(obj).expect("encodes");
    kapi_protobuf::decode_object(&bytes, None).expect("decodes")
}

/// Where `got` and `want` differ: each path with both values.
pub fn differences(got: &Value, want: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(got, want, "", &mut out);
    out
}

fn diff_into(got: &Value, want: &Value, path: &str, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                let (a, b) = (
                    g.get(k).unwrap_or(&Value::Null),
                    w.get(k).unwrap_or(&Value::Null),
                );
                if g.contains_key(k) != w.contains_key(k) {
                    out.push(format!("{path}.{k}: got {a}, want {b}"));
                } else {
                    diff_into(a, b, &format!("{path}.{k}"), out);
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                diff_into(a, b, &format!("{path}[{i}]"), out);
            }
        }
        _ if got != want => out.push(format!("{path}: got {got}, want {want}")),
        _ => {}
    }
}

/// The fixture namespace lists as upstream listed it: the same names of
/// every kind (events included), JSON and protobuf alike.
async fn check_lists(s: &TestServer) {
    let mut want: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for obj in served() {
        if obj["metadata"]["namespace"] == "fixture" {
            let list = path_of(s, &obj).rsplit_once('/').unwrap().0.to_owned();
            let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
            want.entry(list).or_default().push(name);
        }
    }
    want.insert("/api/v1/namespaces/fixture/events".into(), events());
    for (list, mut names) in want {
        names.sort();
        let (code, got) = s.get_json(&list).await;
        assert_eq!(code, 200, "{list}");
        let got: Vec<String> = got["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, names, "{list}");
    }
}

/// The names of the fixture namespace's events in the dump.
fn events() -> Vec<String> {
    dump()
        .into_iter()
        .filter_map(|(k, _)| k.strip_prefix("/events/fixture/").map(str::to_owned))
        .collect()
}

/// kube-apiserver's etcd, as it left it, under kapi.
#[tokio::test]
async fn serves_upstreams_etcd_as_upstream_served_it() {
    let etcd = kapi_testkit::Etcd::start();
    let slot = factory::open(StorageConfig::Etcd(EtcdConfig::new(vec![etcd
        .client_url
        .clone()])))
    .expect("etcd slot");
    load(&slot, &dump()).await;
    let s = harness::start_over(slot, |_| {}).await;
    check_served(&s).await;
    check_lists(&s).await;
}

/// The same data moved into the embedded store (keys without the prefix).
#[tokio::test]
async fn serves_upstreams_data_from_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let config = EmbeddedConfig::new(dir.path().join("store"));
    let slot = factory::open(StorageConfig::Embedded(config)).expect("embedded");
    load(&slot, &dump()).await;
    let s = harness::start_over(slot, |_| {}).await;
    check_served(&s).await;
    check_lists(&s).await;
}

/// The stored bytes of `key` as the server's storage holds them now.
async fn stored(s: &TestServer, key: &str) -> Bytes {
    let below: Arc<dyn Backend> = s.slot.current().unwrap();
    below.get(key, None).await.unwrap().expect("stored").value
}

/// An object upstream stored and kapi updated keeps every field the update
/// does not change (including `managedFields` and fields kapi has no logic
/// for), and is written as upstream writes it: protobuf for a built-in kind,
/// v1beta1 JSON for a CRD, JSON for a custom object.
#[tokio::test]
async fn updates_keep_every_field_they_do_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let config = EmbeddedConfig::new(dir.path().join("store"));
    let slot = factory::open(StorageConfig::Embedded(config)).expect("embedded");
    let kvs = dump();
    load(&slot, &kvs).await;
    let s = harness::start_over(slot, |_| {}).await;
    let codec = s.server.apis.codec().clone();
    for (key, path, magic) in [
        (
            "/services/specs/fixture/web",
            "/api/v1/namespaces/fixture/services/web",
            &b"k8s\0"[..],
        ),
        (
            "/deployments/fixture/web",
            "/apis/apps/v1/namespaces/fixture/deployments/web",
            &b"k8s\0"[..],
        ),
        (
            "/apiextensions.k8s.io/customresourcedefinitions/examples.fixture.example.com",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/examples.fixture.example.com",
            &b"{\"kind\":\"CustomResourceDefinition\",\"apiVersion\":\"apiextensions.k8s.io/v1beta1\""[..],
        ),
        (
            "/fixture.example.com/examples/first",
            "/apis/fixture.example.com/v1/examples/first",
            &b"{\"apiVersion\":\"fixture.example.com/v1\""[..],
        ),
    ] {
        let before = codec.decode(&stored(&s, key).await).unwrap();
        let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
        let req = http::Request::patch(path)
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(&patch).unwrap())
            .unwrap();
        let (code, body) = s.raw(req).await;
        assert_eq!(code, 200, "{path}: {body}");
        let bytes = stored(&s, key).await;
        assert!(bytes.starts_with(magic), "{key} written as upstream writes it");
        let after = codec.decode(&bytes).unwrap();
        assert_eq!(
            without_update(after.clone()),
            without_update(before.clone()),
            "{key}"
        );
        assert_eq!(after["metadata"]["labels"]["touched"], "yes");
        let entries = |o: &Value| o["metadata"]["managedFields"].as_array().unwrap().len();
        assert!(entries(&after) >= entries(&before), "{key}: managedFields kept");
    }
}

/// What a label update changes: the label, and the updater's managedFields entry.
fn without_update(mut obj: Value) -> Value {
    let meta = obj["metadata"].as_object_mut().unwrap();
    meta.shift_remove("managedFields");
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        labels.shift_remove("touched");
        if labels.is_empty() {
            meta.shift_remove("labels");
        }
    }
    obj
}

/// Every value of the dump reads; what kapi writes back reads the same; a
/// JSON value written back unchanged is the same bytes (Go's JSON: key order,
/// escapes, the final newline).
#[test]
fn every_stored_value_reads_and_writes_back() {
    use kapi_registry::codec::{sniff, Sniffed};
    use kapi_registry::{Origin, StorageCodec};
    let codec = StorageCodec::default().with_on_read(kapi_resources::storage_versions::on_read());
    let (mut protobuf, mut json) = (0, 0);
    for (key, value) in dump() {
        let obj = codec
            .decode(&value)
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        match sniff(&value) {
            Sniffed::Protobuf => {
                protobuf += 1;
                let again = codec.encode(Origin::Builtin, &obj).unwrap();
                assert_eq!(codec.decode(&again).unwrap(), obj, "{key}");
            }
            Sniffed::Json => {
                json += 1;
                let again = codec.encode(Origin::Custom, &obj).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&again),
                    String::from_utf8_lossy(&value),
                    "{key}"
                );
            }
            Sniffed::Other => panic!("{key}: neither protobuf nor JSON"),
        }
    }
    assert_eq!((protobuf, json), (104, 7));
}

/// Custom objects an older kapi stored under `/customresources/<group>/<plural>/`
/// move to upstream's `/<group>/<plural>/` when the server starts, and are
/// served; one whose new key already holds another value stays where it was.
#[tokio::test]
async fn custom_objects_under_kapis_old_keys_move_to_upstreams() {
    let dir = tempfile::tempdir().unwrap();
    let config = EmbeddedConfig::new(dir.path().join("store"));
    let slot = factory::open(StorageConfig::Embedded(config)).expect("embedded");
    let kvs = dump();
    let value_of = |key: &str| {
        kvs.iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("fixture has {key}"))
            .1
            .clone()
    };
    let crd = "/apiextensions.k8s.io/customresourcedefinitions/examples.fixture.example.com";
    let first = value_of("/fixture.example.com/examples/first");
    let mut second: Value = serde_json::from_slice(&first).unwrap();
    second["metadata"]["name"] = json!("second");
    second["metadata"]["uid"] = json!("5e7f6e4c-0000-4000-8000-000000000002");
    let second = Bytes::from(serde_json::to_vec(&second).unwrap());
    let clash = Bytes::from_static(b"{\"apiVersion\":\"fixture.example.com/v1\",\"kind\":\"Example\",\"metadata\":{\"name\":\"third\",\"uid\":\"5e7f6e4c-0000-4000-8000-000000000003\"}}");
    load(
        &slot,
        &[
            (crd.to_string(), value_of(crd)),
            (
                "/customresources/fixture.example.com/examples/first".into(),
                first.clone(),
            ),
            (
                "/customresources/fixture.example.com/examples/second".into(),
                second,
            ),
            (
                "/customresources/fixture.example.com/examples/third".into(),
                clash.clone(),
            ),
            (
                "/fixture.example.com/examples/third".into(),
                Bytes::from([&clash[..], b" "].concat()),
            ),
        ],
    )
    .await;
    let s = harness::start_over(slot, |_| {}).await;
    for name in ["first", "second", "third"] {
        let (code, got) = s
            .get_json(&format!("/apis/fixture.example.com/v1/examples/{name}"))
            .await;
        assert_eq!(code, 200, "{name}: {got}");
        assert_eq!(got["metadata"]["name"], json!(name));
    }
    let backend: Arc<dyn Backend> = s.slot.current().unwrap();
    let left = backend
        .list("/customresources/", Default::default())
        .await
        .unwrap();
    let left: Vec<&str> = left.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(
        left,
        ["/customresources/fixture.example.com/examples/third"]
    );
    assert_eq!(
        stored(&s, "/fixture.example.com/examples/first").await,
        first
    );
}
