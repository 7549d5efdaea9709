//! The order of a write's steps, as upstream's handlers take them: decode and
//! default, record the manager's fields, mutating admission (NamespaceLifecycle
//! first), the strategy, validating admission. Each test pins an answer that
//! only this order gives (checked against kube-apiserver 1.28.4 by hand).

use serde_json::{json, Value};

use crate::harness::{self, TestServer};

/// A server with upstream's default admission plugins, ServiceAccount too.
async fn with_default_admission() -> TestServer {
    harness::start_configured(|o| o.admission = kapi_admission_plugins::Selection::default()).await
}

fn pod(name: &str, resources: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}
    }))
    .unwrap()
}

async fn default_account(s: &TestServer, ns: &str) {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts");
    let (code, out) = s
        .send_json("POST", &path, serde_json::to_vec(&sa).unwrap())
        .await;
    assert_eq!(code, 201, "{out}");
}

/// NamespaceLifecycle is a mutating plugin that runs first: a pod for a
/// namespace that does not exist is 404 for the namespace, not ServiceAccount's
/// 403 after it looked for the namespace's `default` account for a while.
#[tokio::test]
async fn a_create_in_a_missing_namespace_is_not_found_first() {
    let s = with_default_admission().await;
    let (code, out) = s
        .send_json("POST", "/api/v1/namespaces/nope/pods", pod("p", json!({})))
        .await;
    assert_eq!(code, 404, "{out}");
    assert_eq!(
        out,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "namespaces \"nope\" not found", "reason": "NotFound",
               "details": {"name": "nope", "kind": "namespaces"}, "code": 404})
    );
}

/// Defaulting (requests copied from limits) comes before LimitRanger, which
/// fills only what is still missing.
#[tokio::test]
async fn limit_ranger_fills_only_what_defaulting_left() {
    let s = harness::start().await;
    s.namespace("lr").await;
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                       "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}}]}});
    let (code, out) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/lr/limitranges",
            serde_json::to_vec(&range).unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let path = "/api/v1/namespaces/lr/pods";
    let (code, limited) = s
        .send_json(
            "POST",
            path,
            pod("limited", json!({"limits": {"cpu": "300m"}})),
        )
        .await;
    assert_eq!(code, 201, "{limited}");
    assert_eq!(
        limited["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "300m"}, "requests": {"cpu": "300m"}})
    );
    let (code, bare) = s.send_json("POST", path, pod("bare", json!({}))).await;
    assert_eq!(code, 201, "{bare}");
    assert_eq!(
        bare["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "100m"}})
    );
}

/// The fields of `manager`'s entry in `obj`'s managedFields.
fn fields_of(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry of {manager} in {obj:#}"))["fieldsV1"]
        .clone()
}

/// Managed fields are recorded before mutating admission: the creating
/// manager owns what it sent and the defaults, not the service account
/// volume, `serviceAccountName`, `priority` or the tolerations admission adds.
#[tokio::test]
async fn the_creating_manager_owns_no_field_admission_added() {
    let s = with_default_admission().await;
    s.namespace("own").await;
    default_account(&s, "own").await;
    let (code, out) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/own/pods?fieldManager=kubectl-client-side-apply",
            pod("p", json!({})),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    for added in ["serviceAccountName", "priority", "tolerations", "volumes"] {
        assert!(
            out["spec"].get(added).is_some(),
            "admission added {added}: {out:#}"
        );
    }
    let spec = &fields_of(&out, "kubectl-client-side-apply")["f:spec"];
    for f in [
        "f:dnsPolicy",
        "f:restartPolicy",
        "f:schedulerName",
        "f:enableServiceLinks",
    ] {
        assert!(spec.get(f).is_some(), "{f} (a default) is owned: {spec:#}");
    }
    for f in [
        "f:serviceAccountName",
        "f:serviceAccount",
        "f:priority",
        "f:preemptionPolicy",
        "f:tolerations",
        "f:volumes",
    ] {
        assert!(
            spec.get(f).is_none(),
            "{f} (admission's) is not owned: {spec:#}"
        );
    }
    let container = &spec["f:containers"]["k:{\"name\":\"c\"}"];
    assert!(container.get("f:volumeMounts").is_none(), "{container:#}");
}
