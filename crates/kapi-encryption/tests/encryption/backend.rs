//! What the encrypting backend stores and returns, on the embedded store and
//! on real etcd: each provider's prefix and layout, no plaintext at rest,
//! plaintext on every path up (get, list, watch, delete, conflict), values
//! bound to their full etcd key, stale reads after a key change.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::{Backend, ListOptions, StorageError, WatchMessage};

use crate::fixtures::*;

async fn stores_with_prefix(provider: &str, prefix: &[u8]) {
    let dir = Dir::new();
    let store = dir.store();
    let enc = dir.load(&config(&entry("secrets", provider))).await;
    let b = encrypted(&store, &enc);
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    let stored = raw(&store, "/secrets/ns/a").await;
    assert!(
        stored.starts_with(prefix),
        "{provider}: {:?}",
        &stored[..prefix.len().min(stored.len())]
    );
    assert!(
        !contains(&stored, b"PLAINTEXT-MARKER"),
        "{provider}: plaintext at rest"
    );
    assert_eq!(
        b.get("/secrets/ns/a", None).await.unwrap().unwrap().value,
        PLAIN
    );
}

#[tokio::test]
async fn each_provider_stores_its_prefix_and_no_plaintext() {
    stores_with_prefix(&aescbc("k1", KEY32), b"k8s:enc:aescbc:v1:k1:").await;
    stores_with_prefix(&aescbc("k1", KEY16), b"k8s:enc:aescbc:v1:k1:").await;
    let gcm = format!("{{aesgcm: {{keys: [{{name: g, secret: '{KEY24}'}}]}}}}");
    stores_with_prefix(&gcm, b"k8s:enc:aesgcm:v1:g:").await;
    let sbox = format!("{{secretbox: {{keys: [{{name: s, secret: '{KEY32}'}}]}}}}");
    stores_with_prefix(&sbox, b"k8s:enc:secretbox:v1:s:").await;
}

#[tokio::test]
async fn aescbc_layout_is_iv_then_padded_blocks() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = dir
        .load(&config(&entry("secrets", &aescbc("k1", KEY32))))
        .await;
    let b = encrypted(&store, &enc);
    for len in [0usize, 1, 15, 16, 17, 100] {
        let key = format!("/secrets/ns/v{len}");
        b.create(&key, Bytes::from(vec![b'x'; len])).await.unwrap();
        let stored = raw(&store, &key).await;
        let body = stored.len() - b"k8s:enc:aescbc:v1:k1:".len();
        assert_eq!(
            body,
            16 + (len / 16 + 1) * 16,
            "IV + PKCS#7-padded blocks for {len}"
        );
    }
}

#[tokio::test]
async fn every_path_up_is_plaintext_and_other_resources_are_untouched() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = dir
        .load(&config(&entry("secrets", &aescbc("k1", KEY32))))
        .await;
    let b = encrypted(&store, &enc);
    let created = b
        .create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert_eq!(created.value, PLAIN);
    b.create("/configmaps/ns/c", Bytes::from_static(b"{\"cm\":1}"))
        .await
        .unwrap();
    assert_eq!(
        raw(&store, "/configmaps/ns/c").await,
        &b"{\"cm\":1}"[..],
        "configmaps stay plain"
    );
    let mut watch = b.watch("/secrets/", created.mod_revision).await.unwrap();
    let page = b.list("/secrets/", ListOptions::default()).await.unwrap();
    assert_eq!(page.kvs[0].value, PLAIN);
    let updated = b
        .update(
            "/secrets/ns/a",
            Bytes::from_static(b"{\"v\":2}"),
            created.mod_revision,
        )
        .await
        .unwrap();
    match b
        .update(
            "/secrets/ns/a",
            Bytes::from_static(b"{}"),
            created.mod_revision,
        )
        .await
    {
        Err(StorageError::Conflict {
            current: Some(kv), ..
        }) => assert_eq!(kv.value, &b"{\"v\":2}"[..]),
        other => panic!("expected a conflict with the current value: {other:?}"),
    }
    let deleted = b
        .delete("/secrets/ns/a", Some(updated.mod_revision))
        .await
        .unwrap();
    assert_eq!(deleted.prev.value, &b"{\"v\":2}"[..]);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match watch.next().await.unwrap().unwrap() {
            WatchMessage::Events(evs) => seen.extend(evs),
            WatchMessage::Progress(_) => {}
        }
    }
    assert_eq!(seen[0].kv.value, &b"{\"v\":2}"[..]);
    assert_eq!(seen[0].prev.as_ref().unwrap().value, PLAIN);
    assert_eq!(seen[1].prev.as_ref().unwrap().value, &b"{\"v\":2}"[..]);
}

#[tokio::test]
async fn a_value_that_does_not_decrypt_is_an_error_naming_its_key() {
    let dir = Dir::new();
    let store = dir.store();
    let gcm = format!("{{aesgcm: {{keys: [{{name: g, secret: '{KEY32}'}}]}}}}");
    let enc = dir.load(&config(&entry("secrets", &gcm))).await;
    let b = encrypted(&store, &enc);
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    // Copied to another key, an AES-GCM value fails: it is bound to its key.
    let copy = raw(&store, "/secrets/ns/a").await;
    store.create("/secrets/ns/b", copy).await.unwrap();
    let err = b.get("/secrets/ns/b", None).await.unwrap_err().to_string();
    assert!(err.contains("/registry/secrets/ns/b"), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    // Plaintext where a provider without identity expects ciphertext.
    store
        .create("/secrets/ns/plain", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    let err = b
        .get("/secrets/ns/plain", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no matching prefix found"), "{err}");
    // An unconfigured resource refuses encrypted data (identity's check).
    store
        .create("/configmaps/ns/x", raw(&store, "/secrets/ns/a").await)
        .await
        .unwrap();
    let err = b
        .get("/configmaps/ns/x", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("identity transformer tried to read encrypted data"),
        "{err}"
    );
}

#[tokio::test]
async fn reads_through_an_older_key_are_stale_until_rewritten() {
    let dir = Dir::new();
    let store = dir.store();
    let old = dir
        .load(&config(&entry("secrets", &aescbc("k1", KEY32))))
        .await;
    let written = encrypted(&store, &old)
        .create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    let both = format!("{}, {}", aescbc("k2", KEY32B), aescbc("k1", KEY32));
    let new = dir.load(&config(&entry("secrets", &both))).await;
    let b = encrypted(&store, &new);
    let read = b.get("/secrets/ns/a", None).await.unwrap().unwrap();
    assert_eq!(read.value, PLAIN);
    assert!(
        b.is_stale(&read).await.unwrap(),
        "read through the second key"
    );
    let rewritten = b
        .update("/secrets/ns/a", read.value.clone(), written.mod_revision)
        .await
        .unwrap();
    assert!(raw(&store, "/secrets/ns/a")
        .await
        .starts_with(b"k8s:enc:aescbc:v1:k2:"));
    assert!(!b.is_stale(&rewritten).await.unwrap());
    // identity first: encrypted values are stale, rewrites store plaintext.
    let decrypt = format!("{{identity: {{}}}}, {}", aescbc("k2", KEY32B));
    let b = encrypted(
        &store,
        &dir.load(&config(&entry("secrets", &decrypt))).await,
    );
    let read = b.get("/secrets/ns/a", None).await.unwrap().unwrap();
    assert!(b.is_stale(&read).await.unwrap());
    b.update("/secrets/ns/a", read.value.clone(), read.mod_revision)
        .await
        .unwrap();
    assert_eq!(raw(&store, "/secrets/ns/a").await, PLAIN);
}

#[tokio::test]
async fn wildcards_and_custom_resources() {
    let dir = Dir::new();
    let store = dir.store();
    let cfg = config(&format!(
        "{}{}",
        entry("'*.apps'", &aescbc("apps", KEY32)),
        entry("'*.*'", &aescbc("all", KEY32B))
    ));
    let b = encrypted(&store, &dir.load(&cfg).await);
    for (key, prefix) in [
        ("/deployments/ns/d", "k8s:enc:aescbc:v1:apps:"),
        ("/configmaps/ns/c", "k8s:enc:aescbc:v1:all:"),
        ("/example.com/widgets/ns/w", "k8s:enc:aescbc:v1:all:"),
    ] {
        b.create(key, Bytes::from_static(PLAIN)).await.unwrap();
        assert!(
            raw(&store, key).await.starts_with(prefix.as_bytes()),
            "{key}"
        );
    }
    // A key of no resource (kapi's own bookkeeping) is stored as it is.
    b.create("/masterleases/10.0.0.1", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    assert_eq!(raw(&store, "/masterleases/10.0.0.1").await, &b"{}"[..]);
}

#[tokio::test]
async fn on_etcd_the_authenticated_data_is_the_full_etcd_key() {
    let etcd = tokio::task::spawn_blocking(kapi_testkit::Etcd::start)
        .await
        .unwrap();
    let connect = |prefix: &str| {
        let mut cfg = EtcdConfig::new(vec![etcd.client_url.clone()]);
        cfg.prefix = prefix.into();
        async move { Arc::new(EtcdBackend::connect(&cfg).await.unwrap()) as Arc<dyn Backend> }
    };
    let store = connect("/registry").await;
    let dir = Dir::new();
    let gcm = config(&entry(
        "secrets",
        &format!("{{aesgcm: {{keys: [{{name: g, secret: '{KEY32}'}}]}}}}"),
    ));
    let enc = dir.load(&gcm).await;
    let b = encrypted(&store, &enc);
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    let stored = raw(&store, "/secrets/ns/a").await;
    assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:g:") && !contains(&stored, b"PLAINTEXT-MARKER"));
    assert_eq!(
        b.get("/secrets/ns/a", None).await.unwrap().unwrap().value,
        PLAIN
    );
    // The same bytes under another etcd prefix do not decrypt: the prefix
    // is part of the authenticated data, as upstream's `/registry/...`.
    let other = connect("/elsewhere").await;
    other.create("/secrets/ns/a", stored).await.unwrap();
    let mut settings = dir.settings(&gcm);
    settings.key_prefix = "/elsewhere".into();
    let enc2 = kapi_encryption::Encryption::load(settings.clone())
        .await
        .unwrap();
    let err = encrypted(&other, &enc2)
        .get("/secrets/ns/a", None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/elsewhere/secrets/ns/a"), "{err}");
}
