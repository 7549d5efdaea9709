//! Services' ClusterIPs and node ports, as kube-apiserver hands them out
//! (answers checked against 1.28.4 by hand): kept in storage so every server on
//! it sees one allocation, given back when a service goes (whoever deletes
//! it) or stops needing them, repaired at start from the services that exist.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{self, TestServer};

fn service(name: &str, spec: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

async fn create(s: &TestServer, ns: &str, name: &str, spec: Value) -> (u16, Value) {
    let path = format!("/api/v1/namespaces/{ns}/services");
    s.send_json("POST", &path, service(name, spec)).await
}

async fn delete(s: &TestServer, ns: &str, name: &str) {
    let path = format!("/api/v1/namespaces/{ns}/services/{name}");
    let (code, out) = s.send_json("DELETE", &path, Vec::new()).await;
    assert_eq!(code, 200, "{out}");
}

fn node_port_spec(ip: &str, port: u64) -> Value {
    json!({"type": "NodePort", "clusterIP": ip,
           "ports": [{"name": "t", "port": 80, "nodePort": port},
                     {"name": "u", "port": 80, "protocol": "UDP"}]})
}

#[tokio::test]
async fn a_deleted_services_address_and_node_ports_are_free_at_once() {
    let s = harness::start().await;
    let (code, out) = create(&s, "default", "a", node_port_spec("10.0.0.200", 31000)).await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["spec"]["clusterIPs"], json!(["10.0.0.200"]));
    // One node port per port number, shared by its protocols.
    assert_eq!(out["spec"]["ports"][1]["nodePort"], 31000);
    delete(&s, "default", "a").await;
    let (code, out) = create(&s, "default", "b", node_port_spec("10.0.0.200", 31000)).await;
    assert_eq!(code, 201, "{out}");
}

#[tokio::test]
async fn clashes_and_values_out_of_range_are_invalid_with_upstreams_messages() {
    let s = harness::start().await;
    let (code, out) = create(&s, "default", "a", node_port_spec("10.0.0.200", 31000)).await;
    assert_eq!(code, 201, "{out}");
    let cases = [
        (json!({"clusterIP": "10.0.0.200", "ports": [{"port": 80}]}),
         "spec.clusterIPs", "Invalid value: []string{\"10.0.0.200\"}: failed to allocate IP 10.0.0.200: provided IP is already allocated"),
        (json!({"clusterIP": "10.9.0.1", "ports": [{"port": 80}]}),
         "spec.clusterIPs", "Invalid value: []string{\"10.9.0.1\"}: failed to allocate IP 10.9.0.1: the provided IP (10.9.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/24"),
        (json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 31000}]}),
         "spec.ports[0].nodePort", "Invalid value: 31000: provided port is already allocated"),
        (json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
         "spec.ports[0].nodePort", "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"),
    ];
    for (spec, field, message) in cases {
        let (code, out) = create(&s, "default", "clash", spec).await;
        assert_eq!(code, 422, "{out}");
        assert_eq!(
            out["message"],
            format!("Service \"clash\" is invalid: {field}: {message}")
        );
        assert_eq!(out["details"]["name"], "clash");
        assert_eq!(
            out["details"]["causes"],
            json!([{"reason": "FieldValueInvalid",
                                                     "message": message, "field": field}])
        );
    }
    // Nothing a failed create took stays taken.
    let (code, out) = create(
        &s,
        "default",
        "c",
        json!({"clusterIP": "10.0.0.201", "type": "NodePort",
        "ports": [{"port": 80, "nodePort": 31001}, {"port": 81, "nodePort": 31000}]}),
    )
    .await;
    assert_eq!(code, 422, "{out}");
    let (code, out) = create(&s, "default", "c", node_port_spec("10.0.0.201", 31001)).await;
    assert_eq!(code, 201, "{out}");
}

/// Dry runs take nothing; as upstream's, they check a requested address
/// against the range only, and answer the range's network address and the
/// ports past the range for what they would allocate.
#[tokio::test]
async fn dry_runs_take_nothing() {
    let s = harness::start().await;
    let path = "/api/v1/namespaces/default/services?dryRun=All";
    let spec =
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]});
    let (code, out) = s.send_json("POST", path, service("d", spec)).await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["spec"]["clusterIP"], "10.0.0.0");
    assert_eq!(out["spec"]["ports"][0]["nodePort"], 32769);
    assert_eq!(out["spec"]["healthCheckNodePort"], 32770);
    let (code, out) = s
        .send_json(
            "POST",
            path,
            service(
                "d",
                json!({"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = create(&s, "default", "real", node_port_spec("10.0.0.9", 30009)).await;
    assert_eq!(code, 201, "{out}");
}

#[tokio::test]
async fn a_type_change_gives_back_what_is_no_longer_needed() {
    let s = harness::start().await;
    let (code, out) = create(&s, "default", "a", node_port_spec("10.0.0.50", 31500)).await;
    assert_eq!(code, 201, "{out}");
    let req = http::Request::patch("/api/v1/namespaces/default/services/a")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"spec":{"type":"ExternalName","externalName":"x.example.com","clusterIP":"","clusterIPs":null,"ports":[{"port":80}]}}"#.to_vec())
        .unwrap();
    let (code, out) = s.raw(req).await;
    assert_eq!(code, 200, "{out}");
    let (code, out) = create(&s, "default", "b", node_port_spec("10.0.0.50", 31500)).await;
    assert_eq!(code, 201, "{out}");
}

/// Two servers on one storage hand out each address once, and either sees
/// what the other gave back.
#[tokio::test]
async fn servers_on_one_storage_share_the_allocation() {
    let one = harness::start().await;
    let two = one.another(|_| {}).await;
    let (code, out) = create(&one, "default", "a", node_port_spec("10.0.0.77", 30077)).await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = create(&two, "default", "b", node_port_spec("10.0.0.77", 30078)).await;
    assert_eq!(code, 422, "{out}");
    let (code, out) = create(&two, "default", "b", node_port_spec("10.0.0.78", 30077)).await;
    assert_eq!(code, 422, "{out}");
    let mut ips = HashSet::new();
    for i in 0..20 {
        let s = if i % 2 == 0 { &one } else { &two };
        let spec = json!({"type": "NodePort", "ports": [{"port": 80}]});
        let (code, out) = create(s, "default", &format!("s{i}"), spec).await;
        assert_eq!(code, 201, "{out}");
        assert!(ips.insert(out["spec"]["clusterIP"].clone()), "{out}");
        assert!(
            ips.insert(out["spec"]["ports"][0]["nodePort"].clone()),
            "{out}"
        );
    }
    delete(&two, "default", "a").await;
    let (code, out) = create(&one, "default", "b", node_port_spec("10.0.0.77", 30077)).await;
    assert_eq!(code, 201, "{out}");
}

/// The namespace controller deletes through the store, not the API: the
/// addresses of the services it deletes are free again too.
#[tokio::test]
async fn services_deleted_with_their_namespace_give_their_addresses_back() {
    let s = harness::start().await;
    s.namespace("gone").await;
    let (code, out) = create(&s, "gone", "a", node_port_spec("10.0.0.90", 30090)).await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = s
        .send_json("DELETE", "/api/v1/namespaces/gone", Vec::new())
        .await;
    assert_eq!(code, 200, "{out}");
    for _ in 0..500 {
        if s.get_json("/api/v1/namespaces/gone").await.0 == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (code, out) = create(&s, "default", "b", node_port_spec("10.0.0.90", 30090)).await;
    assert_eq!(code, 201, "{out}");
}

/// A server starting on storage whose allocation lost track of a service
/// (written by an older kapi, or lost) records what the services hold.
#[tokio::test]
async fn a_start_repairs_the_allocation_from_the_services() {
    let s = harness::start().await;
    let (code, out) = create(&s, "default", "a", node_port_spec("10.0.0.60", 30060)).await;
    assert_eq!(code, 201, "{out}");
    for key in ["/ranges/serviceips", "/ranges/servicenodeports"] {
        s.backend
            .delete(key, None)
            .await
            .expect("range allocation stored");
    }
    let two = s.another(|_| {}).await;
    let (code, out) = create(&two, "default", "b", node_port_spec("10.0.0.60", 30061)).await;
    assert_eq!(code, 422, "{out}");
    let (code, out) = create(&two, "default", "b", node_port_spec("10.0.0.61", 30060)).await;
    assert_eq!(code, 422, "{out}");
}
