//! Automatic reload: a changed file takes over (new writes use its first
//! provider, old values still read), an unchanged one does nothing, a broken
//! one or one whose KMS plugin is unhealthy leaves the old configuration in
//! force; the reload task finds the change by itself.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_encryption::testing::MockKmsPlugin;
use kapi_encryption::Encryption;
use kapi_storage::Backend;

use crate::fixtures::*;

async fn reloading(dir: &Dir, content: &str) -> Arc<Encryption> {
    let mut settings = dir.settings(content);
    settings.reload = true;
    settings.reload_interval = Duration::from_millis(100);
    Encryption::load(settings).await.unwrap()
}

#[tokio::test]
async fn a_changed_file_takes_over_and_a_broken_one_does_not() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = reloading(&dir, &config(&entry("secrets", &aescbc("k1", KEY32)))).await;
    assert_eq!(
        enc.health_check_name(),
        Some("kms-providers"),
        "always there with reload"
    );
    enc.check().await.expect("no KMS provider: a no-op");
    let b = encrypted(&store, &enc);
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert_eq!(enc.reload_once().await, Ok(false), "unchanged");

    let rotated = config(&entry(
        "secrets",
        &format!("{}, {}", aescbc("k2", KEY32B), aescbc("k1", KEY32)),
    ));
    dir.write(&rotated);
    assert_eq!(enc.reload_once().await, Ok(true));
    b.create("/secrets/ns/b", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert!(raw(&store, "/secrets/ns/b")
        .await
        .starts_with(b"k8s:enc:aescbc:v1:k2:"));
    assert_eq!(
        b.get("/secrets/ns/a", None).await.unwrap().unwrap().value,
        PLAIN
    );

    dir.write(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n",
    );
    let err = enc.reload_once().await.unwrap_err();
    assert!(err.contains("at least one resources is required"), "{err}");
    b.create("/secrets/ns/c", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert!(
        raw(&store, "/secrets/ns/c")
            .await
            .starts_with(b"k8s:enc:aescbc:v1:k2:"),
        "old config kept"
    );
}

#[tokio::test]
async fn the_reload_task_notices_a_change() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = reloading(&dir, &config(&entry("secrets", &aescbc("k1", KEY32)))).await;
    enc.spawn_reload();
    let b = encrypted(&store, &enc);
    dir.write(&config(&entry("secrets", &aescbc("k2", KEY32B))));
    for i in 0..100 {
        let key = format!("/secrets/ns/s{i}");
        b.create(&key, Bytes::from_static(PLAIN)).await.unwrap();
        if raw(&store, &key)
            .await
            .starts_with(b"k8s:enc:aescbc:v1:k2:")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the new configuration never took over");
}

#[tokio::test]
async fn a_new_kms_provider_must_be_healthy_before_it_is_used() {
    let dir = Dir::new();
    let store = dir.store();
    let enc = reloading(&dir, &config(&entry("secrets", &aescbc("k1", KEY32)))).await;
    let b = encrypted(&store, &enc);
    let sock = dir.path("kms.sock");
    let with_kms = config(&entry(
        "secrets",
        &format!("{}, {}", kms("kms1", &sock, "200ms"), aescbc("k1", KEY32)),
    ));
    dir.write(&with_kms);
    // No plugin: the new configuration stays out (after its grace period).
    let err = enc.reload_once().await.unwrap_err();
    assert!(
        err.contains("health check for new transformers failed"),
        "{err}"
    );
    b.create("/secrets/ns/a", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert!(raw(&store, "/secrets/ns/a")
        .await
        .starts_with(b"k8s:enc:aescbc:v1:k1:"));
    let plugin = MockKmsPlugin::new("key-1");
    let _serving = plugin.serve(&sock);
    assert_eq!(enc.reload_once().await, Ok(true));
    b.create("/secrets/ns/b", Bytes::from_static(PLAIN))
        .await
        .unwrap();
    assert!(raw(&store, "/secrets/ns/b")
        .await
        .starts_with(b"k8s:enc:kms:v2:kms1:"));
    enc.check().await.unwrap();
}
