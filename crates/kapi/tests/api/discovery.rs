//! Discovery and routes agree: every declared verb is served, every other verb
//! answers 405; aggregated discovery lists the same resources; Table output;
//! health and version endpoints.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::api::PostParams;
use kube::Api;
use serde_json::Value;

use crate::defaults::pod;
use crate::harness::{self, TestServer};

/// `(group/version prefix, resource)` for every top-level resource discovery lists.
async fn discovered(s: &TestServer) -> Vec<(String, APIResource)> {
    let mut out = Vec::new();
    let core = s.client.list_core_api_versions().await.unwrap();
    assert_eq!(core.versions, vec!["v1".to_string()]);
    for r in s
        .client
        .list_core_api_resources("v1")
        .await
        .unwrap()
        .resources
    {
        out.push(("/api/v1".to_string(), r));
    }
    for group in s.client.list_api_groups().await.unwrap().groups {
        for v in &group.versions {
            let list = s
                .client
                .list_api_group_resources(&v.group_version)
                .await
                .unwrap();
            assert_eq!(list.group_version, v.group_version);
            for r in list.resources {
                out.push((format!("/apis/{}", v.group_version), r));
            }
        }
    }
    out
}

fn collection(prefix: &str, r: &APIResource) -> String {
    if r.namespaced {
        format!("{prefix}/namespaces/default/{}", r.name)
    } else {
        format!("{prefix}/{}", r.name)
    }
}

async fn code(s: &TestServer, method: &str, path: &str) -> u16 {
    s.send_json(method, path, b"{}".to_vec()).await.0
}

#[tokio::test]
async fn declared_verbs_are_served_and_others_are_405() {
    let s = harness::start().await;
    let resources = discovered(&s).await;
    assert!(resources.len() > 20, "{}", resources.len());
    let mut failures = Vec::new();
    let mut checked = BTreeSet::new();
    for (prefix, r) in resources.iter().filter(|(_, r)| !r.name.contains('/')) {
        let has = |v: &str| r.verbs.iter().any(|x| x == v);
        let coll = collection(prefix, r);
        let item = format!("{coll}/no-such-object");
        let mut checks = vec![];
        checks.push(("GET", coll.clone(), has("list"), "list"));
        checks.push(("GET", format!("{coll}?watch=true"), has("watch"), "watch"));
        checks.push(("POST", coll.clone(), has("create"), "create"));
        checks.push((
            "DELETE",
            coll.clone(),
            has("deletecollection"),
            "deletecollection",
        ));
        checks.push(("GET", item.clone(), has("get"), "get"));
        checks.push(("PUT", item.clone(), has("update"), "update"));
        checks.push(("PATCH", item.clone(), has("patch"), "patch"));
        checks.push(("DELETE", item.clone(), has("delete"), "delete"));
        // As upstream's router: a path with some route answers another
        // method 405; a path with none (the object path of a create-only
        // resource) is 404.
        let item_routes = ["get", "update", "patch", "delete"].iter().any(|v| has(v));
        for (method, path, declared, verb) in checks {
            if declared && verb != "list" {
                continue; // served: its outcome depends on the body and object
            }
            checked.insert(verb);
            let got = code(&s, method, &path).await;
            let on_item = path.ends_with("/no-such-object");
            let want = match (declared, on_item && !item_routes) {
                (true, _) => 200,
                (false, true) => 404,
                (false, false) => 405,
            };
            if got != want {
                failures.push(format!("{method} {path} ({verb}): {got}, want {want}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Namespaces have no deletecollection: at least one 405 was checked.
    assert!(checked.contains("deletecollection"), "{checked:?}");
    assert!(checked.contains("list"), "{checked:?}");
}

#[tokio::test]
async fn aggregated_discovery_lists_the_same_resources() {
    let s = harness::start().await;
    let want: BTreeMap<String, Vec<String>> = discovered(&s)
        .await
        .into_iter()
        .map(|(prefix, r)| (format!("{prefix}/{}", r.name), sorted(r.verbs)))
        .collect();
    let mut got = BTreeMap::new();
    for (root, prefix) in [("/api", "/api"), ("/apis", "/apis")] {
        let req = http::Request::get(root)
            .header(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )
            .body(Vec::new())
            .unwrap();
        let (code, doc) = s.raw(req).await;
        assert_eq!(code, 200);
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        for group in doc["items"].as_array().unwrap() {
            let gname = group["metadata"]["name"].as_str().unwrap_or("");
            for v in group["versions"].as_array().unwrap() {
                let version = v["version"].as_str().unwrap();
                let gv = if gname.is_empty() {
                    format!("{prefix}/{version}")
                } else {
                    format!("{prefix}/{gname}/{version}")
                };
                for r in v["resources"].as_array().unwrap() {
                    let name = r["resource"].as_str().unwrap();
                    got.insert(format!("{gv}/{name}"), verbs(&r["verbs"]));
                    for sub in r["subresources"].as_array().into_iter().flatten() {
                        let path = format!("{gv}/{name}/{}", sub["subresource"].as_str().unwrap());
                        got.insert(path, verbs(&sub["verbs"]));
                    }
                }
            }
        }
    }
    assert_eq!(got, want);
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn verbs(v: &Value) -> Vec<String> {
    let list = v.as_array().into_iter().flatten();
    sorted(list.map(|x| x.as_str().unwrap().to_owned()).collect())
}

#[tokio::test]
async fn pod_list_as_table_has_upstream_columns() {
    let s = harness::start().await;
    let api: Api<Pod> = s.api("default");
    api.create(&PostParams::default(), &pod("t", &["nginx"]))
        .await
        .unwrap();
    let req = http::Request::get("/api/v1/namespaces/default/pods")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let text = s.client.request_text(req).await.unwrap();
    let table: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["cells"][0], "t");
    assert_eq!(rows[0]["cells"][1], "0/1");
    assert_eq!(rows[0]["cells"][2], "Pending");
}

#[tokio::test]
async fn health_and_version() {
    let s = harness::start().await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        let (code, body) = s.raw_text(req).await;
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    let req = http::Request::get("/readyz?verbose")
        .body(Vec::new())
        .unwrap();
    let (code, body) = s.raw_text(req).await;
    assert_eq!(code, 200);
    assert!(body.contains("[+]etcd ok"), "{body}");
    assert!(body.ends_with("readyz check passed\n"), "{body}");

    let version = s.client.apiserver_version().await.unwrap();
    assert!(
        version.git_version.starts_with("v1.33."),
        "{}",
        version.git_version
    );
    assert_eq!(version.major, "1");
    assert_eq!(version.minor, "33");
}
