//! CustomResourceDefinitions end to end: a definition becomes a served
//! resource (conditions, discovery, OpenAPI) while the server runs, its
//! objects go through the generic store (CRUD, watch, patches, status and
//! scale, tables, field selectors, several versions), and deleting the
//! definition deletes its objects first. Schema behaviour (validation,
//! pruning, defaulting, CEL) is in `crd_schema.rs`, the definition's life
//! (names, updates, start-up, deletion) in `crd_lifecycle.rs`.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error, TestServer};

/// The `crontabs.stable.example.com` definition of upstream's walkthrough,
/// with status and scale subresources, printer columns and a selectable field.
pub fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "shortNames": ["ct"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"},
                            "image": {"type": "string"},
                            "color": {"type": "string"},
                            "replicas": {"type": "integer"},
                            "ports": {"type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {
                                    "name": {"type": "string"}, "port": {"type": "integer"}}}}
                        }},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "selector": {"type": "string"},
                            "phase": {"type": "string"}
                        }}
                    }
                }},
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas",
                              "statusReplicasPath": ".status.replicas",
                              "labelSelectorPath": ".status.selector"}
                },
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    {"name": "Image", "type": "string", "priority": 1, "jsonPath": ".spec.image"}
                ],
                "selectableFields": [{"jsonPath": ".spec.color"}]
            }]
        }
    })
}

pub fn crd_api(s: &TestServer) -> Api<CustomResourceDefinition> {
    s.cluster()
}

pub fn crontabs(s: &TestServer, ns: &str) -> Api<DynamicObject> {
    harness::dynamic(
        &s.client,
        "stable.example.com",
        "v1",
        "CronTab",
        "crontabs",
        Some(ns),
    )
}

/// Create `crd` and wait until it is Established.
pub async fn establish(s: &TestServer, crd: Value) -> CustomResourceDefinition {
    let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
    let obj: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crd_api(s)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap();
    for _ in 0..500 {
        let got = crd_api(s).get(&name).await.unwrap();
        let established = got
            .status
            .as_ref()
            .and_then(|st| st.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = crd_api(s).get(&name).await.unwrap();
    panic!(
        "{name} never became Established: {:#}",
        serde_json::to_value(got).unwrap()
    );
}

pub fn crontab(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

pub fn condition<'a>(crd: &'a Value, ty: &str) -> &'a Value {
    crd["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == ty))
        .unwrap_or_else(|| panic!("no {ty} condition in {crd:#}"))
}

#[tokio::test]
async fn a_definition_is_established_and_discovered() {
    let s = harness::start().await;
    let crd = establish(&s, crontab_crd()).await;
    let v = serde_json::to_value(&crd).unwrap();
    assert_eq!(condition(&v, "NamesAccepted")["reason"], "NoConflicts");
    assert_eq!(
        condition(&v, "Established")["reason"],
        "InitialNamesAccepted"
    );
    assert_eq!(v["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(v["status"]["acceptedNames"]["shortNames"], json!(["ct"]));
    assert_eq!(v["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(v["spec"]["names"]["listKind"], "CronTabList");
    assert_eq!(v["spec"]["conversion"]["strategy"], "None");
    assert_eq!(v["metadata"]["generation"], 1);

    let (code, list) = s.get_json("/apis/stable.example.com/v1").await;
    assert_eq!(code, 200, "{list}");
    let crontabs = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "crontabs")
        .expect("crontabs in discovery")
        .clone();
    assert_eq!(crontabs["kind"], "CronTab");
    assert_eq!(crontabs["shortNames"], json!(["ct"]));
    assert_eq!(crontabs["categories"], json!(["all"]));
    assert_eq!(crontabs["namespaced"], true);
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, vec!["crontabs", "crontabs/status", "crontabs/scale"]);
    let (_, groups) = s.get_json("/apis").await;
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "stable.example.com"));

    let req = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(Vec::new())
        .unwrap();
    let (_, agg) = s.raw(req).await;
    let group = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "stable.example.com")
        .expect("group in aggregated discovery");
    assert_eq!(group["versions"][0]["resources"][0]["resource"], "crontabs");

    // The documents are rebuilt after the condition is written.
    let mut doc = Value::Null;
    for _ in 0..500 {
        let (code, body) = s.get_json("/openapi/v3/apis/stable.example.com/v1").await;
        if code == 200 {
            doc = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["cronSpec"]["type"],
        "string"
    );
    let (_, v2) = s.get_json("/openapi/v2").await;
    assert!(v2["definitions"]["com.example.stable.v1.CronTab"].is_object());
}

#[tokio::test]
async fn invalid_definitions_are_rejected_with_upstream_messages() {
    let s = harness::start().await;
    let mut crd = crontab_crd();
    crd["metadata"]["name"] = json!("wrong.stable.example.com");
    crd["spec"]["group"] = json!("example");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["scope"] = json!("Galaxy");
    let obj: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let err = api_error(crd_api(&s).create(&PostParams::default(), &obj).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    for part in [
        "metadata.name: Invalid value: \"wrong.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
        "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
        "spec.scope: Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\"",
        "spec.versions: Invalid value:",
        "must have exactly one version marked as storage version",
    ] {
        assert!(err.message.contains(part), "{part:?} not in {}", err.message);
    }

    let mut crd = crontab_crd();
    crd["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("text");
    let obj: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let err = api_error(crd_api(&s).create(&PostParams::default(), &obj).await);
    assert!(
        err.message.contains(
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
        ),
        "{}",
        err.message
    );
    assert!(err.message.contains(
        "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string"
    ), "{}", err.message);
    let list = crd_api(&s).list(&ListParams::default()).await.unwrap();
    assert!(list.items.is_empty());
}

#[tokio::test]
async fn custom_objects_crud_watch_and_patches() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let api = crontabs(&s, "default");
    let mut watch = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = api
        .create(
            &PostParams::default(),
            &crontab(
                "a",
                json!({"cronSpec": "* * * * */5", "image": "img:1", "replicas": 1}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    match watch.try_next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("a")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data["spec"]["cronSpec"], "* * * * */5");
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    let mut changed = got.clone();
    changed.data["spec"]["image"] = json!("img:2");
    let updated = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));

    let merged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data["spec"]["replicas"], 3);
    let ops: kube_json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/spec/cronSpec", "value": "0 * * * *"}
    ]))
    .unwrap();
    let jp = api
        .patch("a", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert_eq!(jp.data["spec"]["cronSpec"], "0 * * * *");

    let smp = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"replicas": 4}})),
        )
        .await;
    let err = api_error(smp);
    assert_eq!(err.code, 415);
    assert_eq!(
        err.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(api.get("a").await).code, 404);
    let mut saw_delete = false;
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(5), watch.try_next())
        .await
        .unwrap()
    {
        if matches!(ev, WatchEvent::Deleted(_)) {
            saw_delete = true;
            break;
        }
    }
    assert!(saw_delete);
}

#[tokio::test]
async fn protobuf_is_not_offered_for_custom_objects() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    crontabs(&s, "default")
        .create(
            &PostParams::default(),
            &crontab("a", json!({"cronSpec": "x"})),
        )
        .await
        .unwrap();
    let path = "/apis/stable.example.com/v1/namespaces/default/crontabs/a";
    let req = http::Request::get(path)
        .header("accept", "application/vnd.kubernetes.protobuf")
        .body(Vec::new())
        .unwrap();
    let (code, _) = s.raw_text(req).await;
    assert_eq!(code, 406);
    let req = http::Request::get(path)
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf, application/json",
        )
        .body(Vec::new())
        .unwrap();
    let (code, obj) = s.raw(req).await;
    assert_eq!(code, 200);
    assert_eq!(obj["kind"], "CronTab");
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let api = crontabs(&s, "default");
    let mut obj = crontab("a", json!({"cronSpec": "x", "replicas": 1}));
    obj.data["status"] = json!({"phase": "ignored"});
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );

    let st = api
        .patch_status("a", &PatchParams::default(), &Patch::Merge(json!({"status": {"replicas": 1, "selector": "app=cron", "phase": "Running"}, "spec": {"replicas": 9}})))
        .await
        .unwrap();
    assert_eq!(st.data["status"]["phase"], "Running");
    assert_eq!(st.data["spec"]["replicas"], 1, "spec is ignored on /status");
    assert_eq!(st.metadata.generation, Some(1));

    let main = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Lost"}, "spec": {"cronSpec": "y"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.data["status"]["phase"], "Running",
        "status is ignored on the main resource"
    );
    assert_eq!(main.metadata.generation, Some(2));

    let path = "/apis/stable.example.com/v1/namespaces/default/crontabs/a/scale";
    let (code, scale) = s.get_json(path).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"]["replicas"], 1);
    assert_eq!(scale["status"]["selector"], "app=cron");
    let req = http::Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&json!({"spec": {"replicas": 5}})).unwrap())
        .unwrap();
    let (code, scaled) = s.raw(req).await;
    assert_eq!(code, 200, "{scaled}");
    assert_eq!(scaled["spec"]["replicas"], 5);
    assert_eq!(api.get("a").await.unwrap().data["spec"]["replicas"], 5);
}

#[tokio::test]
async fn printer_columns_and_field_selectors() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let api = crontabs(&s, "default");
    for (name, color) in [("red-one", "red"), ("blue-one", "blue")] {
        api.create(
            &PostParams::default(),
            &crontab(
                name,
                json!({"cronSpec": "* * *", "image": "i", "replicas": 2, "color": color}),
            ),
        )
        .await
        .unwrap();
    }
    let req = http::Request::get("/apis/stable.example.com/v1/namespaces/default/crontabs")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(table["kind"], "Table");
    let cols: Vec<(&str, &str, i64)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cols,
        vec![
            ("Name", "string", 0),
            ("Spec", "string", 0),
            ("Replicas", "integer", 0),
            ("Age", "date", 0),
            ("Image", "string", 1)
        ]
    );
    let row = &table["rows"][0]["cells"];
    assert_eq!(row[0], "blue-one");
    assert_eq!(row[1], "* * *");
    assert_eq!(row[2], 2);
    assert!(row[3].as_str().unwrap().ends_with('s'), "{row}");
    assert_eq!(row[4], "i");

    let reds = api
        .list(&ListParams::default().fields("spec.color=red"))
        .await
        .unwrap();
    let names: Vec<_> = reds
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["red-one"]);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=blue-one"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let err = api_error(
        api.list(&ListParams::default().fields("spec.image=i"))
            .await,
    );
    assert_eq!(err.code, 400, "{}", err.message);
}

#[tokio::test]
async fn several_versions_with_conversion_none_and_deprecation() {
    let s = harness::start().await;
    let mut crd = crontab_crd();
    let mut v1beta1 = crd["spec"]["versions"][0].clone();
    v1beta1["name"] = json!("v1beta1");
    v1beta1["storage"] = json!(false);
    v1beta1["deprecated"] = json!(true);
    v1beta1["deprecationWarning"] = json!("stable.example.com/v1beta1 CronTab is old; use v1");
    crd["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .push(v1beta1);
    establish(&s, crd).await;
    let beta = harness::dynamic(
        &s.client,
        "stable.example.com",
        "v1beta1",
        "CronTab",
        "crontabs",
        Some("default"),
    );
    let mut obj = crontab("a", json!({"cronSpec": "x"}));
    obj.types.as_mut().unwrap().api_version = "stable.example.com/v1beta1".into();
    let created = beta.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(
        created.types.unwrap().api_version,
        "stable.example.com/v1beta1"
    );
    let as_v1 = crontabs(&s, "default").get("a").await.unwrap();
    assert_eq!(as_v1.types.unwrap().api_version, "stable.example.com/v1");
    let stored = s
        .backend
        .get("/stable.example.com/crontabs/default/a", None)
        .await
        .unwrap()
        .unwrap();
    let stored: Value = serde_json::from_slice(&stored.value).unwrap();
    assert_eq!(stored["apiVersion"], "stable.example.com/v1");

    let req = http::Request::get("/apis/stable.example.com/v1beta1/namespaces/default/crontabs/a")
        .body(Vec::new())
        .unwrap();
    let resp = s
        .client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let warning = resp.headers().get("warning").expect("a Warning header");
    assert_eq!(
        warning.to_str().unwrap(),
        "299 - \"stable.example.com/v1beta1 CronTab is old; use v1\""
    );
    let (_, group) = s.get_json("/apis/stable.example.com").await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
}
