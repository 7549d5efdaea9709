use super::*;

fn msgs(errs: ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn pv() -> Value {
    let mut pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}});
    PersistentVolumeStrategy.prepare_for_create(&mut pv);
    PersistentVolumeStrategy.default(&mut pv);
    pv
}

fn pvc() -> Value {
    let mut pvc = json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}});
    PersistentVolumeClaimStrategy.default(&mut pvc);
    pvc
}

#[test]
fn pv_defaults_validation_cells() {
    let p = pv();
    assert_eq!(p["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(p["spec"]["volumeMode"], "Filesystem");
    assert_eq!(p["status"]["phase"], "Pending");
    assert!(p["status"]["lastPhaseTransitionTime"].is_string());
    assert!(PersistentVolumeStrategy.validate(&p).is_empty());
    let cells = PersistentVolumeStrategy.cells(&p);
    assert_eq!(
        cells[1..5],
        [
            json!("1Gi"),
            json!("RWO"),
            json!("Retain"),
            json!("Pending")
        ]
    );
    let bad = json!({"spec": {"capacity": {"storage": "1Gi"}}});
    assert_eq!(
        msgs(PersistentVolumeStrategy.validate(&bad)),
        vec![
            "spec.accessModes: Required value",
            "spec: Required value: must specify a volume type",
        ]
    );
    let mut moved = p.clone();
    moved["spec"]["hostPath"]["path"] = json!("/other");
    assert_eq!(msgs(PersistentVolumeStrategy.validate_update(&moved, &p)), vec![
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
    ]);
}

#[test]
fn pvc_rules() {
    let c = pvc();
    assert_eq!(c["status"]["phase"], "Pending");
    assert!(PersistentVolumeClaimStrategy.validate(&c).is_empty());
    let bad = json!({"spec": {"resources": {}}});
    assert_eq!(
        msgs(PersistentVolumeClaimStrategy.validate(&bad)),
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
        ]
    );
    // Binding (volumeName) is allowed once; growing needs a bound claim.
    let mut bind = c.clone();
    bind["spec"]["volumeName"] = json!("pv1");
    assert!(PersistentVolumeClaimStrategy
        .validate_update(&bind, &c)
        .is_empty());
    let mut grow = c.clone();
    grow["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert_eq!(
        PersistentVolumeClaimStrategy
            .validate_update(&grow, &c)
            .len(),
        1
    );
    grow["status"]["phase"] = json!("Bound");
    assert!(PersistentVolumeClaimStrategy
        .validate_update(&grow, &c)
        .is_empty());
    let mut shrink = c.clone();
    shrink["status"]["phase"] = json!("Bound");
    shrink["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    assert_eq!(
        msgs(PersistentVolumeClaimStrategy.validate_update(&shrink, &c)),
        vec![
            "spec.resources.requests.storage: Forbidden: field can not be less than previous value",
        ]
    );
}
