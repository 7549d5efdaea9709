//! KMS v2 against the plugin written for tests: the stored `EncryptedObject`,
//! one `Encrypt` per DEK seed and one `Decrypt` per seed read (the caches),
//! key ID rotation, and the plugin down or hanging — a clear error, and nothing
//! stored unencrypted.

use std::time::Duration;

use bytes::Bytes;
use kapi_encryption::kms::api::{EncryptedDekSourceType, EncryptedObject};
use kapi_encryption::testing::MockKmsPlugin;
use kapi_encryption::Encryption;
use kapi_storage::Backend;
use prost::Message;

use crate::fixtures::*;

const PREFIX: &[u8] = b"k8s:enc:kms:v2:kms1:";

fn object(stored: &[u8]) -> EncryptedObject {
    assert!(
        stored.starts_with(PREFIX),
        "{:?}",
        String::from_utf8_lossy(&stored[..20])
    );
    EncryptedObject::decode(&stored[PREFIX.len()..]).expect("an EncryptedObject")
}

/// The plugin is back: a check passes within a few tries (the first call
/// after a restart may find the old connection broken).
pub async fn eventually_healthy(enc: &Encryption) {
    for _ in 0..50 {
        if enc.check().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("still unhealthy: {:?}", enc.check().await);
}

/// The check's error once the plugin answers again after hanging (a call
/// cut short by its timeout may leave the connection to be made anew).
async fn eventually_error(enc: &Encryption) -> String {
    let mut last = String::new();
    for _ in 0..50 {
        match enc.check().await {
            Err(e) if !e.contains("DeadlineExceeded") && !e.contains("transport") => return e,
            Err(e) => last = e,
            Ok(()) => panic!("healthy"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no answer: {last}");
}

fn kms_config(dir: &Dir, timeout: &str) -> String {
    config(&entry(
        "secrets",
        &kms("kms1", &dir.path("kms.sock"), timeout),
    ))
}

#[tokio::test]
async fn values_are_encrypted_objects_under_one_seed_and_reads_unwrap_it_once() {
    let dir = Dir::new();
    let plugin = MockKmsPlugin::new("key-1");
    let _serving = plugin.serve(&dir.path("kms.sock"));
    let store = dir.store();
    let enc = dir.load(&kms_config(&dir, "2s")).await;
    let b = encrypted(&store, &enc);
    for i in 0..20 {
        b.create(&format!("/secrets/ns/s{i}"), Bytes::from_static(PLAIN))
            .await
            .unwrap();
    }
    assert_eq!(plugin.encrypt_calls(), 1, "one seed wraps every write");
    let stored = raw(&store, "/secrets/ns/s0").await;
    assert!(!contains(&stored, b"PLAINTEXT-MARKER"));
    let obj = object(&stored);
    assert_eq!(obj.key_id, "key-1");
    assert_eq!(
        obj.encrypted_dek_source_type,
        EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32
    );
    assert_eq!(
        obj.annotations.get("kms.kapi.test").map(Vec::as_slice),
        Some(&b"mock"[..])
    );
    assert_eq!(
        obj.encrypted_dek_source,
        object(&raw(&store, "/secrets/ns/s19").await).encrypted_dek_source
    );
    // Reads of what this process wrote need no plugin call.
    assert_eq!(
        b.get("/secrets/ns/s3", None).await.unwrap().unwrap().value,
        PLAIN
    );
    assert_eq!(plugin.decrypt_calls(), 0);
    // A new process (a new configuration) unwraps the seed once for all.
    let b2 = encrypted(&store, &dir.load(&kms_config(&dir, "2s")).await);
    for i in 0..20 {
        let kv = b2
            .get(&format!("/secrets/ns/s{i}"), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(kv.value, PLAIN);
    }
    assert_eq!(plugin.decrypt_calls(), 1, "the DEK cache");
}

#[tokio::test]
async fn a_new_key_id_gets_a_new_seed_and_older_values_are_stale() {
    let dir = Dir::new();
    let plugin = MockKmsPlugin::new("key-1");
    let _serving = plugin.serve(&dir.path("kms.sock"));
    let store = dir.store();
    let enc = dir.load(&kms_config(&dir, "2s")).await;
    let b = encrypted(&store, &enc);
    let old = b
        .create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert!(!b.is_stale(&old).await.unwrap());
    plugin.rotate("key-2");
    enc.check().await.expect("healthy after rotation");
    b.create("/secrets/ns/b", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert_eq!(object(&raw(&store, "/secrets/ns/b").await).key_id, "key-2");
    assert_eq!(plugin.encrypt_calls(), 2);
    let read = b.get("/secrets/ns/a", None).await.unwrap().unwrap();
    assert!(b.is_stale(&read).await.unwrap(), "written under key-1");
    b.update("/secrets/ns/a", read.value.clone(), read.mod_revision)
        .await
        .unwrap();
    assert_eq!(object(&raw(&store, "/secrets/ns/a").await).key_id, "key-2");
}

#[tokio::test]
async fn plugin_down_reads_cached_seeds_then_writes_expire_and_fail() {
    let dir = Dir::new();
    let plugin = MockKmsPlugin::new("key-1");
    let serving = plugin.serve(&dir.path("kms.sock"));
    let store = dir.store();
    let mut settings = dir.settings(&kms_config(&dir, "1s"));
    settings.timing.write_ttl = Duration::from_secs(1);
    settings.timing.poll = Duration::from_secs(3600);
    let enc = Encryption::load(settings).await.unwrap();
    let b = encrypted(&store, &enc);
    enc.check().await.unwrap();
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    drop(serving);
    let err = enc.check().await.unwrap_err();
    assert!(
        err.starts_with("kms-provider-0: failed to perform status section"),
        "{err}"
    );
    assert_eq!(
        b.get("/secrets/ns/a", None).await.unwrap().unwrap().value,
        PLAIN,
        "cached seed"
    );
    // Once the state is past its life, writes fail and store nothing.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let err = b
        .create("/secrets/ns/b", Bytes::from_static(PLAIN))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("expired at"), "{err}");
    assert!(store.get("/secrets/ns/b", None).await.unwrap().is_none());
    // Back up: the next check renews the state and writes work again.
    let _serving = plugin.serve(&dir.path("kms.sock"));
    eventually_healthy(&enc).await;
    b.create("/secrets/ns/b", Bytes::from_static(PLAIN))
        .await
        .unwrap();
}

#[tokio::test]
async fn started_without_the_plugin_nothing_is_written_until_it_answers() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = dir.load(&kms_config(&dir, "1s")).await;
    let b = encrypted(&store, &enc);
    let err = b
        .create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("has no data encryption key yet"), "{err}");
    assert!(
        store.get("/secrets/ns/a", None).await.unwrap().is_none(),
        "nothing stored"
    );
    // Other resources are not held up.
    b.create("/configmaps/ns/c", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    let plugin = MockKmsPlugin::new("key-1");
    let _serving = plugin.serve(&dir.path("kms.sock"));
    eventually_healthy(&enc).await;
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_hanging_plugin_is_an_error_after_the_timeout() {
    let dir = Dir::new();
    let plugin = MockKmsPlugin::new("key-1");
    plugin.set_hang(true);
    let _serving = plugin.serve(&dir.path("kms.sock"));
    let store = dir.store();
    let enc = dir.load(&kms_config(&dir, "300ms")).await;
    let err = enc.check().await.unwrap_err();
    assert!(err.contains("DeadlineExceeded"), "{err}");
    let b = encrypted(&store, &enc);
    assert!(b
        .create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .is_err());
    assert!(store.get("/secrets/ns/a", None).await.unwrap().is_none());
    // A plugin that answers but reports itself unhealthy fails the check;
    // as upstream, its key ID still yields a DEK seed, so writes work.
    plugin.set_hang(false);
    plugin.set_healthz("the HSM is on fire");
    let err = eventually_error(&enc).await;
    assert!(
        err.contains("got unexpected healthz status: the HSM is on fire"),
        "{err}"
    );
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    plugin.set_healthz("ok");
    eventually_healthy(&enc).await;
}

#[tokio::test]
async fn reads_of_unseen_seeds_fail_while_the_plugin_is_down() {
    let dir = Dir::new();
    let plugin = MockKmsPlugin::new("key-1");
    let serving = plugin.serve(&dir.path("kms.sock"));
    let store = dir.store();
    let b = encrypted(&store, &dir.load(&kms_config(&dir, "1s")).await);
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    let fresh = encrypted(&store, &dir.load(&kms_config(&dir, "1s")).await);
    drop(serving);
    let err = fresh
        .get("/secrets/ns/a", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("failed to decrypt DEK"), "{err}");
}
