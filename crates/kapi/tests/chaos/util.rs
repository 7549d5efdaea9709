//! Small helpers shared by the chaos tests: the long-run switch, a seeded
//! random generator (no dependency), namespaces, and Status checks.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

/// `KAPI_LONG_TESTS=1` runs the long variants (more rounds, more iterations).
pub fn long() -> bool {
    std::env::var("KAPI_LONG_TESTS").is_ok_and(|v| v == "1")
}

/// xorshift64*: deterministic, seeded, good enough to pick moments and inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Create a namespace and return its name.
pub async fn namespace(client: &kube::Client, name: &str) -> String {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
    }))
    .unwrap();
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
    name.to_string()
}

/// A ConfigMap named `name` with `data: {k: v}`.
pub fn configmap(name: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": "v"}
    }))
    .unwrap()
}
