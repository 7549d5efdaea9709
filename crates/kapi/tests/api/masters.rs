//! Several servers on one storage: each keeps a master lease, and all of them
//! list every live server in `default/kubernetes` — the same answer from each,
//! so they do not overwrite one another.

use std::time::Duration;

use kapi_server::{Cidr, Server, ServerConfig};
use kapi_storage::embedded::EmbeddedConfig;
use kapi_storage::factory::{self, StorageConfig};
use serde_json::{json, Value};

async fn endpoints(srv: &Server) -> Option<Value> {
    let entry = srv.apis.lookup("", "v1", "endpoints")?;
    entry
        .store
        .get(Some("default"), "kubernetes", None)
        .await
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_storage_agree_on_the_kubernetes_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let slot = factory::open(StorageConfig::Embedded(EmbeddedConfig::new(dir.path()))).unwrap();
    slot.wait_ready(Duration::from_secs(10)).await.unwrap();
    let mut servers = Vec::new();
    for port in [7001u16, 7002] {
        let config = ServerConfig::new(
            format!("127.0.0.1:{port}"),
            port,
            Cidr::parse("10.0.0.0/24").unwrap(),
        );
        let built = kapi::build(kapi::Options::new(config), slot.clone());
        let srv = built.server.clone();
        let mut opts = kapi_controllers::Options::all("");
        opts.root_ca = None;
        built.start(&opts).await.unwrap();
        servers.push(srv);
    }
    let want = json!([
        {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 7001, "protocol": "TCP"}]},
        {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 7002, "protocol": "TCP"}]},
    ]);
    // A reconcile that listed the leases before the second server's first
    // lease write may land once after the agreement; after that no fight: the
    // object stays as it is while both keep reconciling.
    let mut settled = false;
    for _ in 0..3 {
        let ep = agreed(&servers[0], &want).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let later = endpoints(&servers[1]).await.unwrap();
        if later["metadata"]["resourceVersion"] == ep["metadata"]["resourceVersion"] {
            settled = true;
            break;
        }
    }
    assert!(settled, "the servers keep rewriting default/kubernetes");
}

/// The endpoints once they list exactly `want`.
async fn agreed(srv: &Server, want: &Value) -> Value {
    for _ in 0..100 {
        if let Some(ep) = endpoints(srv).await {
            if ep["subsets"] == *want {
                return ep;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("both servers listed");
}
