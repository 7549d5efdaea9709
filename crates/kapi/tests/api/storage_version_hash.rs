//! `storageVersionHash` in the group-version resource lists: upstream's hash
//! of the version objects are stored at (values read from kube-apiserver
//! 1.28.4), on every resource with storage of its own, never on virtual ones
//! or subresources.

use serde_json::Value;

use crate::harness;

const PINNED: &[(&str, &str, &str)] = &[
    ("/api/v1", "configmaps", "qFsyl6wFWjQ="),
    ("/api/v1", "pods", "xPOwRZ+Yhw8="),
    ("/api/v1", "services", "0/CO1lhkEBI="),
    ("/api/v1", "events", "r2yiGXH7wu8="),
    ("/apis/apps/v1", "deployments", "8aSe+NMegvE="),
    ("/apis/events.k8s.io/v1", "events", "r2yiGXH7wu8="),
    (
        "/apis/autoscaling/v1",
        "horizontalpodautoscalers",
        "qwQve8ut294=",
    ),
    (
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
        "qwQve8ut294=",
    ),
    (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "jfWCUB31mvA=",
    ),
    (
        "/apis/discovery.k8s.io/v1",
        "endpointslices",
        "Nx3SIv6I0mE=",
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1",
        "clusterroles",
        "bYE5ZWDrJ44=",
    ),
];

const VIRTUAL: &[(&str, &str)] = &[
    ("/api/v1", "bindings"),
    ("/api/v1", "componentstatuses"),
    ("/apis/authentication.k8s.io/v1", "tokenreviews"),
    ("/apis/authorization.k8s.io/v1", "selfsubjectaccessreviews"),
];

fn find<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

#[tokio::test]
async fn resources_carry_upstreams_storage_version_hash() {
    let s = harness::start().await;
    for (gv, name, hash) in PINNED {
        let (_, list) = s.get_json(gv).await;
        assert_eq!(
            find(&list, name)["storageVersionHash"],
            *hash,
            "{gv} {name}"
        );
    }
    for (gv, name) in VIRTUAL {
        let (_, list) = s.get_json(gv).await;
        assert!(
            find(&list, name).get("storageVersionHash").is_none(),
            "{gv} {name}"
        );
    }
    let (_, list) = s.get_json("/api/v1").await;
    for r in list["resources"].as_array().unwrap() {
        let name = r["name"].as_str().unwrap();
        let subresource = name.contains('/');
        let has = r.get("storageVersionHash").is_some();
        let storage = !subresource && !VIRTUAL.iter().any(|(_, v)| *v == name);
        assert_eq!(has, storage, "{name}");
    }
}
