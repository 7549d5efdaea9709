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

/// The manager's fields are recorded from the decoded object: a Service's IP
/// families, which the service registry fills in after admission, are no
/// manager's; a DaemonSet's template-generation annotation, which apps/v1
/// shows of every decoded DaemonSet, is the creating manager's.
#[tokio::test]
async fn the_creating_manager_owns_what_the_decoded_object_held() {
    let s = harness::start().await;
    let fields = |obj: &Value| obj["metadata"]["managedFields"][0]["fieldsV1"].clone();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}});
    let (code, svc) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/services",
            serde_json::to_vec(&svc).unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{svc}");
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    let spec = &fields(&svc)["f:spec"];
    assert!(
        spec.get("f:ipFamilies").is_none() && spec.get("f:ipFamilyPolicy").is_none(),
        "{spec}"
    );
    assert!(spec.get("f:internalTrafficPolicy").is_some(), "{spec}");
    // A replace that leaves them out keeps the stored ones.
    let mut again = svc.clone();
    let spec = again["spec"].as_object_mut().unwrap();
    spec.remove("ipFamilies");
    spec.remove("ipFamilyPolicy");
    let (code, replaced) = s
        .send_json(
            "PUT",
            "/api/v1/namespaces/default/services/s",
            serde_json::to_vec(&again).unwrap(),
        )
        .await;
    assert_eq!(code, 200, "{replaced}");
    assert_eq!(replaced["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(replaced["spec"]["ipFamilyPolicy"], "SingleStack");

    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, ds) = s
        .send_json(
            "POST",
            "/apis/apps/v1/namespaces/default/daemonsets",
            serde_json::to_vec(&ds).unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{ds}");
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
    assert_eq!(
        fields(&ds)["f:metadata"],
        json!({"f:annotations": {".": {}, "f:deprecated.daemonset.template.generation": {}}}),
    );
}
