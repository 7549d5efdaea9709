//! Custom objects against their definition's schema: validation with
//! upstream's messages, pruning of unknown fields (and the warnings and
//! strict errors of `fieldValidation`), defaulting, CEL rules including
//! transition rules, and server-side apply merging a list-map by its keys.

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use crate::crd::{crontab, crontab_crd, crontabs, establish};
use crate::harness::{self, api_error};

/// The CronTab definition with value validations, defaults and CEL rules.
fn strict_crd() -> Value {
    let mut crd = crontab_crd();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["replicas"] =
        json!({"type": "integer", "minimum": 0, "maximum": 10, "default": 1});
    spec["properties"]["image"] = json!({"type": "string", "default": "busybox"});
    spec["properties"]["cronSpec"] =
        json!({"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"});
    spec["x-kubernetes-validations"] = json!([
        {"rule": "self.replicas <= 5 || self.image != 'busybox'", "message": "busybox may not run more than 5 replicas"},
        {"rule": "!has(oldSelf.color) || self.color == oldSelf.color", "message": "color is immutable"}
    ]);
    spec["properties"]["color"] = json!({"type": "string", "enum": ["red", "blue"]});
    crd
}

#[tokio::test]
async fn schema_validation_rejects_with_upstream_messages() {
    let s = harness::start().await;
    establish(&s, strict_crd()).await;
    let api = crontabs(&s, "default");
    let bad = crontab(
        "a",
        json!({"cronSpec": "not a cron", "replicas": 20, "color": "green"}),
    );
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    for part in [
        "CronTab.stable.example.com \"a\" is invalid: [",
        "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10",
        "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"",
        "spec.cronSpec: Invalid value: \"not a cron\": spec.cronSpec in body should match",
    ] {
        assert!(err.message.contains(part), "{part:?} not in {}", err.message);
    }
    let wrong_type = crontab("b", json!({"replicas": "three"}));
    let err = api_error(api.create(&PostParams::default(), &wrong_type).await);
    assert!(
        err.message.contains("spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn unknown_fields_are_pruned_and_defaults_filled() {
    let s = harness::start().await;
    establish(&s, strict_crd()).await;
    let api = crontabs(&s, "default");
    let obj = crontab("a", json!({"cronSpec": "* * * * *", "extra": {"x": 1}}));
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(
        created.data["spec"].get("extra").is_none(),
        "{:#}",
        created.data
    );
    assert_eq!(created.data["spec"]["replicas"], 1);
    assert_eq!(created.data["spec"]["image"], "busybox");

    let path = "/apis/stable.example.com/v1/namespaces/default/crontabs?fieldValidation=Strict";
    let body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                      "metadata": {"name": "b"}, "spec": {"cronSpec": "* * * * *", "extra": 1}});
    let (code, status) = s
        .send_json("POST", path, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(code, 400, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("unknown field \"spec.extra\""),
        "{status}"
    );
}

#[tokio::test]
async fn cel_rules_reject_with_their_message() {
    let s = harness::start().await;
    establish(&s, strict_crd()).await;
    let api = crontabs(&s, "default");
    let err = api_error(
        api.create(
            &PostParams::default(),
            &crontab("a", json!({"replicas": 8})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("spec: Invalid value: \"object\": busybox may not run more than 5 replicas"),
        "{}",
        err.message
    );
    api.create(
        &PostParams::default(),
        &crontab("b", json!({"color": "red"})),
    )
    .await
    .unwrap();
    let err = api_error(
        api.patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        )
        .await,
    );
    assert!(
        err.message.contains("color is immutable"),
        "{}",
        err.message
    );
    let same = api
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(same.data["spec"]["replicas"], 2);
}

#[tokio::test]
async fn server_side_apply_merges_a_list_map_and_reports_conflicts() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let api = crontabs(&s, "default");
    let a = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
                   "spec": {"cronSpec": "1", "ports": [{"name": "http", "port": 80}]}});
    api.patch("x", &PatchParams::apply("alice"), &Patch::Apply(a))
        .await
        .unwrap();
    let b = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
                   "spec": {"ports": [{"name": "metrics", "port": 9090}]}});
    let merged = api
        .patch("x", &PatchParams::apply("bob"), &Patch::Apply(b))
        .await
        .unwrap();
    let ports: Vec<&str> = merged.data["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(ports, vec!["http", "metrics"], "a list-map merges by key");
    let mf = merged.metadata.managed_fields.clone().unwrap();
    let bob = mf
        .iter()
        .find(|e| e.manager.as_deref() == Some("bob"))
        .unwrap();
    let fields = serde_json::to_value(&bob.fields_v1).unwrap();
    assert!(
        fields["f:spec"]["f:ports"]
            .get("k:{\"name\":\"metrics\"}")
            .is_some(),
        "{fields:#}"
    );

    let clash = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
                       "spec": {"ports": [{"name": "http", "port": 8080}]}});
    let err = api_error(
        api.patch(
            "x",
            &PatchParams::apply("bob"),
            &Patch::Apply(clash.clone()),
        )
        .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert!(
        err.message.contains("conflict with \"alice\"")
            && err.message.contains(".spec.ports[name=\"http\"].port"),
        "{}",
        err.message
    );
    let forced = api
        .patch(
            "x",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(clash),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["ports"][0]["port"], 8080);
}
