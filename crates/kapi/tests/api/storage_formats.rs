//! `--storage-media-type` and a store holding several encodings at once:
//! servers writing JSON, protobuf and YAML over one store, each reading what
//! the others wrote, every read path (LIST from the watch cache — the JSON
//! fast path and protobuf —, GET from the cache and from storage, a watch's
//! initial events) answering the same objects.

use std::collections::BTreeMap;

use kapi_registry::codec::{sniff, Sniffed};
use kapi_registry::{MediaType, StorageCodec};
use kapi_storage::ListOptions;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

async fn create(s: &TestServer, name: &str, data: &str) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"set": "mix"}},
                    "data": {"k": data, "html": "<b>&</b>"}});
    let (code, body) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/mix/configmaps",
            cm.to_string().into(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
}

async fn update(s: &TestServer, name: &str, data: &str) {
    let path = format!("/api/v1/namespaces/mix/configmaps/{name}");
    let patch = json!({"data": {"k": data}});
    let req = http::Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(patch.to_string().into_bytes())
        .unwrap();
    let (code, body) = s.raw(req).await;
    assert_eq!(code, 200, "{body}");
}

/// How the store holds each ConfigMap of the namespace.
async fn encodings(s: &TestServer) -> BTreeMap<String, Sniffed> {
    let below = s.slot.current().unwrap();
    let page = below
        .list("/configmaps/mix/", ListOptions::default())
        .await
        .unwrap();
    page.kvs
        .iter()
        .map(|kv| {
            let name = kv.key.rsplit('/').next().unwrap().to_owned();
            (name, sniff(&kv.value))
        })
        .collect()
}

fn by_name(items: &[Value]) -> BTreeMap<String, Value> {
    items
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o.clone(),
            )
        })
        .collect()
}

async fn protobuf_list(s: &TestServer, path: &str) -> Vec<Value> {
    s.get_protobuf(path).await["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// Every read path of `s` answers `want` (name → object).
async fn reads_agree(s: &TestServer, want: &BTreeMap<String, Value>) {
    let list = "/api/v1/namespaces/mix/configmaps";
    let untyped: BTreeMap<String, Value> = want
        .iter()
        .map(|(k, v)| {
            let mut v = v.clone();
            let m = v.as_object_mut().unwrap();
            m.shift_remove("apiVersion");
            m.shift_remove("kind");
            (k.clone(), v)
        })
        .collect();
    for query in ["", "?resourceVersion=0", "?limit=2"] {
        let (code, got) = s.get_json(&format!("{list}{query}")).await;
        assert_eq!(code, 200);
        let items = got["items"].as_array().unwrap();
        let got = by_name(items);
        if query == "?limit=2" {
            assert_eq!(got.len(), 2);
            assert!(
                got.iter().all(|(k, v)| untyped.get(k) == Some(v)),
                "{query}"
            );
        } else {
            assert_eq!(got, untyped, "LIST{query}");
        }
    }
    // A typed list's items carry no apiVersion and kind, in JSON as in
    // protobuf, as upstream's.
    let pb = by_name(&protobuf_list(s, &format!("{list}?resourceVersion=0")).await);
    assert_eq!(pb, untyped, "protobuf LIST");
    for (name, obj) in want {
        for query in ["", "?resourceVersion=0"] {
            let (code, got) = s.get_json(&format!("{list}/{name}{query}")).await;
            assert_eq!(code, 200);
            assert_eq!(&got, obj, "GET {name}{query}");
        }
    }
    let (code, text) = s
        .raw_text(
            http::Request::get(format!(
                "{list}?watch=true&resourceVersion=0&timeoutSeconds=1"
            ))
            .body(Vec::new())
            .unwrap(),
        )
        .await;
    assert_eq!(code, 200);
    let initial: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["object"].clone())
        .collect();
    assert_eq!(&by_name(&initial), want, "watch's initial events");
}

#[tokio::test]
async fn a_store_in_several_encodings_reads_the_same_everywhere() {
    let json_server =
        harness::start_configured(|o| o.storage.codec = StorageCodec::new(MediaType::Json)).await;
    json_server.namespace("mix").await;
    for name in ["a", "b", "c", "d"] {
        create(&json_server, name, "json").await;
    }
    let pb_server = json_server
        .another(|o| o.storage.codec = StorageCodec::new(MediaType::Protobuf))
        .await;
    update(&pb_server, "a", "protobuf").await;
    update(&pb_server, "b", "protobuf").await;
    create(&pb_server, "e", "protobuf").await;
    let yaml_server = json_server
        .another(|o| o.storage.codec = StorageCodec::new(MediaType::Yaml))
        .await;
    create(&yaml_server, "f", "yaml").await;
    use Sniffed::*;
    let want_encodings = [
        ("a", Protobuf),
        ("b", Protobuf),
        ("c", Json),
        ("d", Json),
        ("e", Protobuf),
        ("f", Other),
    ]
    .map(|(n, e)| (n.to_owned(), e));
    assert_eq!(
        encodings(&json_server).await,
        BTreeMap::from(want_encodings)
    );

    let (code, list) = pb_server
        .get_json("/api/v1/namespaces/mix/configmaps")
        .await;
    assert_eq!(code, 200);
    // The objects whole, as a GET answers them: the list's items with the
    // kind and apiVersion only the list carries.
    let mut want = by_name(list["items"].as_array().unwrap());
    for obj in want.values_mut() {
        obj["kind"] = json!("ConfigMap");
        obj["apiVersion"] = json!("v1");
    }
    assert_eq!(want.len(), 6);
    assert_eq!(
        want["a"]["data"],
        json!({"k": "protobuf", "html": "<b>&</b>"})
    );
    assert_eq!(want["f"]["data"]["k"], "yaml");
    for s in [&json_server, &pb_server, &yaml_server] {
        reads_agree(s, &want).await;
    }
}

/// Built-in kinds are stored as protobuf unless the flag says otherwise.
#[tokio::test]
async fn protobuf_is_the_default() {
    let s = harness::start().await;
    let below = s.slot.current().unwrap();
    s.namespace("mix").await;
    create(&s, "x", "v").await;
    let kv = below.get("/configmaps/mix/x", None).await.unwrap().unwrap();
    assert!(kv.value.starts_with(b"k8s\0"), "protobuf by default");
}
