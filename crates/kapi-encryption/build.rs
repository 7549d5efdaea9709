//! Generates the KMS v2 gRPC client and server and the stored envelope's
//! message from `proto/kms_v2.proto` (protoc: `PROTOC`, set by
//! `.cargo/config.toml` to `scripts/protoc`, as for etcd-client).

fn main() {
    println!("cargo:rerun-if-changed=proto/kms_v2.proto");
    tonic_prost_build::configure()
        .compile_protos(&["proto/kms_v2.proto"], &["proto"])
        .expect("compiling proto/kms_v2.proto");
}
