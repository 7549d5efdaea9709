//! KMS v2 through the whole server, against the plugin written for tests on a
//! unix socket: Secrets stored as `k8s:enc:kms:v2:<name>:` + EncryptedObject,
//! the `kms-providers` check on `/healthz` and `/readyz` (not `/livez`, as
//! upstream), a plugin that goes away or hangs (a clear error, nothing stored
//! unencrypted), and automatic reload of the configuration file.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kapi_encryption::kms::api::EncryptedObject;
use kapi_encryption::testing::MockKmsPlugin;
use kapi_encryption::{Encryption, KmsTiming, Settings};
use kube::api::PostParams;
use kube::Api;
use prost::Message;

use crate::encryption::{aescbc, assert_encrypted, config, secret, stored, KEY1};
use crate::harness::{self, TestServer};

fn kms(socket: &std::path::Path, timeout: &str) -> String {
    format!(
        "{{kms: {{apiVersion: v2, name: vault, endpoint: 'unix://{}', timeout: {timeout}}}}}",
        socket.display()
    )
}

/// `content` loaded with timings short enough for tests.
async fn load(dir: &tempfile::TempDir, content: &str, reload: bool) -> std::sync::Arc<Encryption> {
    let path = dir.path().join("encryption.yaml");
    std::fs::write(&path, content).unwrap();
    let mut settings = Settings::new(&path, reload);
    settings.reload_interval = Duration::from_millis(100);
    settings.timing = KmsTiming {
        poll: Duration::from_millis(200),
        poll_failing: Duration::from_millis(100),
        healthy_ttl: Duration::ZERO,
        unhealthy_ttl: Duration::ZERO,
        ..KmsTiming::default()
    };
    Encryption::load(settings).await.unwrap()
}

async fn health(s: &TestServer, path: &str) -> (u16, String) {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    s.raw_text(req).await
}

#[tokio::test]
async fn kms_v2_secrets_health_and_a_plugin_that_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kms.sock");
    let plugin = MockKmsPlugin::new("key-1");
    let serving = plugin.serve(&socket);
    let enc = load(&dir, &config("secrets", &kms(&socket, "2s")), false).await;
    let s = harness::start_configured(|o| o.encryption = Some(enc)).await;
    let api: Api<Secret> = s.api("default");
    api.create(&PostParams::default(), &secret("a"))
        .await
        .unwrap();
    let raw = stored(&s, "/secrets/default/a").await;
    assert_encrypted(&raw, "k8s:enc:kms:v2:vault:");
    let obj = EncryptedObject::decode(&raw["k8s:enc:kms:v2:vault:".len()..]).unwrap();
    assert_eq!(obj.key_id, "key-1");

    let (code, body) = health(&s, "/readyz?verbose").await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("[+]kms-providers ok"), "{body}");
    assert!(health(&s, "/healthz?verbose")
        .await
        .1
        .contains("[+]kms-providers ok"));
    assert!(
        !health(&s, "/livez?verbose").await.1.contains("kms"),
        "upstream keeps KMS out of livez"
    );
    assert_eq!(health(&s, "/readyz/kms-providers").await.0, 200);

    drop(serving);
    let (code, body) = health(&s, "/readyz/kms-providers").await;
    assert_eq!(code, 500);
    assert!(
        body.contains("kms-provider-0: failed to perform status section"),
        "{body}"
    );
    let (code, body) = health(&s, "/readyz?verbose").await;
    assert_eq!(code, 500);
    assert!(
        body.contains("[-]kms-providers failed: reason withheld"),
        "{body}"
    );
    // What was read or written before keeps reading: the seed is cached.
    let got = api.get("a").await.unwrap();
    assert!(got.data.unwrap().contains_key("password"));

    let _serving = plugin.serve(&socket);
    for _ in 0..50 {
        if health(&s, "/readyz/kms-providers").await.0 == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the plugin came back but the check did not pass");
}

#[tokio::test]
async fn a_hanging_plugin_fails_writes_clearly_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kms.sock");
    let plugin = MockKmsPlugin::new("key-1");
    plugin.set_hang(true);
    let _serving = plugin.serve(&socket);
    let enc = load(&dir, &config("secrets", &kms(&socket, "300ms")), false).await;
    let s = harness::start_configured(|o| o.encryption = Some(enc)).await;
    let api: Api<Secret> = s.api("default");
    let status = harness::api_error(api.create(&PostParams::default(), &secret("a")).await);
    assert_eq!(status.code, 500, "{status:?}");
    assert!(
        status.message.contains("vault"),
        "names the provider: {}",
        status.message
    );
    let raw = s.slot.current().unwrap();
    assert!(
        raw.get("/secrets/default/a", None).await.unwrap().is_none(),
        "nothing stored"
    );
    let (code, body) = health(&s, "/readyz/kms-providers").await;
    assert_eq!(code, 500);
    assert!(body.contains("DeadlineExceeded"), "{body}");
}

#[tokio::test]
async fn automatic_reload_switches_providers_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let enc = load(&dir, &config("secrets", &aescbc("key1", KEY1)), true).await;
    let s = harness::start_configured(|o| o.encryption = Some(enc)).await;
    assert!(
        health(&s, "/healthz?verbose")
            .await
            .1
            .contains("[+]kms-providers ok"),
        "reload: always checked"
    );
    let api: Api<Secret> = s.api("default");
    api.create(&PostParams::default(), &secret("before"))
        .await
        .unwrap();
    let socket = dir.path().join("kms.sock");
    let plugin = MockKmsPlugin::new("key-1");
    let _serving = plugin.serve(&socket);
    let both = format!("{}, {}", kms(&socket, "2s"), aescbc("key1", KEY1));
    std::fs::write(dir.path().join("encryption.yaml"), config("secrets", &both)).unwrap();
    for i in 0..100 {
        let name = format!("s{i}");
        api.create(&PostParams::default(), &secret(&name))
            .await
            .unwrap();
        if stored(&s, &format!("/secrets/default/{name}"))
            .await
            .starts_with(b"k8s:enc:kms:v2:vault:")
        {
            let got = api.get("before").await.unwrap();
            assert!(got.data.is_some(), "older values still read");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the reloaded configuration never took over");
}
