//! scheduling.k8s.io, node.k8s.io and storage.k8s.io through typed
//! `kube::Api`s: the built-in priority classes and their protection, CRUD with
//! upstream defaults, 422 causes, immutable fields, tables, watch.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error};

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn system_priority_classes_exist_and_cannot_be_deleted() {
    let s = harness::start().await;
    let api: Api<PriorityClass> = s.cluster();
    let node = api.get("system-node-critical").await.unwrap();
    assert_eq!(node.value, 2_000_001_000);
    assert_eq!(
        node.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    assert_eq!(
        api.get("system-cluster-critical").await.unwrap().value,
        2_000_000_000
    );
    let err = api_error(
        api.delete("system-node-critical", &DeleteParams::default())
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
    );
    api.get("system-node-critical").await.unwrap();
}

#[tokio::test]
async fn priority_class_crud_rules() {
    let s = harness::start().await;
    let api: Api<PriorityClass> = s.cluster();
    let pc: PriorityClass = from(json!({"metadata": {"name": "high"}, "value": 1000}));
    api.create(&PostParams::default(), &pc).await.unwrap();
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );
    let patch = json!({"description": "important"});
    let patched = api
        .patch("high", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.description.as_deref(), Some("important"));
    let err = api_error(
        api.patch(
            "high",
            &PatchParams::default(),
            &Patch::Merge(&json!({"value": 5})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.details.unwrap().causes[0].message,
        "Forbidden: may not be changed in an update."
    );
    let reserved: PriorityClass = from(json!({"metadata": {"name": "system-mine"}, "value": 1}));
    let err = api_error(api.create(&PostParams::default(), &reserved).await);
    assert_eq!(err.details.unwrap().causes[0].field, "metadata.name");
    api.delete("high", &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn storage_class_defaults_table_and_immutability() {
    let s = harness::start().await;
    let api: Api<StorageClass> = s.cluster();
    let sc: StorageClass = from(json!({
        "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/fast",
    }));
    let created = api.create(&PostParams::default(), &sc).await.unwrap();
    assert_eq!(created.reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(created.volume_binding_mode.as_deref(), Some("Immediate"));

    let mut changed = created.clone();
    changed.provisioner = "example.com/slow".into();
    let err = api_error(api.replace("fast", &PostParams::default(), &changed).await);
    assert_eq!(err.details.unwrap().causes[0].field, "provisioner");

    let req = http::Request::get("/apis/storage.k8s.io/v1/storageclasses")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200);
    assert_eq!(table["rows"][0]["cells"][0], "fast (default)");
    assert_eq!(table["columnDefinitions"][1]["name"], "Provisioner");
}

#[tokio::test]
async fn csi_driver_and_capacity_and_attachment() {
    let s = harness::start().await;
    let drivers: Api<CSIDriver> = s.cluster();
    let d: CSIDriver = from(json!({"metadata": {"name": "csi.example.com"}, "spec": {}}));
    let created = drivers.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(created.spec.attach_required, Some(true));
    assert_eq!(
        created.spec.volume_lifecycle_modes,
        Some(vec!["Persistent".to_string()])
    );
    let err = api_error(
        drivers
            .patch(
                "csi.example.com",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"attachRequired": false}})),
            )
            .await,
    );
    assert_eq!(
        err.details.unwrap().causes[0].field,
        "spec.attachedRequired"
    );

    let caps: Api<CSIStorageCapacity> = s.api("default");
    let c: CSIStorageCapacity =
        from(json!({"metadata": {"name": "cap"}, "storageClassName": "fast", "capacity": "10Gi"}));
    caps.create(&PostParams::default(), &c).await.unwrap();
    let bad: CSIStorageCapacity =
        from(json!({"metadata": {"name": "bad"}, "storageClassName": ""}));
    let err = api_error(caps.create(&PostParams::default(), &bad).await);
    assert_eq!(err.details.unwrap().causes[0].field, "storageClassName");

    let vas: Api<VolumeAttachment> = s.cluster();
    let va: VolumeAttachment = from(json!({"metadata": {"name": "va"},
        "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}}));
    vas.create(&PostParams::default(), &va).await.unwrap();
    let status = json!({"status": {"attached": true}});
    let patched = vas
        .patch_status("va", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert!(patched.status.unwrap().attached);
    let err = api_error(
        vas.patch(
            "va",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"nodeName": "n2"}})),
        )
        .await,
    );
    assert_eq!(err.details.unwrap().causes[0].field, "spec");
}

#[tokio::test]
async fn runtime_class_handler_rules_and_watch() {
    let s = harness::start().await;
    let api: Api<RuntimeClass> = s.cluster();
    let wp = WatchParams::default().timeout(30).disable_bookmarks();
    let mut events = api.watch(&wp, "0").await.unwrap().boxed();
    let rc: RuntimeClass = from(json!({"metadata": {"name": "gvisor"}, "handler": "runsc"}));
    api.create(&PostParams::default(), &rc).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("event in time")
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Added(r) if r.handler == "runsc"));
    let bad: RuntimeClass = from(json!({"metadata": {"name": "bad"}, "handler": "Not_A_Label"}));
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(err.details.unwrap().causes[0].field, "handler");
    let err = api_error(
        api.patch(
            "gvisor",
            &PatchParams::default(),
            &Patch::Merge(&json!({"handler": "runc"})),
        )
        .await,
    );
    assert_eq!(
        err.details.unwrap().causes[0].message,
        "Invalid value: \"runc\": field is immutable"
    );
}
