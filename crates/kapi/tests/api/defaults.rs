//! Defaulting as upstream does it, seen through the typed client.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::PostParams;
use kube::Api;
use serde_json::json;

use crate::harness;

pub fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}
            }
        }
    }))
    .unwrap()
}

pub fn pod(name: &str, images: &[&str]) -> Pod {
    let containers: Vec<_> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers}
    }))
    .unwrap()
}

#[tokio::test]
async fn deployment_defaults() {
    let s = harness::start().await;
    let api: Api<Deployment> = s.api("default");
    let d = api
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let ru = strategy.rolling_update.unwrap();
    assert_eq!(ru.max_surge, Some(IntOrString::String("25%".into())));
    assert_eq!(ru.max_unavailable, Some(IntOrString::String("25%".into())));
    assert_eq!(d.metadata.generation, Some(1));
}

#[tokio::test]
async fn pod_defaults() {
    let s = harness::start().await;
    let api: Api<Pod> = s.api("default");
    let p = api
        .create(&PostParams::default(), &pod("p", &["nginx", "nginx:1.25"]))
        .await
        .unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    let policies: Vec<_> = spec
        .containers
        .iter()
        .map(|c| c.image_pull_policy.as_deref())
        .collect();
    assert_eq!(policies, vec![Some("Always"), Some("IfNotPresent")]);
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
}

#[tokio::test]
async fn service_defaults_and_cluster_ip() {
    let s = harness::start().await;
    let api: Api<Service> = s.api("default");
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }))
    .unwrap();
    let out = api.create(&PostParams::default(), &svc).await.unwrap();
    let spec = out.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    let ip = spec.cluster_ip.unwrap();
    let addr: std::net::Ipv4Addr = ip.parse().unwrap();
    assert_eq!(addr.octets()[..3], [10, 0, 0], "{ip}");
    assert_ne!(ip, "10.0.0.1", "the kubernetes service holds .1");
    assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(port.target_port, Some(IntOrString::Int(80)));
}

#[tokio::test]
async fn node_port_service_gets_port_in_range() {
    let s = harness::start().await;
    let api: Api<Service> = s.api("default");
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]}
    }))
    .unwrap();
    let out = api.create(&PostParams::default(), &svc).await.unwrap();
    let node_port = out.spec.unwrap().ports.unwrap()[0].node_port.unwrap();
    assert!((30000..=32767).contains(&node_port), "{node_port}");
}

#[tokio::test]
async fn type_changes_allocate_what_the_new_type_needs() {
    use kube::api::{Patch, PatchParams};
    let s = harness::start().await;
    let api: Api<Service> = s.api("default");
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "grow"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &svc).await.unwrap();
    let ip = created.spec.unwrap().cluster_ip.unwrap();

    // ClusterIP → NodePort: node ports allocated, the cluster IP kept.
    let to_np = Patch::Merge(json!({"spec": {"type": "NodePort"}}));
    let np = api
        .patch("grow", &PatchParams::default(), &to_np)
        .await
        .unwrap();
    let spec = np.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some(ip.as_str()));
    let ports: Vec<i32> = spec
        .ports
        .unwrap()
        .iter()
        .map(|p| p.node_port.unwrap())
        .collect();
    assert!(
        ports.iter().all(|p| (30000..=32767).contains(p)),
        "{ports:?}"
    );
    assert_ne!(ports[0], ports[1]);

    // A later update that leaves node ports out keeps them.
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"tier": "web"}}}));
    let again = api
        .patch("grow", &PatchParams::default(), &relabel)
        .await
        .unwrap();
    let kept: Vec<i32> = again
        .spec
        .unwrap()
        .ports
        .unwrap()
        .iter()
        .map(|p| p.node_port.unwrap())
        .collect();
    assert_eq!(kept, ports);

    // ExternalName → ClusterIP: a cluster IP is allocated.
    let ext: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "db.example.com"}
    }))
    .unwrap();
    api.create(&PostParams::default(), &ext).await.unwrap();
    let to_cip = Patch::Merge(json!({"spec": {"type": "ClusterIP", "externalName": null,
                                               "ports": [{"port": 5432}]}}));
    let cip = api
        .patch("ext", &PatchParams::default(), &to_cip)
        .await
        .unwrap();
    let spec = cip.spec.unwrap();
    let new_ip = spec.cluster_ip.expect("a cluster IP");
    assert!(new_ip.parse::<std::net::Ipv4Addr>().is_ok(), "{new_ip}");
    assert_ne!(new_ip, ip);
    assert_eq!(spec.cluster_ips, Some(vec![new_ip]));
}
