//! Tests of `pod_warnings.rs`: the texts and order of upstream's pod and
//! template warnings.

use super::*;
use serde_json::json;

fn template(spec: Value) -> Vec<String> {
    let t = json!({"metadata": {}, "spec": spec});
    template_warnings(&FieldPath::new("spec").child("template"), Some(&t))
}

#[test]
fn env_defined_twice_warns_unless_it_builds_on_the_first() {
    let w = template(json!({"containers": [{"name": "c", "env": [
        {"name": "A", "value": "1"}, {"name": "A", "value": "2"},
        {"name": "B", "value": "1"}, {"name": "B", "value": "$(B)x"},
        {"name": "C", "value": "1"}, {"name": "C", "value": "$(C)"}]}]}));
    assert_eq!(
        w,
        [
            "spec.template.spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped when using apply",
            "spec.template.spec.containers[0].env[5]: hides previous definition of \"C\", which may be dropped when using apply",
        ]
    );
}

#[test]
fn ports_are_compared_across_containers_init_containers_first() {
    let w = template(json!({
        "containers": [{"name": "c", "ports": [
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 81, "protocol": "TCP", "hostIP": "1.2.3.4"},
            {"containerPort": 82, "protocol": "TCP", "hostPort": 82},
            {"containerPort": 82, "protocol": "TCP", "hostPort": 82, "hostIP": "1.1.1.1"}]}],
        "initContainers": [{"name": "i", "ports": [
            {"containerPort": 80, "protocol": "TCP", "hostPort": 8080}]}]}));
    let p = "spec.template.spec";
    assert_eq!(
        w,
        [
            format!("{p}.containers[0].ports[0]: overlapping port definition with {p}.initContainers[0].ports[0]"),
            format!("{p}.containers[0].ports[1]: overlapping port definition with {p}.initContainers[0].ports[0]"),
            format!("{p}.containers[0].ports[1]: duplicate port definition with {p}.containers[0].ports[0]"),
            format!("{p}.containers[0].ports[2]: hostIP set without hostPort: {{Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.2.3.4}}"),
            format!("{p}.containers[0].ports[4]: dangerously ambiguous port definition with {p}.containers[0].ports[3]"),
        ]
    );
}

#[test]
fn fractional_bytes_are_named_in_canonical_form() {
    let w = template(json!({"containers": [{"name": "c", "resources": {
        "limits": {"memory": "100m", "ephemeral-storage": "1.5", "cpu": "1.5"},
        "requests": {"memory": "1Gi"}}}]}));
    assert_eq!(
        w,
        [
            "spec.template.spec.containers[0].resources.limits[memory]: fractional byte value \"100m\" is invalid, must be an integer",
            "spec.template.spec.containers[0].resources.limits[ephemeral-storage]: fractional byte value \"1500m\" is invalid, must be an integer",
        ]
    );
}

#[test]
fn a_pod_names_its_fields_from_the_root_and_warns_for_its_name() {
    let pod = json!({"metadata": {"name": "a.b", "annotations": {SECCOMP_POD: "x"}},
        "spec": {"nodeSelector": {"beta.kubernetes.io/os": "linux"},
                 "terminationGracePeriodSeconds": -1,
                 "volumes": [{"name": "g", "gitRepo": {"repository": "r"}}]}});
    assert_eq!(
        pod_create_warnings(&pod),
        [
            "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]",
            "spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead",
            "spec.volumes[0].gitRepo: deprecated in v1.11",
            "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the \"seccompProfile\" field instead",
            "spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
        ]
    );
}
