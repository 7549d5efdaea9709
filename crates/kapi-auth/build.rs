//! Generates the external service account token signer's gRPC client and
//! server from `proto/externaljwt_v1alpha1.proto` (protoc: `PROTOC`, set by
//! `.cargo/config.toml` to `scripts/protoc`, as for etcd-client).

fn main() {
    println!("cargo:rerun-if-changed=proto/externaljwt_v1alpha1.proto");
    tonic_prost_build::configure()
        .compile_protos(&["proto/externaljwt_v1alpha1.proto"], &["proto"])
        .expect("compiling proto/externaljwt_v1alpha1.proto");
}
