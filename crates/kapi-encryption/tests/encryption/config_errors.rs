//! Bad files stop the load with upstream's message, naming the field; the
//! file's secrets never appear in a message.

use kapi_encryption::{Encryption, Settings};

use crate::fixtures::*;

async fn load_error(content: &str) -> String {
    let dir = Dir::new();
    match Encryption::load(dir.settings(content)).await {
        Ok(_) => panic!("loaded: {content}"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn malformed_files() {
    let missing = Encryption::load(Settings::new("/nonexistent/enc.yaml", false)).await;
    assert!(missing.err().unwrap().contains(
        "error reading encryption provider configuration file \"/nonexistent/enc.yaml\""
    ));
    assert!(load_error("").await.contains("is empty"));
    assert!(load_error("{not yaml: [")
        .await
        .contains("error decoding encryption provider configuration file"));
    let e = load_error("apiVersion: v1\nkind: EncryptionConfig\nresources: []\n").await;
    assert!(
        e.contains(r#"no kind "EncryptionConfig" is registered for version "v1""#),
        "{e}"
    );
    let e = load_error(&config("- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k, secret: c2hvcnQ=, extra: 1}]}}]\n")).await;
    assert!(e.contains("extra"), "unknown fields are errors: {e}");
}

#[tokio::test]
async fn invalid_values_name_the_field_and_hide_the_secret() {
    let e = load_error(&config(&entry(
        "secrets",
        "{aescbc: {keys: [{name: k, secret: c2hvcnRrZXk=}]}}",
    )))
    .await;
    assert_eq!(
        e,
        r#"error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]"#
    );
    let e = load_error(&config(&entry(
        "secrets",
        "{kms: {name: old, endpoint: 'unix:///tmp/x.sock'}}",
    )))
    .await;
    assert!(e.contains("KMSv1"), "KMS v1 is off in 1.33: {e}");
    let e = load_error(&config(&format!(
        "{}{}",
        entry("'*.*'", "{identity: {}}"),
        entry("secrets", &aescbc("k", KEY32))
    )))
    .await;
    assert_eq!(
        e,
        r#"error while building transformers: resource "secrets" is masked by earlier rule "*.*""#
    );
}
