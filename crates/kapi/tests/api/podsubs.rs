//! The pod subresources a scheduler and `kubectl debug` use: `pods/binding` (and
//! the older `bindings` resource) assigning a pod to a node, and
//! `pods/ephemeralcontainers` adding debug containers, with upstream's answers
//! when that is not allowed.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

fn pod(name: &str, extra: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

async fn bind(s: &TestServer, path: &str, body: Value) -> (u16, Value) {
    s.send_json("POST", path, serde_json::to_vec(&body).unwrap())
        .await
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding",
           "metadata": {"name": name, "annotations": {"scheduled-by": "test"}},
           "target": {"kind": "Node", "name": node}})
}

#[tokio::test]
async fn binding_assigns_an_unassigned_pod_once() {
    let s = harness::start().await;
    let pods: Api<Pod> = s.api("default");
    pods.create(&PostParams::default(), &pod("web", json!({})))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/pods/web/binding";

    let (code, bad) = bind(&s, path, binding("other", "n1")).await;
    assert_eq!((code, bad["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        bad["message"],
        "name in URL does not match name in Binding object"
    );
    let (code, bad) = bind(&s, path, json!({"metadata": {"name": "web"}, "target": {}})).await;
    assert_eq!((code, bad["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        bad["message"],
        "Binding \"web\" is invalid: target.name: Required value"
    );
    assert!(pods
        .get("web")
        .await
        .unwrap()
        .spec
        .unwrap()
        .node_name
        .is_none());

    let (code, ok) = bind(&s, path, binding("web", "n1")).await;
    assert_eq!((code, ok["status"].as_str()), (201, Some("Success")));
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("n1"));
    assert_eq!(bound.metadata.annotations.unwrap()["scheduled-by"], "test");
    let conditions = bound.status.unwrap().conditions.unwrap();
    let scheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled.status, "True");

    let (code, again) = bind(&s, path, binding("web", "n2")).await;
    assert_eq!((code, again["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(
        again["message"],
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\""
    );
    let node = pods.get("web").await.unwrap().spec.unwrap().node_name;
    assert_eq!(node.as_deref(), Some("n1"));
}

#[tokio::test]
async fn legacy_bindings_and_gated_pods() {
    let s = harness::start().await;
    let pods: Api<Pod> = s.api("default");
    pods.create(&PostParams::default(), &pod("a", json!({})))
        .await
        .unwrap();
    let gates = json!({"schedulingGates": [{"name": "wait"}]});
    pods.create(&PostParams::default(), &pod("gated", gates))
        .await
        .unwrap();

    let legacy = "/api/v1/namespaces/default/bindings";
    let (code, _) = bind(&s, legacy, binding("a", "n1")).await;
    assert_eq!(code, 201);
    let node = pods.get("a").await.unwrap().spec.unwrap().node_name;
    assert_eq!(node.as_deref(), Some("n1"));

    let (code, gated) = bind(&s, legacy, binding("gated", "n1")).await;
    assert_eq!(code, 409, "{gated}");
    assert_eq!(
        gated["message"],
        "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
    );
    let (code, missing) = bind(&s, legacy, binding("nope", "n1")).await;
    assert_eq!((code, missing["reason"].as_str()), (404, Some("NotFound")));

    let (_, disc) = s.get_json("/api/v1").await;
    let find = |name: &str| {
        disc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in discovery"))
    };
    for name in ["bindings", "pods/binding"] {
        let r = find(name);
        assert_eq!(
            (r["kind"].as_str(), r["verbs"].clone()),
            (Some("Binding"), json!(["create"]))
        );
    }
    let r = find("pods/ephemeralcontainers");
    assert_eq!(r["kind"], "Pod");
    assert_eq!(r["verbs"], json!(["get", "patch", "update"]));
}

#[tokio::test]
async fn ephemeral_containers_are_added_through_their_subresource_only() {
    let s = harness::start().await;
    let pods: Api<Pod> = s.api("default");
    let with = json!({"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]});
    let err = harness::api_error(pods.create(&PostParams::default(), &pod("p", with)).await);
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("spec.ephemeralContainers: Forbidden: cannot be set on create"),
        "{}",
        err.message
    );
    pods.create(&PostParams::default(), &pod("p", json!({})))
        .await
        .unwrap();

    // Not through a plain pod update.
    let add = json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox",
        "targetContainerName": "app", "stdin": true, "tty": true}]}});
    let err = harness::api_error(
        pods.patch("p", &PatchParams::default(), &Patch::Strategic(add.clone()))
            .await,
    );
    assert_eq!(err.code, 422);

    // Through the subresource, as kubectl debug does.
    let out = pods
        .patch_subresource(
            "ephemeralcontainers",
            "p",
            &PatchParams::default(),
            &Patch::Strategic(add),
        )
        .await
        .unwrap();
    let ecs = out.spec.unwrap().ephemeral_containers.unwrap();
    assert_eq!(ecs.len(), 1);
    assert_eq!(
        ecs[0].termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    let got: Pod = pods
        .get_subresource("ephemeralcontainers", "p")
        .await
        .unwrap();
    assert_eq!(got.spec.unwrap().ephemeral_containers.unwrap().len(), 1);

    // Changed, removed or with a port: refused, and nothing changes.
    let changed = json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "alpine"}]}});
    let err = harness::api_error(
        pods.patch_subresource(
            "ephemeralcontainers",
            "p",
            &PatchParams::default(),
            &Patch::Merge(changed),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("existing ephemeral containers \"dbg\" may not be"),
        "{}",
        err.message
    );
    // Without `$setElementOrder` a strategic merge puts new items first, as upstream.
    let ported = json!({"spec": {"ephemeralContainers": [{"name": "two", "image": "busybox",
        "ports": [{"containerPort": 80}]}]}});
    let err = harness::api_error(
        pods.patch_subresource(
            "ephemeralcontainers",
            "p",
            &PatchParams::default(),
            &Patch::Strategic(ported),
        )
        .await,
    );
    assert!(
        err.message.contains(
            "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"
        ),
        "{}",
        err.message
    );
    let now = pods.get("p").await.unwrap().spec.unwrap();
    assert_eq!(
        now.ephemeral_containers.unwrap()[0].image.as_deref(),
        Some("busybox")
    );
}
