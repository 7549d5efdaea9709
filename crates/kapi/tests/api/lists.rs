//! LIST: label and field selectors, paging with `limit`/`continue`, and reads
//! at an exact past resourceVersion.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{ListParams, PostParams, VersionMatch};
use kube::Api;
use serde_json::{json, Value};

use crate::defaults::pod;
use crate::harness::{self, api_error, configmap, TestServer};

async fn names<K>(api: &Api<K>, lp: &ListParams) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out: Vec<String> = api
        .list(lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    out.sort();
    out
}

async fn labelled(s: &TestServer) -> Api<ConfigMap> {
    let api: Api<ConfigMap> = s.api("default");
    let objs = [
        ("a", vec![("tier", "web"), ("env", "prod")]),
        ("b", vec![("tier", "db"), ("env", "prod")]),
        ("c", vec![("tier", "cache")]),
        ("d", vec![]),
    ];
    for (name, labels) in objs {
        api.create(&PostParams::default(), &configmap(name, &labels))
            .await
            .unwrap();
    }
    api
}

#[tokio::test]
async fn label_selectors() {
    let s = harness::start().await;
    let api = labelled(&s).await;
    let cases: &[(&str, &[&str])] = &[
        ("tier=web", &["a"]),
        ("tier==db", &["b"]),
        ("tier!=web", &["b", "c", "d"]),
        ("tier in (web,db)", &["a", "b"]),
        ("tier notin (web,db)", &["c", "d"]),
        ("env", &["a", "b"]),
        ("!env", &["c", "d"]),
        ("env=prod,tier!=db", &["a"]),
    ];
    for (sel, want) in cases {
        let got = names(&api, &ListParams::default().labels(sel)).await;
        assert_eq!(&got, want, "selector {sel}");
    }
    let err = api_error(api.list(&ListParams::default().labels("tier in (")).await);
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn field_selectors() {
    let s = harness::start().await;
    let api = labelled(&s).await;
    assert_eq!(
        names(&api, &ListParams::default().fields("metadata.name=b")).await,
        vec!["b"]
    );
    assert_eq!(
        names(&api, &ListParams::default().fields("metadata.name!=b")).await,
        vec!["a", "c", "d"]
    );
    assert_eq!(
        names(
            &api,
            &ListParams::default().fields("metadata.namespace=default,metadata.name=c")
        )
        .await,
        vec!["c"]
    );
    let err = api_error(api.list(&ListParams::default().fields("data.k=v")).await);
    assert_eq!(err.code, 400);
    assert_eq!(err.reason, "BadRequest");
    assert!(err.message.contains("data.k"), "{}", err.message);
}

#[tokio::test]
async fn pod_and_secret_field_selectors() {
    let s = harness::start().await;
    let pods: Api<Pod> = s.api("default");
    let mut bound = pod("bound", &["nginx"]);
    bound.spec.as_mut().unwrap().node_name = Some("node-1".into());
    pods.create(&PostParams::default(), &bound).await.unwrap();
    pods.create(&PostParams::default(), &pod("free", &["nginx"]))
        .await
        .unwrap();
    let on_node = ListParams::default().fields("spec.nodeName=node-1");
    assert_eq!(names(&pods, &on_node).await, vec!["bound"]);
    let unscheduled = ListParams::default().fields("spec.nodeName=");
    assert_eq!(names(&pods, &unscheduled).await, vec!["free"]);
    // The node index answers across namespaces and with the other terms applied.
    let all: Api<Pod> = Api::all(s.client.clone());
    assert_eq!(names(&all, &on_node).await, vec!["bound"]);
    let both = ListParams::default().fields("spec.nodeName=node-1,metadata.name!=bound");
    assert!(names(&all, &both).await.is_empty());
    let by_name = ListParams::default().fields("metadata.name=free");
    assert_eq!(names(&pods, &by_name).await, vec!["free"]);
    let pending = ListParams::default().fields("status.phase=Pending");
    assert_eq!(names(&pods, &pending).await, vec!["bound", "free"]);
    let running = ListParams::default().fields("status.phase=Running");
    assert!(names(&pods, &running).await.is_empty());

    let secrets: Api<Secret> = s.api("default");
    for (name, ty) in [("opaque", "Opaque"), ("tls", "kubernetes.io/tls")] {
        let mut secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": ty
        }))
        .unwrap();
        if ty == "kubernetes.io/tls" {
            secret.string_data = Some(
                [("tls.crt", "c"), ("tls.key", "k")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let tls = ListParams::default().fields("type=kubernetes.io/tls");
    assert_eq!(names(&secrets, &tls).await, vec!["tls"]);
}

#[tokio::test]
async fn paging_with_limit_and_continue() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    for i in 0..25 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("cm-{i:02}"), &[]),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut remaining = Vec::new();
    loop {
        let mut lp = ListParams::default().limit(10);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 10);
        seen.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        remaining.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(seen, want);
    assert_eq!(remaining, vec![Some(15), Some(5), None]);
}

/// With a label selector a page still holds at most `limit` objects, the next
/// page resuming right after the last one returned (upstream stops reading at
/// the limit-th match).
#[tokio::test]
async fn paging_with_selector_never_exceeds_limit() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    for i in 0..9 {
        let labels: &[(&str, &str)] = if i % 3 == 0 {
            &[]
        } else {
            &[("group", "paging")]
        };
        api.create(
            &PostParams::default(),
            &configmap(&format!("cm-{i}"), labels),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().labels("group=paging").limit(2);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 2, "{} items", page.items.len());
        assert_eq!(page.metadata.remaining_item_count, None);
        seen.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        token = page.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
    }
    let want: Vec<String> = [1, 2, 4, 5, 7, 8]
        .iter()
        .map(|i| format!("cm-{i}"))
        .collect();
    assert_eq!(seen, want);
}

#[tokio::test]
async fn list_at_exact_old_resource_version() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    api.create(&PostParams::default(), &configmap("first", &[]))
        .await
        .unwrap();
    let then = api.list(&ListParams::default()).await.unwrap();
    let then_rv = then.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &configmap("second", &[]))
        .await
        .unwrap();
    api.patch(
        "first",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();

    let lp = ListParams::default()
        .at(&then_rv)
        .matching(VersionMatch::Exact);
    let old = api.list(&lp).await.unwrap();
    assert_eq!(
        old.metadata.resource_version.as_deref(),
        Some(then_rv.as_str())
    );
    let items: Vec<_> = old
        .items
        .iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap(),
                c.data.as_ref().unwrap()["k"].clone(),
            )
        })
        .collect();
    assert_eq!(items, vec![("first".to_string(), "v".to_string())]);

    let now = names(&api, &ListParams::default()).await;
    assert_eq!(now, vec!["first", "second"]);
}

/// The items' `kind` and `apiVersion` of `path`'s list as JSON (with `accept`).
async fn item_types(s: &TestServer, path: &str, accept: &str) -> Vec<(Value, Value)> {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())
        .unwrap();
    let (code, list) = s.raw(req).await;
    assert_eq!(code, 200, "{path}: {list}");
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {list}"))
        .iter()
        .map(|i| (i["kind"].clone(), i["apiVersion"].clone()))
        .collect()
}

/// As upstream: a built-in kind's list is typed, and its items carry no
/// `kind` or `apiVersion` of their own (from the watch cache or storage, as
/// JSON or YAML, in a delete-collection's answer); a custom resource's list
/// is unstructured and every item has both; a GET, a watch event and a
/// Table's object keep them.
#[tokio::test]
async fn typed_list_items_carry_no_kind_of_their_own() {
    let s = harness::start().await;
    labelled(&s).await;
    let none = (Value::Null, Value::Null);
    let path = "/api/v1/namespaces/default/configmaps";
    for query in ["", "?resourceVersion=0", "?limit=2", "?labelSelector=env"] {
        let types = item_types(&s, &format!("{path}{query}"), "application/json").await;
        assert!(
            !types.is_empty() && types.iter().all(|t| *t == none),
            "{query}: {types:?}"
        );
    }
    let req = http::Request::get(path)
        .header("accept", "application/yaml")
        .body(Vec::new())
        .unwrap();
    let (_, yaml) = s.raw_text(req).await;
    assert!(yaml.contains("\nitems:\n- data:"), "{yaml}");
    assert_eq!(yaml.matches("kind:").count(), 1, "{yaml}");
    // The objects themselves are whole.
    let (_, one) = s.get_json(&format!("{path}/a")).await;
    assert_eq!(
        (one["kind"].as_str(), one["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    let req = http::Request::get(format!("{path}?includeObject=Object"))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let (_, table) = s.raw(req).await;
    assert_eq!(table["rows"][0]["object"]["kind"], "ConfigMap", "{table}");
    // A delete-collection answers the deleted items as a typed list.
    let (code, deleted) = s
        .raw(
            http::Request::delete(format!("{path}?labelSelector=env"))
                .body(Vec::new())
                .unwrap(),
        )
        .await;
    assert_eq!(code, 200, "{deleted}");
    assert_eq!(deleted["kind"], "ConfigMapList");
    let items = deleted["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{deleted}");
    assert!(items
        .iter()
        .all(|i| i.get("kind").is_none() && i.get("apiVersion").is_none()));
    // Custom resources: unstructured lists, every item typed.
    crate::crd::establish(&s, crate::crd::crontab_crd()).await;
    crate::crd::crontabs(&s, "default")
        .create(
            &PostParams::default(),
            &crate::crd::crontab("c1", json!({"cronSpec": "* * * * */5"})),
        )
        .await
        .unwrap();
    let crs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    for query in ["", "?resourceVersion=0"] {
        let types = item_types(&s, &format!("{crs}{query}"), "application/json").await;
        assert_eq!(
            types,
            [(json!("CronTab"), json!("stable.example.com/v1"))],
            "{query}"
        );
    }
    // Their definitions are built in: typed.
    let types = item_types(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
    )
    .await;
    assert_eq!(types, [none]);
}
