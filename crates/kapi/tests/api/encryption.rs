//! Encryption at rest through the whole server (`--encryption-provider-config`):
//! Secrets are kept encrypted in the store — raw bytes carry the provider's
//! prefix and no plaintext — while every read path, including the watch
//! cache's JSON and protobuf LIST fast paths and watches, serves plaintext;
//! a key rotation the upstream way (add a key and restart, replace every
//! Secret, drop the old key); the same on real etcd.

use std::sync::Arc;

use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use kapi_encryption::{Encryption, Settings};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::Api;

use crate::harness::{self, configmap, rv, TestServer};

/// The value every test Secret holds; it must never be found at rest.
const SECRET_VALUE: &str = "correct-horse-battery-staple";
pub const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
pub const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=";

pub fn aescbc(name: &str, secret: &str) -> String {
    format!("{{aescbc: {{keys: [{{name: {name}, secret: '{secret}'}}]}}}}")
}

/// A configuration keeping `resources` with `providers`.
pub fn config(resources: &str, providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [{resources}]\n  providers: [{providers}]\n"
    )
}

/// `content` written to a file of its own and loaded.
pub async fn load(content: &str, reload: bool) -> (Arc<Encryption>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("encryption.yaml");
    std::fs::write(&path, content).unwrap();
    let enc = Encryption::load(Settings::new(&path, reload))
        .await
        .unwrap();
    (enc, dir)
}

pub fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("password".to_string(), ByteString(SECRET_VALUE.into()))].into()),
        ..Default::default()
    }
}

/// What the store below the server keeps at `key`.
pub async fn stored(s: &TestServer, key: &str) -> Vec<u8> {
    let raw = s.slot.current().expect("store");
    raw.get(key, None)
        .await
        .unwrap()
        .expect("stored")
        .value
        .to_vec()
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// At rest: the prefix, and neither the value nor its base64.
pub fn assert_encrypted(bytes: &[u8], prefix: &str) {
    assert!(
        bytes.starts_with(prefix.as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
    );
    assert!(!contains(bytes, SECRET_VALUE.as_bytes()));
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, SECRET_VALUE);
    assert!(!contains(bytes, b64.as_bytes()), "plaintext at rest");
}

async fn get_bytes(s: &TestServer, path: &str, accept: &str) -> Vec<u8> {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    assert_eq!(resp.status(), 200, "{path}");
    resp.into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

#[tokio::test]
async fn secrets_are_encrypted_at_rest_and_every_read_is_plaintext() {
    let (enc, _dir) = load(&config("secrets", &aescbc("key1", KEY1)), false).await;
    let s = harness::start_configured(|o| o.encryption = Some(enc)).await;
    let secrets: Api<Secret> = s.api("default");
    let mut watch = {
        use futures::StreamExt;
        let w = secrets.watch(&Default::default(), "0").await.unwrap();
        w.boxed()
    };
    for name in ["a", "b"] {
        secrets
            .create(&PostParams::default(), &secret(name))
            .await
            .unwrap();
    }
    assert_encrypted(
        &stored(&s, "/secrets/default/a").await,
        "k8s:enc:aescbc:v1:key1:",
    );
    let configmaps: Api<ConfigMap> = s.api("default");
    configmaps
        .create(&PostParams::default(), &configmap("c", &[]))
        .await
        .unwrap();
    assert!(
        stored(&s, "/configmaps/default/c")
            .await
            .starts_with(b"k8s\0"),
        "not configured: plain (protobuf, the default media type)"
    );

    let got = secrets.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["password"].0, SECRET_VALUE.as_bytes());
    let list = secrets.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    // The watch cache's fast LIST paths stream what the cache holds.
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, SECRET_VALUE);
    for accept in ["application/json", "application/vnd.kubernetes.protobuf"] {
        for path in [
            "/api/v1/namespaces/default/secrets",
            "/api/v1/secrets?resourceVersion=0",
        ] {
            let body = get_bytes(&s, path, accept).await;
            assert!(
                !contains(&body, b"k8s:enc:"),
                "{accept} {path}: ciphertext served"
            );
            let value: &[u8] = if accept == "application/json" {
                b64.as_bytes()
            } else {
                SECRET_VALUE.as_bytes()
            };
            assert!(contains(&body, value), "{accept} {path}: no plaintext");
        }
    }
    {
        use futures::StreamExt;
        let first = watch.next().await.unwrap().unwrap();
        let kube::api::WatchEvent::Added(obj) = first else {
            panic!("{first:?}")
        };
        assert_eq!(obj.data.unwrap()["password"].0, SECRET_VALUE.as_bytes());
    }
}

/// Replace every Secret unchanged, as `kubectl get secrets -A -o json |
/// kubectl replace -f -` does; returns how many changed resourceVersion.
async fn replace_all(s: &TestServer) -> usize {
    let all: Api<Secret> = Api::all(s.client.clone());
    let mut rewritten = 0;
    for item in all.list(&ListParams::default()).await.unwrap() {
        let ns = item.metadata.namespace.clone().unwrap();
        let api: Api<Secret> = s.api(&ns);
        let name = item.metadata.name.clone().unwrap();
        let after = api
            .replace(&name, &PostParams::default(), &item)
            .await
            .unwrap();
        if rv(&after.metadata) != rv(&item.metadata) {
            rewritten += 1;
        }
    }
    rewritten
}

#[tokio::test]
async fn key_rotation_the_upstream_way() {
    let (old, _d1) = load(&config("secrets", &aescbc("key1", KEY1)), false).await;
    let s1 = harness::start_configured(|o| o.encryption = Some(old)).await;
    let api: Api<Secret> = s1.api("default");
    for i in 0..5 {
        api.create(&PostParams::default(), &secret(&format!("s{i}")))
            .await
            .unwrap();
    }
    assert_eq!(
        replace_all(&s1).await,
        0,
        "an unchanged replace writes nothing"
    );

    // 1. Add the new key first and restart: new writes use it, all still read.
    let both = format!("{}, {}", aescbc("key2", KEY2), aescbc("key1", KEY1));
    let (both, _d2) = load(&config("secrets", &both), false).await;
    let s2 = s1.another(|o| o.encryption = Some(both)).await;
    let api2: Api<Secret> = s2.api("default");
    api2.create(&PostParams::default(), &secret("new"))
        .await
        .unwrap();
    assert_encrypted(
        &stored(&s2, "/secrets/default/new").await,
        "k8s:enc:aescbc:v1:key2:",
    );
    assert_encrypted(
        &stored(&s2, "/secrets/default/s0").await,
        "k8s:enc:aescbc:v1:key1:",
    );
    // 2. Rewrite every Secret: unchanged, yet each one read through the old
    // key is written again (the stale read), under the new key.
    assert_eq!(
        replace_all(&s2).await,
        5,
        "the five old Secrets are rewritten"
    );
    for i in 0..5 {
        assert_encrypted(
            &stored(&s2, &format!("/secrets/default/s{i}")).await,
            "k8s:enc:aescbc:v1:key2:",
        );
    }
    assert_eq!(replace_all(&s2).await, 0, "nothing stale any more");
    // 3. Drop the old key: everything still reads.
    let (only_new, _d3) = load(&config("secrets", &aescbc("key2", KEY2)), false).await;
    let s3 = s2.another(|o| o.encryption = Some(only_new)).await;
    let api3: Api<Secret> = s3.api("default");
    let list = api3.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 6);
    for item in list.items {
        assert_eq!(item.data.unwrap()["password"].0, SECRET_VALUE.as_bytes());
    }
}

#[tokio::test]
async fn a_secret_the_server_cannot_decrypt_is_an_internal_error() {
    let (enc, _d) = load(&config("secrets", &aescbc("key1", KEY1)), false).await;
    let s1 = harness::start_configured(|o| o.encryption = Some(enc)).await;
    let api: Api<Secret> = s1.api("default");
    api.create(&PostParams::default(), &secret("a"))
        .await
        .unwrap();
    // Restarted without the key the Secret was written with.
    let (other, _d2) = load(&config("secrets", &aescbc("key2", KEY2)), false).await;
    let s2 = s1.another(|o| o.encryption = Some(other)).await;
    let api2: Api<Secret> = s2.api("default");
    let status = harness::api_error(api2.get("a").await);
    assert_eq!(status.code, 500, "{status:?}");
    assert!(
        status.message.contains("/registry/secrets/default/a"),
        "{}",
        status.message
    );
    // Writes still encrypt with the key it has.
    api2.create(&PostParams::default(), &secret("b"))
        .await
        .unwrap();
    assert_encrypted(
        &stored(&s2, "/secrets/default/b").await,
        "k8s:enc:aescbc:v1:key2:",
    );
}

/// `--etcd-servers-overrides` moves a resource to another store; the
/// encryption configuration covers it there as well.
#[tokio::test]
async fn secrets_in_an_override_store_are_encrypted_too() {
    let dir = tempfile::tempdir().unwrap();
    let config_dir = kapi_storage::embedded::EmbeddedConfig::new(dir.path().join("secrets"));
    let slot =
        kapi_storage::factory::open(kapi_storage::factory::StorageConfig::Embedded(config_dir))
            .unwrap();
    slot.wait_ready(std::time::Duration::from_secs(10))
        .await
        .unwrap();
    let other: Arc<dyn kapi_storage::Backend> = Arc::new(slot);
    let raw = other.clone();
    let (enc, _d) = load(&config("secrets", &aescbc("key1", KEY1)), false).await;
    let s = harness::start_configured(move |o| {
        o.encryption = Some(enc);
        o.storage.overrides = vec![(("".into(), "secrets".into()), other)];
    })
    .await;
    let api: Api<Secret> = s.api("default");
    api.create(&PostParams::default(), &secret("moved"))
        .await
        .unwrap();
    let at_rest = raw
        .get("/secrets/default/moved", None)
        .await
        .unwrap()
        .expect("in the override store")
        .value;
    assert_encrypted(&at_rest, "k8s:enc:aescbc:v1:key1:");
    let got = api.get("moved").await.unwrap();
    assert_eq!(got.data.unwrap()["password"].0, SECRET_VALUE.as_bytes());
}
