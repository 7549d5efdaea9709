//! The test KMS v2 plugin as a program, for checking by hand that kapi and
//! kube-apiserver read each other's KMS-encrypted values (both pointed at the
//! same socket and the same etcd):
//!
//! ```sh
//! cargo run -p kapi-encryption --features testing --example kms-plugin -- /tmp/kms.sock key-1
//! ```
//!
//! Its key-encryption keys live only in this process: values it wrapped are
//! readable only while it runs.

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let socket = args.next().unwrap_or_else(|| "/tmp/kms.sock".into());
    let key_id = args.next().unwrap_or_else(|| "key-1".into());
    let plugin = kapi_encryption::testing::MockKmsPlugin::new(&key_id);
    let _serving = plugin.serve(std::path::Path::new(&socket));
    eprintln!("KMS v2 plugin on unix://{socket} with key ID {key_id}; Ctrl-C stops it");
    let _ = tokio::signal::ctrl_c().await;
    eprintln!(
        "Status {} / Encrypt {} / Decrypt {} calls",
        plugin.status_calls(),
        plugin.encrypt_calls(),
        plugin.decrypt_calls()
    );
}
