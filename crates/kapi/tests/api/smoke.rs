//! Bootstrap: the namespaces and the `kubernetes` service every cluster starts with.

use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::Api;

use crate::harness;

#[tokio::test]
async fn bootstrap_objects_exist() {
    let s = harness::start().await;
    let ns: Api<Namespace> = s.cluster();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let got = ns.get(name).await.expect(name);
        assert_eq!(got.metadata.name.as_deref(), Some(name));
    }
    let svc: Api<Service> = s.api("default");
    let k = svc.get("kubernetes").await.unwrap();
    assert_eq!(k.spec.unwrap().cluster_ip.as_deref(), Some("10.0.0.1"));
}
