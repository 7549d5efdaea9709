//! The generic store reading and watching through the cache: the same answers as
//! without it (selectors, namespaces, paging), upstream's resourceVersion rules
//! (410 before the window, 504 for revisions never reached), WatchList, and
//! watch events as shared, finished JSON lines.

use std::sync::Arc;

use kapi_machinery::{fields, labels};
use kapi_registry::cache::CacheConfig;
use kapi_registry::store::options::{ListOptions, RvMatch, WatchOptions, WriteOptions};
use kapi_registry::store::{ObjectIdentity, UpdateTarget, WatchEventType};
use kapi_registry::{DefaultStrategy, ResourceDef, Store, Verb};
use serde_json::{json, Value};

use crate::fixtures::{self, Fixture};

pub(crate) fn def() -> Arc<ResourceDef> {
    Arc::new(ResourceDef {
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
        singular: "configmap".into(),
        kind: "ConfigMap".into(),
        list_kind: "ConfigMapList".into(),
        namespaced: true,
        verbs: Verb::ALL.to_vec(),
        subresources: Vec::new(),
        short_names: Vec::new(),
        categories: Vec::new(),
        strategy: Arc::new(DefaultStrategy),
        key_prefix: "/t/configmaps".into(),
        conversion: None,
        protobuf: true,
        origin: kapi_registry::Origin::Builtin,
    })
}

/// The store through the cache, and the same store straight on the backend.
fn stores(f: &Fixture) -> (Store, Store) {
    let below = f.cache.backend().clone();
    (
        Store::new(def(), below.clone()).with_cache(f.cache.clone()),
        Store::new(def(), below),
    )
}

async fn create(s: &Store, ns: &str, name: &str, app: &str) -> Value {
    let obj = json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
                     "data": {"k": "v"}});
    s.create(obj, &WriteOptions::default()).await.unwrap()
}

fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn sel(label: &str, field: &str, limit: usize) -> ListOptions {
    ListOptions {
        label: labels::parse(label).unwrap(),
        field: fields::parse(field).unwrap(),
        limit,
        ..Default::default()
    }
}

/// Every page of a list, following continue tokens.
async fn list_all(s: &Store, ns: Option<&str>, mut opts: ListOptions) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let page = s.list(ns, &opts).await.unwrap();
        out.extend(page.items);
        match page.continue_token {
            Some(c) => opts.continue_token = Some(c),
            None => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_match_the_backend_with_selectors_namespaces_and_pages() {
    let f = fixtures::embedded().await;
    let (cached, direct) = stores(&f);
    for i in 0..12 {
        let app = if i % 2 == 0 { "x" } else { "y" };
        create(
            &direct,
            if i < 8 { "a" } else { "b" },
            &format!("cm{i:02}"),
            app,
        )
        .await;
    }
    let cases = [
        (Some("a"), sel("app=x", "", 0)),
        (None, sel("", "metadata.namespace=b", 0)),
        (None, sel("app=nothing", "", 0)),
        (Some("a"), sel("app=x", "", 2)),
        (None, sel("", "", 5)),
        (None, sel("app!=x", "metadata.name!=cm03", 3)),
        // The name alone is read from the key.
        (None, sel("", "metadata.name=cm09", 0)),
        (Some("a"), sel("", "metadata.name=cm09", 0)),
        (None, sel("", "metadata.name!=cm03,metadata.name!=cm10", 0)),
        (None, sel("", "metadata.name==cm1", 0)),
    ];
    for (ns, opts) in cases {
        let got = list_all(&cached, ns, opts.clone()).await;
        let want = list_all(&direct, ns, opts.clone()).await;
        assert_eq!(names(&got), names(&want), "{ns:?} {:?}", opts.label);
        assert_eq!(got, want);
    }
    let page = cached.list(Some("a"), &sel("", "", 3)).await.unwrap();
    assert_eq!(page.remaining, Some(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_version_rules_hold() {
    let f = fixtures::embedded().await;
    let (cached, _) = stores(&f);
    let obj = create(&cached, "a", "one", "x").await;
    let rv: i64 = obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Not older than a revision already reached: answered; read-your-writes.
    let got = cached
        .get(Some("a"), "one", Some(&rv.to_string()))
        .await
        .unwrap();
    assert_eq!(got, obj);
    let opts = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    assert!(cached.list(Some("a"), &opts).await.is_ok());
    // A revision never reached: 504 after the wait, as upstream.
    let opts = ListOptions {
        resource_version: Some((rv + 1000).to_string()),
        rv_match: RvMatch::NotOlderThan,
        ..Default::default()
    };
    let err = cached.list(Some("a"), &opts).await.unwrap_err();
    assert_eq!(err.code, 504, "{err:?}");
    let err = cached
        .get(Some("a"), "one", Some(&(rv + 1000).to_string()))
        .await
        .unwrap_err();
    assert_eq!(err.code, 504);
    // Exact with "0" and a match without a version stay 400s.
    let opts = ListOptions {
        resource_version: Some("0".into()),
        rv_match: RvMatch::Exact,
        ..Default::default()
    };
    assert_eq!(cached.list(None, &opts).await.unwrap_err().code, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_before_the_window_is_410() {
    let f = fixtures::embedded_with(CacheConfig {
        history: 4,
        history_fresh: std::time::Duration::ZERO,
        ..Default::default()
    })
    .await;
    let (cached, _) = stores(&f);
    let first = create(&cached, "a", "c0", "x").await;
    for i in 1..10 {
        create(&cached, "a", &format!("c{i}"), "x").await;
    }
    let opts = WatchOptions {
        resource_version: first["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        ..Default::default()
    };
    // The cache may still be catching up: ask until it answers from memory.
    let mut rx = cached.watch(Some("a"), &opts).await.unwrap();
    let ev = rx.recv().await.unwrap();
    assert_eq!(ev.kind, WatchEventType::Error, "{ev:?}");
    assert_eq!(ev.object["code"], 410);
    assert_eq!(ev.object["reason"], "Expired");
}

/// A cache filled after a revision never saw what came before it; a watch from
/// there is the backend's to answer (it still has the history), not a 410.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_before_the_fill_replays_from_the_backend() {
    let dir = tempfile::tempdir().unwrap();
    let below: Arc<dyn kapi_storage::Backend> = Arc::new(
        kapi_storage::embedded::EmbeddedBackend::open(kapi_storage::embedded::EmbeddedConfig::new(
            dir.path(),
        ))
        .unwrap(),
    );
    let direct = Store::new(def(), below.clone());
    let first = create(&direct, "a", "early", "x").await;
    create(&direct, "a", "later", "x").await;
    let cache = kapi_registry::cache::CachedBackend::new(
        below.clone(),
        ["/t/".to_string()],
        CacheConfig::default(),
    );
    for _ in 0..200 {
        if cache.is_ready("/t/") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(cache.is_ready("/t/"));
    let cached = Store::new(def(), below).with_cache(cache);
    let opts = WatchOptions {
        resource_version: first["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        ..Default::default()
    };
    let mut rx = cached.watch(Some("a"), &opts).await.unwrap();
    let ev = rx.recv().await.unwrap();
    assert_eq!(ev.kind, WatchEventType::Added, "{ev:?}");
    assert_eq!(ev.object["metadata"]["name"], "later");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_and_shared_json_lines() {
    let f = fixtures::embedded().await;
    let (cached, _) = stores(&f);
    let a = create(&cached, "a", "first", "x").await;
    create(&cached, "a", "other", "y").await;
    let opts = WatchOptions {
        label: labels::parse("app=x").unwrap(),
        rv_match: RvMatch::NotOlderThan,
        allow_bookmarks: true,
        send_initial_events: Some(true),
        encoded_json: true,
        ..Default::default()
    };
    let mut rx = cached.watch(Some("a"), &opts).await.unwrap();
    let line = |ev: &kapi_registry::store::WatchEvent| -> Value {
        serde_json::from_slice(ev.json.as_ref().expect("a finished line")).unwrap()
    };
    let ev = rx.recv().await.unwrap();
    assert_eq!(line(&ev), json!({"type": "ADDED", "object": a}));
    let ev = rx.recv().await.unwrap();
    assert_eq!(ev.kind, WatchEventType::Bookmark);
    assert_eq!(
        ev.object["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // A change that leaves the selection is a DELETED for this watcher.
    let mut moved = a.clone();
    moved["metadata"]["labels"]["app"] = json!("z");
    let (moved, _) = cached
        .update_with(
            Some("a"),
            "first",
            UpdateTarget::Main,
            &WriteOptions::default(),
            false,
            |_| Ok(moved.clone()),
        )
        .await
        .unwrap();
    let ev = rx.recv().await.unwrap();
    assert_eq!(line(&ev), json!({"type": "DELETED", "object": moved}));
    let b = create(&cached, "a", "second", "x").await;
    let ev = rx.recv().await.unwrap();
    assert_eq!(line(&ev), json!({"type": "ADDED", "object": b}));
    // A second watcher gets the very same bytes for the same event.
    let opts2 = WatchOptions {
        resource_version: Some(first_line_rv(&b)),
        encoded_json: true,
        ..Default::default()
    };
    let mut rx2 = cached.watch(Some("a"), &opts2).await.unwrap();
    cached
        .delete(Some("a"), "second", &Default::default())
        .await
        .unwrap();
    let e1 = rx.recv().await.unwrap();
    let e2 = rx2.recv().await.unwrap();
    assert_eq!(e1.json, e2.json);
    assert_eq!(line(&e1)["type"], "DELETED");
}

fn first_line_rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_reads_keep_every_metadata_field() {
    let f = fixtures::embedded().await;
    let (cached, _) = stores(&f);
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "one", "namespace": "a", "labels": {"app": "web"},
                                  "uid": "u-1", "finalizers": ["f/x"],
                                  "ownerReferences": [{"apiVersion": "v1", "kind": "Secret",
                                                       "name": "s", "uid": "u-0"}],
                                  "managedFields": [{"manager": "m", "operation": "Update",
                                                     "apiVersion": "v1", "fieldsType": "FieldsV1",
                                                     "fieldsV1": {"f:data": {}}}]},
                     "data": {"k": "v"}});
    // Written below the store, so the stored bytes keep managedFields.
    let kv = f
        .cache
        .backend()
        .create(
            "/t/configmaps/a/one",
            serde_json::to_vec(&obj).unwrap().into(),
        )
        .await
        .unwrap();
    let mut made = obj;
    made["metadata"]["resourceVersion"] = kv.mod_revision.to_string().into();
    assert!(
        f.cache
            .wait_for(kv.mod_revision, std::time::Duration::from_secs(10))
            .await
    );
    let list = cached
        .list_cached(None, &ListOptions::default())
        .await
        .unwrap()
        .expect("served by the cache");
    let [obj] = &list.items[..] else {
        panic!("one object: {:?}", list.items.len())
    };
    let m = cached.decode_metadata(&obj.kv, true).unwrap();
    assert_eq!(m["apiVersion"], "v1");
    assert_eq!(m["kind"], "ConfigMap");
    assert_eq!(
        m["metadata"], made["metadata"],
        "the whole metadata, resourceVersion included"
    );
    assert!(m.get("data").is_none(), "nothing but metadata: {m}");
    let trimmed = cached.decode_metadata(&obj.kv, false).unwrap();
    let mut expected = made["metadata"].clone();
    expected.as_object_mut().unwrap().remove("managedFields");
    assert_ne!(trimmed["metadata"], m["metadata"]);
    assert_eq!(trimmed["metadata"], expected);
    // The garbage collector's read: identity and ownership only.
    let id = cached.decode_identity(&obj.kv).unwrap();
    let expected = json!({"name": "one", "namespace": "a", "uid": "u-1",
                          "finalizers": ["f/x"],
                          "ownerReferences": made["metadata"]["ownerReferences"],
                          "resourceVersion": kv.mod_revision.to_string()});
    assert_eq!(id["metadata"], expected);
    assert_eq!(
        (&id["apiVersion"], &id["kind"]),
        (&m["apiVersion"], &m["kind"])
    );
    // Typed, the same fields: from the cached object, and from bytes the
    // scan leaves to the parse (an escaped key) or that hold no metadata.
    let typed = cached.identity_at(&obj.kv, obj.kv.mod_revision).unwrap();
    assert_eq!(typed, ObjectIdentity::of(&id));
    assert_eq!(typed.uid.as_deref(), Some("u-1"));
    assert_eq!(typed.finalizers(), ["f/x"]);
    for json in [
        r#"{"metadata":{"n\u0061me":"esc","uid":"u","finalizers":["a/b"],"labels":{"k":"v"}}}"#,
        r#"{"metadata":{"name":"d","namespace":"a","deletionTimestamp":"2026-12-04T09:00:00Z","deletionGracePeriodSeconds":0}}"#,
        r#"{"kind":"ConfigMap"}"#,
    ] {
        let kv = kapi_storage::KeyValue {
            value: bytes::Bytes::copy_from_slice(json.as_bytes()),
            ..obj.kv.clone()
        };
        let value = cached.decode_identity_at(&kv, 9).unwrap();
        assert_eq!(
            cached.identity_at(&kv, 9).unwrap(),
            ObjectIdentity::of(&value),
            "{json}"
        );
    }
    let full = cached.decode_values([&obj.kv]).unwrap();
    assert_eq!(full, vec![made]);
}

#[test]
fn list_prefixes_are_the_key_prefix_then_the_namespace() {
    let d = def();
    assert_eq!(d.list_prefix(None), "/t/configmaps/");
    assert_eq!(d.list_prefix(Some("ns-1")), "/t/configmaps/ns-1/");
    let mut cluster = (*d).clone();
    cluster.namespaced = false;
    assert_eq!(cluster.list_prefix(Some("ns-1")), "/t/configmaps/");
}

/// A create whose caller answers in JSON (`answer_json`) or protobuf
/// (`answer_protobuf`) gets the created object's JSON written straight from
/// the stored protobuf, the stored bytes at hand, and the object decoded only
/// when asked for; any other gets the object decoded once. All answer what a
/// read of the object gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answered_in_json_decodes_the_object_only_when_asked() {
    use kapi_registry::{MediaType, StorageCodec};
    let codec = StorageCodec::new(MediaType::Protobuf);
    let f = fixtures::embedded_with(CacheConfig {
        codec: Some(codec.clone()),
        ..CacheConfig::default()
    })
    .await;
    let s = Store::new(def(), f.cache.backend().clone())
        .with_codec(codec)
        .with_cache(f.cache.clone());
    for (answer_json, answer_protobuf) in [(true, false), (false, false), (false, true)] {
        let name = format!("j-{answer_json}-{answer_protobuf}");
        let opts = WriteOptions {
            answer_json,
            answer_protobuf,
            ..WriteOptions::default()
        };
        let obj = json!({"metadata": {"name": name, "namespace": "n", "labels": {"a": "b"}},
                         "data": {"k": "<&> \u{2028}"}});
        let written = s.create_written(obj, &opts, None).await.unwrap();
        let undecoded = answer_json || answer_protobuf;
        assert_eq!(written.decoded().is_none(), undecoded);
        // Undecoded, the stored protobuf is at hand for an answer made from it.
        let stored = written.stored().map(|kv| kv.value.clone());
        assert_eq!(stored.is_some(), undecoded);
        if let Some(bytes) = &stored {
            assert!(bytes.starts_with(kapi_protobuf::MAGIC));
        }
        let json = written.json.as_ref().expect("the JSON at hand");
        let mut answered = Vec::new();
        assert!(kapi_registry::cache::write_json_with_rv(
            &json.json,
            json.revision,
            &mut answered
        ));
        let created = s.written_object(written).unwrap();
        let read = s.get(Some("n"), &name, None).await.unwrap();
        assert_eq!(created, read);
        assert_eq!(serde_json::from_slice::<Value>(&answered).unwrap(), read);
        assert!(String::from_utf8(answered)
            .unwrap()
            .contains(r#""k":"\u003c\u0026\u003e \u2028""#));
    }
}
