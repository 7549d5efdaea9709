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

/// The server keeps its identity Lease in kube-system, as kube-apiserver
/// does with `APIServerIdentity` on: named after the host, held by the name
/// and a UUID of this start, labelled, an hour long, renewed.
#[tokio::test]
async fn the_server_keeps_its_identity_lease() {
    let s = crate::harness::start().await;
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> = s.api("kube-system");
    let lp =
        kube::api::ListParams::default().labels("apiserver.kubernetes.io/identity=kube-apiserver");
    let mut found = None;
    for _ in 0..100 {
        let list = leases.list(&lp).await.unwrap();
        if let Some(l) = list.items.into_iter().next() {
            found = Some(l);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let lease = found.expect("an identity lease");
    let name = lease.metadata.name.clone().unwrap();
    assert!(
        name.starts_with("apiserver-") && name.len() == "apiserver-".len() + 26,
        "{name}"
    );
    let labels = lease.metadata.labels.clone().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], host.trim());
    let spec = lease.spec.unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(3600));
    let holder = spec.holder_identity.unwrap();
    assert!(holder.starts_with(&format!("{name}_")), "{holder}");
    assert!(spec.renew_time.is_some());
    let managers: Vec<String> = lease
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["kube-apiserver"]);
}
