//! Tests of the service strategy: defaults, validation, kept cluster IPs, table, fields.

use super::*;

fn msgs(errs: ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn svc() -> Value {
    json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
}

#[test]
fn defaults() {
    let mut s = svc();
    ServiceStrategy.default(&mut s);
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["ports"][0]["protocol"], "TCP");
    assert_eq!(spec["ports"][0]["targetPort"], 80);
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert!(spec.get("externalTrafficPolicy").is_none());

    let mut np =
        json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http"}]}});
    ServiceStrategy.default(&mut np);
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(np["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn validation() {
    let mut s = json!({"spec": {"type": "Weird", "ports": [
        {"port": 0, "protocol": "TCP"}, {"name": "a", "port": 80, "protocol": "ICMP"}
    ], "sessionAffinity": "None"}});
    let errs = msgs(ServiceStrategy.validate(&s));
    assert!(errs.contains(&"spec.type: Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"".to_string()), "{errs:?}");
    assert!(errs.contains(&"spec.ports[0].name: Required value".to_string()));
    assert!(errs.contains(
        &"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".to_string()
    ));
    assert!(errs.contains(&"spec.ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string()));
    s = json!({"spec": {"type": "ClusterIP", "sessionAffinity": "None"}});
    assert_eq!(
        msgs(ServiceStrategy.validate(&s)),
        vec!["spec.ports: Required value"]
    );
    s["spec"]["clusterIP"] = json!("None");
    assert!(ServiceStrategy.validate(&s).is_empty());
}

#[test]
fn cluster_ip_is_kept_and_immutable() {
    let mut old = svc();
    old["spec"]["clusterIP"] = json!("10.0.0.10");
    ServiceStrategy.default(&mut old);
    let mut new = svc();
    ServiceStrategy.prepare_for_update(&mut new, &old);
    ServiceStrategy.default(&mut new);
    assert_eq!(new["spec"]["clusterIP"], "10.0.0.10");
    assert!(ServiceStrategy.validate_update(&new, &old).is_empty());
    new["spec"]["clusterIP"] = json!("10.0.0.11");
    new["spec"]["clusterIPs"] = json!(["10.0.0.11"]);
    assert_eq!(
        msgs(ServiceStrategy.validate_update(&new, &old)),
        vec!["spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.11\"}: may not change once set"]
    );
}

#[test]
fn table_cells() {
    let mut s = svc();
    s["spec"]["clusterIP"] = json!("10.0.0.10");
    ServiceStrategy.default(&mut s);
    let cells = ServiceStrategy.cells(&s);
    assert_eq!(cells[1], "ClusterIP");
    assert_eq!(cells[2], "10.0.0.10");
    assert_eq!(cells[3], "<none>");
    assert_eq!(cells[4], "80/TCP");
    assert_eq!(cells[6], "app=web");
    let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 443, "nodePort": 30443, "protocol": "TCP"}]}});
    let cells = ServiceStrategy.cells(&lb);
    assert_eq!(cells[2], "<none>");
    assert_eq!(cells[3], "<pending>");
    assert_eq!(cells[4], "443:30443/TCP");
}

#[test]
fn field_values() {
    let mut s = svc();
    s["spec"]["clusterIP"] = json!("10.0.0.10");
    ServiceStrategy.default(&mut s);
    assert_eq!(
        ServiceStrategy.field_value(&s, "spec.clusterIP").unwrap(),
        "10.0.0.10"
    );
    assert_eq!(
        ServiceStrategy.field_value(&s, "spec.type").unwrap(),
        "ClusterIP"
    );
}
