//! rbac.authorization.k8s.io/v1 through typed `kube::Api`s: CRUD of roles and
//! bindings, upstream defaulting, 422 causes, immutable `roleRef`, the
//! binding table, watch, and the clusterrole-aggregation controller.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error};

fn role(name: &str) -> Role {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}],
    }))
    .unwrap()
}

fn binding(name: &str, role: &str) -> RoleBinding {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
        ],
    }))
    .unwrap()
}

#[tokio::test]
async fn role_create_get_list_update_patch_delete() {
    let s = harness::start().await;
    let api: Api<Role> = s.api("default");
    let created = api
        .create(&PostParams::default(), &role("reader"))
        .await
        .unwrap();
    assert_eq!(
        created.rules.as_ref().unwrap()[0].verbs,
        vec!["get", "list"]
    );
    let got = api.get("reader").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    let mut changed = got.clone();
    changed.rules.as_mut().unwrap()[0]
        .verbs
        .push("watch".into());
    let replaced = api
        .replace("reader", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.rules.unwrap()[0].verbs.len(), 3);

    let patch = json!({"metadata": {"labels": {"team": "a"}}});
    let patched = api
        .patch("reader", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["team"], "a");

    api.delete("reader", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(api_error(api.get("reader").await).code, 404);
}

#[tokio::test]
async fn invalid_rules_are_unprocessable_and_not_stored() {
    let s = harness::start().await;
    let api: Api<Role> = s.api("default");
    let bad: Role = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
    }))
    .unwrap();
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, "rules[0].nonResourceURLs");
    assert_eq!(
        causes[0].message,
        "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs"
    );
    assert_eq!(api_error(api.get("bad").await).code, 404);

    // The same rule is fine on a ClusterRole; names are path segments.
    let cluster: Api<ClusterRole> = s.cluster();
    let ok: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "system:probe-reader"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
    }))
    .unwrap();
    cluster.create(&PostParams::default(), &ok).await.unwrap();
}

#[tokio::test]
async fn bindings_default_subjects_and_keep_role_ref() {
    let s = harness::start().await;
    let api: Api<RoleBinding> = s.api("default");
    let created = api
        .create(&PostParams::default(), &binding("b", "reader"))
        .await
        .unwrap();
    let subjects = created.subjects.clone().unwrap();
    assert_eq!(
        subjects[0].api_group.as_deref(),
        Some("rbac.authorization.k8s.io")
    );
    assert_eq!(subjects[1].api_group, None);

    let mut changed = created.clone();
    changed.role_ref.name = "writer".into();
    let err = api_error(api.replace("b", &PostParams::default(), &changed).await);
    assert_eq!(err.code, 422);
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, "roleRef");
    assert!(
        causes[0].message.ends_with("cannot change roleRef"),
        "{causes:?}"
    );
    assert_eq!(api.get("b").await.unwrap().role_ref.name, "reader");

    let crb: Api<ClusterRoleBinding> = s.cluster();
    let bad: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "c"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
    }))
    .unwrap();
    let err = api_error(crb.create(&PostParams::default(), &bad).await);
    let fields: Vec<String> = err
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(fields, vec!["roleRef.kind", "subjects[0].namespace"]);
}

#[tokio::test]
async fn binding_table_shows_role_and_wide_subjects() {
    let s = harness::start().await;
    let api: Api<RoleBinding> = s.api("default");
    api.create(&PostParams::default(), &binding("b", "reader"))
        .await
        .unwrap();
    let req =
        http::Request::get("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings")
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200, "{table}");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "Role/reader");
    assert_eq!(cells[3], "alice");
    assert_eq!(cells[5], "default/builder");
}

#[tokio::test]
async fn watch_sees_clusterrole_changes() {
    let s = harness::start().await;
    let api: Api<ClusterRole> = s.cluster();
    let wp = WatchParams::default().timeout(30).disable_bookmarks();
    // From now, and only `w`: the bootstrap policy's ClusterRoles (which the
    // aggregation controller may still be filling) are not part of this test.
    let rv = api
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = api.watch(&wp, &rv).await.unwrap().boxed();
    let cr: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "w"}})).unwrap();
    api.create(&PostParams::default(), &cr).await.unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(r) | WatchEvent::Modified(r) | WatchEvent::Deleted(r)
                if r.metadata.name.as_deref() != Some("w") => {}
            WatchEvent::Added(r) => seen.push(("ADDED", r.metadata.name.unwrap())),
            WatchEvent::Deleted(r) => seen.push(("DELETED", r.metadata.name.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seen,
        vec![("ADDED", "w".to_string()), ("DELETED", "w".to_string())]
    );
}

/// Poll until `check` holds for the ClusterRole (the controller runs in the
/// background; no timing is asserted, only the eventual state).
async fn eventually(api: &Api<ClusterRole>, name: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..100 {
        last = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        if check(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("condition never held: {last}");
}

#[tokio::test]
async fn aggregated_clusterrole_follows_its_selectors() {
    let s = harness::start().await;
    let api: Api<ClusterRole> = s.cluster();
    let mk = |v: Value| -> ClusterRole { serde_json::from_value(v).unwrap() };
    api.create(
        &PostParams::default(),
        &mk(json!({"metadata": {"name": "monitoring"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]}})),
    )
    .await
    .unwrap();
    let label = json!({"rbac.example.com/aggregate-to-monitoring": "true"});
    api.create(
        &PostParams::default(),
        &mk(json!({"metadata": {"name": "b-pods", "labels": label},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]})),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &mk(json!({"metadata": {"name": "a-nodes", "labels": label},
            "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]}]})),
    )
    .await
    .unwrap();
    let agg = eventually(&api, "monitoring", |r| {
        r["rules"].as_array().is_some_and(|a| a.len() == 2)
    })
    .await;
    // Sorted by the name of the contributing role.
    assert_eq!(agg["rules"][0]["resources"], json!(["nodes"]));
    assert_eq!(agg["rules"][1]["resources"], json!(["pods"]));

    // A contributor losing its label drops out of the union.
    let unlabel =
        json!({"metadata": {"labels": {"rbac.example.com/aggregate-to-monitoring": null}}});
    api.patch("a-nodes", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    let agg = eventually(&api, "monitoring", |r| {
        r["rules"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    assert_eq!(agg["rules"][0]["resources"], json!(["pods"]));
}

#[tokio::test]
async fn invalid_aggregation_rule_is_rejected() {
    let s = harness::start().await;
    let api: Api<ClusterRole> = s.cluster();
    let bad: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "x"},
        "aggregationRule": {"clusterRoleSelectors": []}}))
    .unwrap();
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(err.code, 422);
    assert_eq!(
        err.details.unwrap().causes[0].field,
        "aggregationRule.clusterRoleSelectors"
    );
}
