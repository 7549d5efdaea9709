//! Generates the konnectivity `ProxyService` client (and the server the
//! tests run) from `proto/konnectivity.proto` (protoc: `PROTOC`, set by
//! `.cargo/config.toml` to `scripts/protoc`, as for etcd-client).

fn main() {
    println!("cargo:rerun-if-changed=proto/konnectivity.proto");
    tonic_prost_build::configure()
        .compile_protos(&["proto/konnectivity.proto"], &["proto"])
        .expect("compiling proto/konnectivity.proto");
}
