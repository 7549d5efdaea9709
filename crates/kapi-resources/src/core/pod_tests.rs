//! Tests of the pod strategy: defaults, create-time status, validation, update rules,
//! field selectors, deletion and table cells.

use super::*;
use serde_json::json;

fn pod() -> Value {
    json!({
        "metadata": {"name": "p", "namespace": "default", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    })
}

fn defaulted() -> Value {
    let mut p = pod();
    PodStrategy.default(&mut p);
    p
}

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn defaults_leave_admissions_fields_alone() {
    let p = defaulted();
    let spec = &p["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    // ServiceAccount, Priority and DefaultTolerationSeconds admission set these.
    for f in [
        "serviceAccountName",
        "serviceAccount",
        "priority",
        "preemptionPolicy",
    ] {
        assert!(spec.get(f).is_none(), "{f}");
    }
}

#[test]
fn create_sets_pending_status_and_qos() {
    let mut p = defaulted();
    p["status"] = json!({"phase": "Running"});
    PodStrategy.prepare_for_create(&mut p);
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    assert!(p["spec"].get("tolerations").is_none());
}

#[test]
fn qos_classes() {
    let with = |resources: Value| json!({"containers": [{"name": "c", "resources": resources}]});
    assert_eq!(qos_class(&with(json!({}))), "BestEffort");
    let limits = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}});
    assert_eq!(qos_class(&with(limits)), "Guaranteed");
    assert_eq!(
        qos_class(&with(json!({"requests": {"cpu": "100m"}}))),
        "Burstable"
    );
}

#[test]
fn limits_only_pod_is_guaranteed_after_create() {
    let mut p = pod();
    p["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1", "memory": "1Gi"}});
    PodStrategy.prepare_for_create(&mut p);
    assert_eq!(p["status"]["qosClass"], "Guaranteed");
}

#[test]
fn validation_requires_containers() {
    let p = json!({"metadata": {"name": "p"}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}});
    assert_eq!(
        messages(&PodStrategy.validate(&p)),
        vec!["spec.containers: Required value"]
    );
}

#[test]
fn validation_reports_container_errors() {
    let mut p = defaulted();
    p["spec"]["containers"] = json!([
        {"name": "Bad_Name", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File",
         "ports": [{"containerPort": 70000, "protocol": "TCP"}, {"containerPort": 80, "protocol": "ICMP"}]},
        {"name": "ok", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"},
        {"name": "ok", "image": "y", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}
    ]);
    p["spec"]["restartPolicy"] = json!("Sometimes");
    let msgs = messages(&PodStrategy.validate(&p));
    assert!(
        msgs.iter().any(|m| m.starts_with(
            "spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"
        )),
        "{msgs:?}"
    );
    assert!(msgs.contains(&"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".to_string()));
    assert!(msgs.contains(&"spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string()));
    assert!(msgs.contains(&"spec.containers[1].image: Required value".to_string()));
    assert!(msgs.contains(&"spec.containers[2].name: Duplicate value: \"ok\"".to_string()));
    assert!(msgs.contains(&"spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".to_string()));
}

#[test]
fn validation_checks_mounts_and_resources() {
    let mut p = defaulted();
    let c = &mut p["spec"]["containers"][0];
    c["volumeMounts"] = json!([{"name": "missing", "mountPath": "/x"}]);
    c["resources"] = json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}});
    let msgs = messages(&PodStrategy.validate(&p));
    assert!(
        msgs.contains(
            &"spec.containers[0].volumeMounts[0].name: Not found: \"missing\"".to_string()
        ),
        "{msgs:?}"
    );
    assert!(msgs.contains(&"spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1".to_string()), "{msgs:?}");
}

#[test]
fn update_allows_image_changes_only() {
    let old = defaulted();
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    assert!(PodStrategy.validate_update(&new, &old).is_empty());
    new["spec"]["restartPolicy"] = json!("Never");
    let errs = PodStrategy.validate_update(&new, &old);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec");
    assert!(errs[0].to_string().starts_with(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    ));
    assert!(errs[0].detail.contains("restartPolicy"));
}

#[test]
fn update_allows_toleration_additions_but_not_removals() {
    let mut old = defaulted();
    old["spec"]["tolerations"] = json!([{"key": "a", "operator": "Exists"}]);
    let mut new = old.clone();
    new["spec"]["tolerations"] =
        json!([{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]);
    assert!(PodStrategy.validate_update(&new, &old).is_empty());
    new["spec"]["tolerations"] = json!([]);
    let msgs = messages(&PodStrategy.validate_update(&new, &old));
    assert!(msgs.contains(&"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds".to_string()));
}

#[test]
fn update_active_deadline_may_only_decrease() {
    let mut old = defaulted();
    old["spec"]["activeDeadlineSeconds"] = json!(100);
    let mut new = old.clone();
    new["spec"]["activeDeadlineSeconds"] = json!(50);
    assert!(PodStrategy.validate_update(&new, &old).is_empty());
    new["spec"]["activeDeadlineSeconds"] = json!(200);
    let msgs = messages(&PodStrategy.validate_update(&new, &old));
    assert_eq!(msgs, vec!["spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"]);
}

#[test]
fn field_values() {
    let mut p = defaulted();
    p["spec"]["nodeName"] = json!("n1");
    p["status"] =
        json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], "nominatedNodeName": "n2"});
    let s = PodStrategy;
    let get = |f: &str| s.field_value(&p, f).unwrap();
    assert_eq!(get("spec.nodeName"), "n1");
    assert_eq!(get("spec.restartPolicy"), "Always");
    assert_eq!(get("spec.schedulerName"), "default-scheduler");
    assert_eq!(get("spec.serviceAccountName"), "");
    assert_eq!(get("spec.hostNetwork"), "false");
    assert_eq!(get("status.phase"), "Running");
    assert_eq!(get("status.podIP"), "10.0.0.1");
    assert_eq!(get("status.nominatedNodeName"), "n2");
    assert_eq!(s.field_value(&pod(), "status.phase").unwrap(), "");
    assert_eq!(get("status.podIPs"), "");
    assert_eq!(s.selectable_fields().len(), 9);
}

#[test]
fn graceful_delete_waits_for_a_kubelet_only() {
    let s = &PodStrategy;
    let mut p = defaulted();
    // Unscheduled: at once, whatever was asked.
    assert_eq!(s.graceful_delete(&p, None), Some(0));
    assert_eq!(s.graceful_delete(&p, Some(10)), Some(0));
    p["spec"]["nodeName"] = json!("n1");
    // Scheduled: the grace asked for, else the pod's own (defaulted to 30).
    assert_eq!(s.graceful_delete(&p, None), Some(30));
    assert_eq!(s.graceful_delete(&p, Some(10)), Some(10));
    assert_eq!(s.graceful_delete(&p, Some(0)), Some(0));
    p["spec"]["terminationGracePeriodSeconds"] = json!(5);
    assert_eq!(s.graceful_delete(&p, None), Some(5));
    p["spec"]["terminationGracePeriodSeconds"] = json!(-3);
    assert_eq!(s.graceful_delete(&p, None), Some(1));
    p["spec"]
        .as_object_mut()
        .unwrap()
        .remove("terminationGracePeriodSeconds");
    assert_eq!(s.graceful_delete(&p, None), Some(0));
    // Finished: at once.
    p["status"] = json!({"phase": "Succeeded"});
    assert_eq!(s.graceful_delete(&p, Some(10)), Some(0));
}

fn cells_of(p: &Value) -> Vec<Value> {
    PodStrategy.cells(p)
}

#[test]
fn table_for_running_pod() {
    let mut p = defaulted();
    p["spec"]["nodeName"] = json!("node-1");
    p["status"] = json!({
        "phase": "Running", "podIP": "10.1.2.3",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]
    });
    let cells = cells_of(&p);
    assert_eq!(cells.len(), PodStrategy.columns().len());
    assert_eq!(cells[0], "p");
    assert_eq!(cells[1], "1/1");
    assert_eq!(cells[2], "Running");
    assert_eq!(cells[3], "0");
    assert!(cells[4].as_str().unwrap().ends_with('y') || cells[4].as_str().unwrap().contains('y'));
    assert_eq!(cells[5], "10.1.2.3");
    assert_eq!(cells[6], "node-1");
    assert_eq!(cells[7], "<none>");
    assert_eq!(cells[8], "<none>");
}

#[test]
fn table_status_reasons() {
    let mut p = defaulted();
    p["status"] = json!({"phase": "Pending", "containerStatuses": [
        {"name": "c", "ready": false, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]});
    let cells = cells_of(&p);
    assert_eq!(cells[1], "0/1");
    assert_eq!(cells[2], "CrashLoopBackOff");
    assert_eq!(cells[3], "3");

    p["status"]["containerStatuses"][0]["state"] =
        json!({"terminated": {"exitCode": 137, "signal": 0}});
    assert_eq!(cells_of(&p)[2], "ExitCode:137");

    p["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    assert_eq!(cells_of(&p)[2], "Terminating");
}

#[test]
fn table_init_container_progress() {
    let mut p = defaulted();
    p["spec"]["initContainers"] =
        json!([{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}]);
    p["status"] = json!({"phase": "Pending", "initContainerStatuses": [
        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
        {"name": "i2", "state": {"running": {}}}
    ]});
    assert_eq!(cells_of(&p)[2], "Init:1/2");
    p["status"]["initContainerStatuses"][1]["state"] =
        json!({"waiting": {"reason": "ImagePullBackOff"}});
    assert_eq!(cells_of(&p)[2], "Init:ImagePullBackOff");
    p["status"]["initContainerStatuses"][1]["state"] =
        json!({"terminated": {"exitCode": 1, "reason": "Error"}});
    assert_eq!(cells_of(&p)[2], "Init:Error");
}

#[test]
fn table_restarts_show_time_of_last_restart() {
    let mut p = defaulted();
    p["status"] = json!({"phase": "Running", "containerStatuses": [
        {"name": "c", "ready": true, "restartCount": 2, "state": {"running": {}},
         "lastState": {"terminated": {"finishedAt": "2000-01-01T00:00:00Z"}}}
    ]});
    let restarts = cells_of(&p)[3].as_str().unwrap().to_string();
    assert!(
        restarts.starts_with("2 (") && restarts.ends_with(" ago)"),
        "{restarts}"
    );
}
