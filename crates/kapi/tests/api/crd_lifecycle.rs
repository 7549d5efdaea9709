//! The life of a definition: conflicting names are not accepted, updates
//! change the served versions, definitions present at start are served when
//! the server starts, and deleting a definition refuses creates, deletes the
//! objects (waiting for their finalizers), then the definition and its resource.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use crate::crd::{condition, crd_api, crontab, crontab_crd, crontabs, establish};
use crate::harness;

#[tokio::test]
async fn deleting_the_definition_deletes_objects_then_the_resource() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let api = crontabs(&s, "default");
    for name in ["a", "b"] {
        api.create(
            &PostParams::default(),
            &crontab(name, json!({"cronSpec": "x"})),
        )
        .await
        .unwrap();
    }
    let mut held = crontab("held", json!({"cronSpec": "x"}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    crd_api(&s)
        .delete("crontabs.stable.example.com", &DeleteParams::default())
        .await
        .unwrap();
    // While an object holds the definition, creates are refused as upstream.
    let mut refused = None;
    for _ in 0..500 {
        match api
            .create(&PostParams::default(), &crontab("late", json!({})))
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 405 => {
                refused = Some(e);
                break;
            }
            Ok(_) => {
                let _ = api.delete("late", &DeleteParams::default()).await;
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = refused.expect("creates are refused while terminating");
    assert_eq!(refused.reason, "MethodNotAllowed");
    assert_eq!(
        refused.message,
        "create not allowed while custom resource definition is terminating"
    );
    let crd = serde_json::to_value(
        crd_api(&s)
            .get("crontabs.stable.example.com")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        crd["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(condition(&crd, "Terminating")["status"], "True");
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let mut gone = false;
    for _ in 0..200 {
        if matches!(crd_api(&s).get("crontabs.stable.example.com").await, Err(kube::Error::Api(e)) if e.code == 404)
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the definition is removed once its objects are gone");
    let left = s
        .backend
        .list("/stable.example.com/crontabs/", Default::default())
        .await
        .unwrap();
    assert!(left.kvs.is_empty(), "objects are deleted first");
    let mut undiscovered = false;
    for _ in 0..100 {
        let (code, _) = s.get_json("/apis/stable.example.com/v1").await;
        if code == 404 {
            undiscovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(undiscovered);
    let (code, _) = s
        .get_json("/apis/stable.example.com/v1/namespaces/default/crontabs")
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn conflicting_names_are_not_accepted() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let mut other = crontab_crd();
    other["metadata"]["name"] = json!("crontabz.stable.example.com");
    other["spec"]["names"] = json!({"plural": "crontabz", "singular": "crontabz", "kind": "CronTab", "listKind": "CronTabzList"});
    let obj: CustomResourceDefinition = serde_json::from_value(other).unwrap();
    crd_api(&s)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap();
    let mut cond = Value::Null;
    for _ in 0..500 {
        let got = serde_json::to_value(
            crd_api(&s)
                .get("crontabz.stable.example.com")
                .await
                .unwrap(),
        )
        .unwrap();
        if let Some(c) = got["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "NamesAccepted"))
        {
            cond = c.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "KindConflict");
    assert_eq!(cond["message"], "\"CronTab\" is already in use");
    let (code, _) = s.get_json("/apis/stable.example.com/v1/crontabz").await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn definitions_present_at_start_are_served_when_start_returns() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    crontabs(&s, "default")
        .create(
            &PostParams::default(),
            &crontab("kept", json!({"cronSpec": "x"})),
        )
        .await
        .unwrap();
    // A second server over the same storage, as after a restart.
    let slot = kapi_storage::slot::BackendSlot::ready("shared".into(), s.backend.clone());
    let config = kapi_server::ServerConfig::new(
        "127.0.0.1:1".into(),
        1,
        kapi_server::Cidr::parse("10.0.0.0/24").unwrap(),
    );
    let built = kapi::build(kapi::Options::new(config), slot);
    let second = built.server.clone();
    let none = kapi_controllers::Selection::parse(&[]).unwrap();
    let opts = kapi_controllers::Options {
        controllers: none,
        ..Default::default()
    };
    built.start(&opts).await.unwrap();
    let entry = second
        .apis
        .lookup("stable.example.com", "v1", "crontabs")
        .expect("installed at start");
    let obj = entry
        .store
        .get(Some("default"), "kept", None)
        .await
        .unwrap();
    assert_eq!(obj["spec"]["cronSpec"], "x");
    assert!(second
        .openapi()
        .v3_keys()
        .any(|k| k == "apis/stable.example.com/v1"));
}

#[tokio::test]
async fn updating_a_definition_changes_what_is_served() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let mut v2 = crontab_crd()["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    let patch = json!({"spec": {"versions": [
        {"name": "v1", "served": false, "storage": true,
         "schema": crontab_crd()["spec"]["versions"][0]["schema"].clone()},
        v2
    ]}});
    let updated = crd_api(&s)
        .patch(
            "crontabs.stable.example.com",
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    let mut switched = false;
    for _ in 0..500 {
        let (v1, _) = s.get_json("/apis/stable.example.com/v1").await;
        let (v2, _) = s.get_json("/apis/stable.example.com/v2").await;
        if (v1, v2) == (404, 200) {
            switched = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(switched, "v2 served, v1 no longer served");
    let (_, group) = s.get_json("/apis/stable.example.com").await;
    assert_eq!(group["preferredVersion"]["version"], "v2");
}
