//! The storage protection finalizers end to end: StorageObjectInUseProtection
//! (an admission plugin on by default) puts them on claims and volumes, the
//! in-process protection controllers take them off once nothing uses them.

use std::time::Duration;

use serde_json::json;

use crate::controllers::{create, delete, get, gone};
use crate::harness;

/// StorageObjectInUseProtection puts the protection finalizers on claims and
/// volumes; the protection controllers take them off once nothing uses them:
/// a claim while a scheduled pod names it stays (Terminating), and goes with
/// the pod; a volume that is not bound goes at once.
#[tokio::test]
async fn claims_and_volumes_in_use_are_kept_until_released() {
    let s = harness::start().await;
    let claims = "/api/v1/namespaces/default/persistentvolumeclaims";
    let claim = create(
        &s,
        claims,
        json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let pod = |name: &str, node: &str| {
        json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}})
    };
    create(&s, "/api/v1/namespaces/default/pods", pod("user", "n1")).await;
    // An unscheduled pod does not hold the claim.
    create(&s, "/api/v1/namespaces/default/pods", pod("pending", "")).await;
    let (code, out) = delete(&s, &format!("{claims}/data"), "Background").await;
    assert_eq!(code, 200, "{out}");
    // Still there while the scheduled pod uses it, marked for deletion.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = get(&s, &format!("{claims}/data"))
        .await
        .expect("kept while used");
    assert!(kept["metadata"]["deletionTimestamp"].is_string(), "{kept}");
    assert_eq!(
        kept["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0});
    let (code, out) = s
        .send_json(
            "DELETE",
            "/api/v1/namespaces/default/pods/user",
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(code, 200, "{out}");
    gone(&s, &format!("{claims}/data")).await;

    let volumes = "/api/v1/persistentvolumes";
    let pv = create(
        &s,
        volumes,
        json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp"}}}),
    )
    .await;
    assert_eq!(
        pv["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    let (code, out) = delete(&s, &format!("{volumes}/pv1"), "Background").await;
    assert_eq!(code, 200, "{out}");
    gone(&s, &format!("{volumes}/pv1")).await;
}
