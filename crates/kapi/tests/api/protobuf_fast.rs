//! The protobuf fast path from the watch cache (`handlers/pb_fast.rs`): LIST,
//! GET and watch frames written from protobuf bytes kept per cached object and
//! per event must be byte for byte what encoding the JSON answer writes — for
//! objects and `PartialObjectMetadata`, full and paged lists, every watcher of
//! an event (sharing its frame) and a selector watcher that sees an event
//! differently (its own frame).

use http_body_util::BodyExt as _;
use serde_json::{json, Value};

use kapi_registry::cache::Form;

use crate::harness::{self, TestServer};

const PB: &str = "application/vnd.kubernetes.protobuf";
const META_JSON: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
const META_PB: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
const META_ONE_JSON: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
const META_ONE_PB: &str =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";

async fn get(s: &TestServer, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (code, body.to_vec())
}

/// The JSON answer at `path` encoded as protobuf, and the protobuf answer. A
/// list's own `resourceVersion` is the cache's revision, which moves with any
/// write in the server (controllers write too), so the JSON list takes the
/// protobuf list's; everything else must agree byte for byte.
async fn both(
    s: &TestServer,
    path: &str,
    json_accept: &str,
    pb_accept: &str,
) -> (Vec<u8>, Vec<u8>) {
    let (code, got) = get(s, path, pb_accept).await;
    assert_eq!(code, 200, "{path}");
    let decoded = kapi_protobuf::decode_object(&got, None).unwrap();
    let (code, body) = get(s, path, json_accept).await;
    assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
    let mut value: Value = serde_json::from_slice(&body).unwrap();
    if value.get("items").is_some() {
        // The two answers may be a revision apart (a master lease renewal
        // between them): the list's revision, and the continue token naming
        // it, are taken from the protobuf answer.
        value["metadata"]["resourceVersion"] = decoded["metadata"]["resourceVersion"].clone();
        if let Some(token) = decoded["metadata"].get("continue") {
            value["metadata"]["continue"] = token.clone();
        }
    }
    let expected = kapi_protobuf::encode_object(&value).unwrap();
    if got != expected {
        assert_eq!(decoded, value, "{path}: differs as values");
        let at = got.iter().zip(&expected).position(|(a, b)| a != b);
        panic!(
            "{path}: same values, bytes differ at {at:?} (lengths {} and {})",
            got.len(),
            expected.len()
        );
    }
    (expected, got)
}

async fn create(s: &TestServer, base: &str, name: &str, app: &str) -> Value {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"app": app},
                                 "annotations": {"note": "ü ∑ \"quoted\""}},
                    "data": {"a": "1", "payload": "x".repeat(300)},
                    "binaryData": {"b": "AAEC"}});
    let (code, obj) = s
        .send_json("POST", base, serde_json::to_vec(&cm).unwrap())
        .await;
    assert_eq!(code, 201, "{obj}");
    obj
}

#[tokio::test]
async fn protobuf_fast_path_lists_and_gets_match_the_json_answer() {
    let s = harness::start().await;
    let ns = s.namespace("pbfast").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    for i in 0..5 {
        create(
            &s,
            &base,
            &format!("c{i}"),
            if i % 2 == 0 { "even" } else { "odd" },
        )
        .await;
    }
    let store = s
        .server
        .apis
        .lookup("", "v1", "configmaps")
        .unwrap()
        .store
        .clone();
    let cached = store
        .get_cached_object(Some("pbfast"), "c3", "0")
        .await
        .unwrap();
    let cached = cached.expect("served from the cache");
    // Nothing is encoded for an object nobody asked for in protobuf.
    let (code, _) = get(&s, &base, "application/json").await;
    assert_eq!(code, 200);
    assert!(cached.kept(Form::Protobuf).is_none());
    for path in [
        base.clone(),
        format!("{base}?resourceVersion=0"),
        format!("{base}?limit=2"),
        format!("{base}?labelSelector=app%3Deven"),
        format!("{base}?labelSelector=app%3Dnone"),
        "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dpbfast".to_string(),
    ] {
        // Twice: the second answer comes from the kept bytes.
        for round in 0..2 {
            let (expected, got) = both(&s, &path, "application/json", PB).await;
            assert_eq!(got, expected, "{path}, round {round}");
            let (expected, got) = both(&s, &path, META_JSON, META_PB).await;
            assert_eq!(got, expected, "{path} as metadata, round {round}");
        }
    }
    // The LISTs above kept each object's bytes, once.
    let kept = cached
        .kept(Form::Protobuf)
        .expect("kept after a protobuf LIST");
    assert!(cached.kept(Form::MetadataProtobuf).is_some());
    let decoded = kapi_protobuf::decode_message("v1", "ConfigMap", &kept).unwrap();
    assert_eq!(decoded["metadata"]["name"], "c3");
    // The continuation of a paged list.
    let (_, first) = get(&s, &format!("{base}?limit=2"), "application/json").await;
    let first: Value = serde_json::from_slice(&first).unwrap();
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let path = format!("{base}?limit=2&continue={token}");
    let (expected, got) = both(&s, &path, "application/json", PB).await;
    assert_eq!(got, expected, "{path}");
    // GET from the cache, object and metadata.
    for path in [format!("{base}/c1?resourceVersion=0"), format!("{base}/c1")] {
        let (expected, got) = both(&s, &path, "application/json", PB).await;
        assert_eq!(got, expected, "{path}");
        let (expected, got) = both(&s, &path, META_ONE_JSON, META_ONE_PB).await;
        assert_eq!(got, expected, "{path} as metadata");
    }
    past_the_budget(&s, &base, &store).await;
}

/// With no budget left, a LIST encodes each object twice (for the list's
/// length, then when written) and keeps nothing: the same bytes. Only this test
/// looks at kept bytes, so the process-wide budget may change under the others.
async fn past_the_budget(s: &TestServer, base: &str, store: &kapi_registry::Store) {
    let budget = kapi_registry::cache::encoded_budget();
    kapi_registry::cache::set_encoded_budget(0);
    for i in 5..8 {
        create(s, base, &format!("c{i}"), "late").await;
    }
    for path in [base.to_owned(), format!("{base}?labelSelector=app%3Dlate")] {
        let (expected, got) = both(s, &path, "application/json", PB).await;
        assert_eq!(got, expected, "{path}, past the budget");
        let (expected, got) = both(s, &path, META_JSON, META_PB).await;
        assert_eq!(got, expected, "{path} as metadata, past the budget");
    }
    let late = store
        .get_cached_object(Some("pbfast"), "c6", "0")
        .await
        .unwrap()
        .expect("served from the cache");
    assert!(
        late.kept(Form::Protobuf).is_none(),
        "nothing kept past the budget"
    );
    kapi_registry::cache::set_encoded_budget(budget);
}

/// Frames of a watch stream, as (type, the frame's bytes).
fn frames(mut body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(((ty, _), rest)) = kapi_protobuf::decode_watch_frame(body).unwrap() {
        out.push((ty, body[..body.len() - rest.len()].to_vec()));
        body = rest;
    }
    assert!(body.is_empty(), "a partial frame was left");
    out
}

/// The JSON watch events at `path` as protobuf frames.
async fn json_watch_as_frames(s: &TestServer, path: &str, accept: &str) -> Vec<(String, Vec<u8>)> {
    let (code, body) = get(s, path, accept).await;
    assert_eq!(code, 200);
    body.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let ev: Value = serde_json::from_slice(l).unwrap();
            let ty = ev["type"].as_str().unwrap().to_owned();
            let frame = kapi_protobuf::encode_watch_frame(&ty, &ev["object"]).unwrap();
            (ty, frame)
        })
        .collect()
}

#[tokio::test]
async fn protobuf_fast_path_watch_frames_match_the_json_events() {
    let s = harness::start().await;
    let ns = s.namespace("pbwatch").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let (_, list) = get(&s, &base, "application/json").await;
    let list: Value = serde_json::from_slice(&list).unwrap();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = create(&s, &base, "a", "x").await;
    create(&s, &base, "b", "y").await;
    // `a` leaves the selection app=x: a DELETED event for a selector watcher.
    let mut moved = a.clone();
    moved["metadata"]["labels"]["app"] = json!("z");
    let (code, _) = s
        .send_json(
            "PUT",
            &format!("{base}/a"),
            serde_json::to_vec(&moved).unwrap(),
        )
        .await;
    assert_eq!(code, 200);
    let (code, _) = s
        .send_json("DELETE", &format!("{base}/b"), Vec::new())
        .await;
    assert_eq!(code, 200);

    let all = format!("{base}?watch=true&resourceVersion={rv}&timeoutSeconds=1");
    let expected = json_watch_as_frames(&s, &all, "application/json").await;
    let types: Vec<&str> = expected.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "MODIFIED", "DELETED"]);
    // Two protobuf watchers of the same events: the same bytes as JSON encoded.
    for _ in 0..2 {
        let (code, body) = get(&s, &all, PB).await;
        assert_eq!(code, 200);
        assert_eq!(frames(&body), expected);
    }
    let selected = format!("{all}&labelSelector=app%3Dx");
    let expected = json_watch_as_frames(&s, &selected, "application/json").await;
    let types: Vec<&str> = expected.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["ADDED", "DELETED"]);
    let (_, body) = get(&s, &selected, PB).await;
    assert_eq!(frames(&body), expected);
    // PartialObjectMetadata watchers (metadata informers).
    let meta_json = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
    let expected = json_watch_as_frames(&s, &all, meta_json).await;
    assert_eq!(expected.len(), 4);
    let (_, body) = get(&s, &all, META_ONE_PB).await;
    assert_eq!(frames(&body), expected);
    // Initial events of a watch without resourceVersion come from the kept bytes too.
    let initial = format!("{base}?watch=true&timeoutSeconds=1");
    let expected = json_watch_as_frames(&s, &initial, "application/json").await;
    let (_, body) = get(&s, &initial, PB).await;
    assert_eq!(frames(&body), expected);
    assert_eq!(expected.len(), 1);
}

/// A create answered in protobuf is written from the stored bytes with the
/// `resourceVersion` spliced in: byte for byte what encoding the object a
/// JSON read returns gives (keys out of order, a generated name, escapes).
#[tokio::test]
async fn a_create_answered_in_protobuf_is_the_object_it_created() {
    let s = harness::start().await;
    let ns = s.namespace("pbcreate").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let post = |body: Value, query: &str| {
        let req = http::Request::post(format!("{base}{query}"))
            .header("accept", PB)
            .header("content-type", "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let client = s.client.clone();
        async move {
            let resp = client.send(req).await.expect("transport");
            let code = resp.status().as_u16();
            let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (code, ct, body.to_vec())
        }
    };
    for (obj, query) in [
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "named", "labels": {"z": "1", "a": "2"}},
                "data": {"b": "<&>", "a": "ü \"q\""}}),
            "",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "gen-"}, "data": {"k": "v"}}),
            "",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "dry-"}, "data": {"k": "v"}}),
            "?dryRun=All",
        ),
    ] {
        let (code, ct, got) = post(obj, query).await;
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&got));
        assert_eq!(ct, PB);
        let created = kapi_protobuf::decode_object(&got, None).unwrap();
        let name = created["metadata"]["name"].as_str().unwrap();
        let expected = if query.is_empty() {
            let (code, read) = get(&s, &format!("{base}/{name}"), "application/json").await;
            assert_eq!(code, 200);
            serde_json::from_slice::<Value>(&read).unwrap()
        } else {
            created.clone()
        };
        assert_eq!(created, expected);
        assert!(
            got == kapi_protobuf::encode_object(&expected).unwrap(),
            "{name}"
        );
    }
}
