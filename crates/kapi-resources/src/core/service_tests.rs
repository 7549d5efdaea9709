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
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert!(spec.get("externalTrafficPolicy").is_none());
    // The IP families are the registry's, filled when the object is prepared.
    assert!(spec.get("ipFamilies").is_none() && spec.get("ipFamilyPolicy").is_none());
    ServiceStrategy.prepare_for_create(&mut s);
    assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
    // An update keeps the stored families while the cluster IPs stay.
    let mut old = s.clone();
    old["spec"]["clusterIPs"] = json!(["fd00::10"]);
    old["spec"]["clusterIP"] = json!("fd00::10");
    old["spec"]["ipFamilies"] = json!(["IPv6"]);
    old["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
    let mut new = svc();
    ServiceStrategy.default(&mut new);
    ServiceStrategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"]["clusterIPs"], json!(["fd00::10"]));
    assert_eq!(new["spec"]["ipFamilies"], json!(["IPv6"]));
    assert_eq!(new["spec"]["ipFamilyPolicy"], "PreferDualStack");
    let mut external = json!({"spec": {"type": "ExternalName", "externalName": "a.b"}});
    ServiceStrategy.default(&mut external);
    ServiceStrategy.prepare_for_create(&mut external);
    assert!(external["spec"].get("ipFamilies").is_none());

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
    ServiceStrategy.default(&mut s);
    assert_eq!(s["spec"]["clusterIPs"], json!(["None"]));
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

/// A stored service as create leaves it: defaulted, with allocated values.
fn stored(spec: Value) -> Value {
    let mut s = json!({"metadata": {"name": "web"}, "spec": spec});
    ServiceStrategy.default(&mut s);
    s
}

/// What a merge patch of `patch` onto `old` becomes after prepare and defaults.
fn updated(old: &Value, patch: Value) -> Value {
    let mut new = old.clone();
    for (k, v) in patch.as_object().unwrap() {
        new["spec"][k] = v.clone();
    }
    ServiceStrategy.prepare_for_update(&mut new, old);
    ServiceStrategy.default(&mut new);
    new
}

#[test]
fn old_client_changing_cluster_ip_is_refused() {
    let old = stored(json!({"clusterIP": "10.0.0.10", "ports": [{"port": 80}]}));
    let new = updated(&old, json!({"clusterIP": "10.0.0.99"}));
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.99"]));
    assert_eq!(
        msgs(ServiceStrategy.validate_update(&new, &old)),
        vec!["spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.99\"}: may not change once set"]
    );
    let mut skewed = new.clone();
    skewed["spec"]["clusterIPs"] = json!(["10.0.0.10"]);
    assert_eq!(
        msgs(ServiceStrategy.validate(&skewed)),
        vec!["spec.clusterIPs: Invalid value: []string{\"10.0.0.10\"}: first value must match `clusterIP`"]
    );
}

#[test]
fn type_changes_drop_what_no_longer_applies() {
    let lb = stored(json!({"type": "LoadBalancer", "clusterIP": "10.0.0.10",
        "ports": [{"name": "a", "port": 80, "nodePort": 30080}]}));
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    let cip = updated(&lb, json!({"type": "ClusterIP"}));
    assert!(cip["spec"]["ports"][0].get("nodePort").is_none());
    assert!(cip["spec"].get("allocateLoadBalancerNodePorts").is_none());
    assert!(cip["spec"].get("externalTrafficPolicy").is_none());
    assert_eq!(cip["spec"]["clusterIP"], "10.0.0.10");
    assert!(ServiceStrategy.validate_update(&cip, &lb).is_empty());

    let ext = updated(
        &cip,
        json!({"type": "ExternalName", "externalName": "example.com."}),
    );
    for gone in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(ext["spec"].get(gone).is_none(), "{gone} kept");
    }
    assert!(ServiceStrategy.validate_update(&ext, &cip).is_empty());

    let mut bad = ext.clone();
    bad["spec"]["clusterIPs"] = json!(["10.0.0.10"]);
    assert_eq!(
        msgs(ServiceStrategy.validate(&bad)),
        vec!["spec.clusterIPs: Forbidden: may not be set for ExternalName services"]
    );
}

#[test]
fn ports_duplicates_and_traffic_policy() {
    let s = stored(json!({"ports": [{"port": 80}, {"port": 80}]}));
    let errs = msgs(ServiceStrategy.validate(&s));
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[2].starts_with("spec.ports[1]: Duplicate value: "),
        "{errs:?}"
    );
    assert!(!errs.iter().any(|e| e.contains("name: Duplicate")));
    let mut s = stored(json!({"ports": [{"port": 80}]}));
    s["spec"]["externalTrafficPolicy"] = json!("Local");
    assert_eq!(
        msgs(ServiceStrategy.validate(&s)),
        vec!["spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services"]
    );
    let with_external_ip = stored(json!({"ports": [{"port": 80}], "externalIPs": ["192.0.2.1"]}));
    assert_eq!(with_external_ip["spec"]["externalTrafficPolicy"], "Cluster");
    let affinity = stored(
        json!({"ports": [{"port": 80}], "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
    );
    assert!(affinity["spec"].get("sessionAffinityConfig").is_none());
}
