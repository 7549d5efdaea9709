//! `--encryption-provider-config` on a real command line against real etcd:
//! a Secret created with kubectl is kept in etcd under the provider's prefix
//! with no plaintext and read back in plaintext; with automatic reload the
//! `kms-providers` check is on `/readyz`; a bad file, or reload without a
//! file, stops the start with the message saying why.

use std::process::Command;
use std::time::{Duration, Instant};

use kapi_storage::Backend;

use crate::proc::{self, Server};

const KEY: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";

fn config(secret: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        secret: {secret}\n  - identity: {{}}\n"
    )
}

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl (on PATH) runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// kubectl until it succeeds (RBAC's first sync), or panic with what it said.
fn kubectl_ok(kubeconfig: &std::path::Path, server: &Server, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, text) = kubectl(kubeconfig, args);
        if ok {
            return text;
        }
        if Instant::now() > deadline {
            panic!(
                "kubectl {args:?}: {text}\nserver log:\n{}",
                server.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn etcd_value(url: &str, key: &str) -> Vec<u8> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let cfg = kapi_storage::etcd::EtcdConfig::new(vec![url.to_owned()]);
        let etcd = kapi_storage::etcd::EtcdBackend::connect(&cfg)
            .await
            .unwrap();
        etcd.get(key, None)
            .await
            .unwrap()
            .expect("in etcd")
            .value
            .to_vec()
    })
}

#[test]
fn secrets_encrypted_in_etcd_from_the_command_line() {
    let etcd = kapi_testkit::Etcd::start();
    let tmp = tempfile::tempdir().unwrap();
    let certs = tmp.path().join("certs");
    let file = tmp.path().join("encryption.yaml");
    std::fs::write(&file, config(KEY)).unwrap();
    let args: Vec<String> = vec![
        format!("--cert-dir={}", certs.display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--etcd-servers={}", etcd.client_url),
        format!("--encryption-provider-config={}", file.display()),
        "--encryption-provider-config-automatic-reload".into(),
    ];
    let server = Server::start(tmp.path(), &args);
    let kubeconfig = certs.join("kapi-data/admin.kubeconfig");
    let create = [
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=correct-horse-battery",
    ];
    kubectl_ok(&kubeconfig, &server, &create);
    let stored = etcd_value(&etcd.client_url, "/secrets/default/s1");
    assert!(
        stored.starts_with(b"k8s:enc:aescbc:v1:key1:"),
        "{}",
        String::from_utf8_lossy(&stored)
    );
    assert!(!stored.windows(13).any(|w| w == b"correct-horse"));
    let got = kubectl_ok(
        &kubeconfig,
        &server,
        &["get", "secret", "s1", "-o", "jsonpath={.data.password}"],
    );
    assert_eq!(got.trim(), "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5");
    let readyz = kubectl_ok(&kubeconfig, &server, &["get", "--raw", "/readyz?verbose"]);
    assert!(readyz.contains("[+]kms-providers ok"), "{readyz}");
    proc::kubectl_get_ns(&kubeconfig, &server);
}

#[test]
fn bad_encryption_command_lines_stop_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("encryption.yaml");
    std::fs::write(&file, config("c2hvcnQ=")).unwrap();
    let flag = format!("--encryption-provider-config={}", file.display());
    let data = format!("--data-dir={}", tmp.path().join("data").display());
    let (code, _, err) = proc::run_once(tmp.path(), &[&flag, &data, "--secure-port=0"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5"),
        "{err}"
    );
    assert!(!err.contains("c2hvcnQ="), "the secret is not shown");
    let (code, _, err) = proc::run_once(
        tmp.path(),
        &[
            "--encryption-provider-config-automatic-reload",
            &data,
            "--secure-port=0",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"), "{err}");
}
