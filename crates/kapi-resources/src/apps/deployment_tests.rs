//! Tests of the deployment strategy: defaults, validation, immutability, table cells.

use super::*;

fn deploy() -> Value {
    json!({
        "metadata": {"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}
        }
    })
}

fn defaulted() -> Value {
    let mut d = deploy();
    DeploymentStrategy.default(&mut d);
    d
}

fn msgs(errs: ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn defaults() {
    let d = defaulted();
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert!(spec["template"]["spec"].get("enableServiceLinks").is_none());
    assert!(
        DeploymentStrategy.validate(&d).is_empty(),
        "{:?}",
        DeploymentStrategy.validate(&d)
    );
}

#[test]
fn recreate_gets_no_rolling_update() {
    let mut d = deploy();
    d["spec"]["strategy"] = json!({"type": "Recreate"});
    DeploymentStrategy.default(&mut d);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    d["spec"]["strategy"]["rollingUpdate"] = json!({"maxSurge": 1});
    assert_eq!(msgs(DeploymentStrategy.validate(&d)), vec!["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]);
}

#[test]
fn selector_must_match_template() {
    let mut d = defaulted();
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    assert_eq!(msgs(DeploymentStrategy.validate(&d)), vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"]);
}

#[test]
fn missing_selector_and_negative_replicas() {
    let mut d = defaulted();
    d["spec"].as_object_mut().unwrap().remove("selector");
    d["spec"]["replicas"] = json!(-1);
    let errs = msgs(DeploymentStrategy.validate(&d));
    assert!(
        errs.contains(
            &"spec.replicas: Invalid value: -1: must be greater than or equal to 0".to_string()
        ),
        "{errs:?}"
    );
    assert!(errs.contains(&"spec.selector: Required value".to_string()));
}

#[test]
fn template_is_validated_as_pod_spec() {
    let mut d = defaulted();
    d["spec"]["template"]["spec"]["containers"] = json!([]);
    d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let errs = msgs(DeploymentStrategy.validate(&d));
    assert!(
        errs.contains(&"spec.template.spec.containers: Required value".to_string()),
        "{errs:?}"
    );
    assert!(errs.contains(&"spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".to_string()));
}

#[test]
fn zero_surge_and_unavailable() {
    let mut d = defaulted();
    d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
    assert_eq!(msgs(DeploymentStrategy.validate(&d)), vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]);
}

#[test]
fn selector_is_immutable() {
    let old = defaulted();
    let mut new = old.clone();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "v": "2"}});
    new["spec"]["template"]["metadata"]["labels"]["v"] = json!("2");
    assert_eq!(msgs(DeploymentStrategy.validate_update(&new, &old)), vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable"]);
    assert!(DeploymentStrategy.tracks_generation());
}

#[test]
fn table_cells() {
    let mut d = defaulted();
    d["spec"]["replicas"] = json!(3);
    d["status"] = json!({"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1});
    let cells = DeploymentStrategy.cells(&d);
    assert_eq!(cells.len(), DeploymentStrategy.columns().len());
    assert_eq!(cells[1], "1/3");
    assert_eq!(cells[2], 2);
    assert_eq!(cells[3], 1);
    assert_eq!(cells[5], "nginx");
    assert_eq!(cells[6], "nginx:1.25");
    assert_eq!(cells[7], "app=web");
    let mut fresh = defaulted();
    fresh.as_object_mut().unwrap().remove("status");
    assert_eq!(DeploymentStrategy.cells(&fresh)[1], "0/1");
}
