//! The admission chain and its built-in plugins (other than ResourceQuota and
//! PodSecurity, in `admission_quota.rs` / `admission_pss.rs`): the
//! `--enable-admission-plugins` / `--disable-admission-plugins` selection,
//! the chain on creates, patches and deletes, NamespaceLifecycle, Priority,
//! DefaultTolerationSeconds, DefaultStorageClass, LimitRanger and
//! ServiceAccount, with upstream's answers.

use std::time::Duration;

use kapi_admission_plugins::Selection;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

pub async fn post(srv: &TestServer, path: &str, body: Value) -> (u16, Value) {
    srv.send_json("POST", path, serde_json::to_vec(&body).unwrap())
        .await
}

pub fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

pub fn flags(enable: &[&str], disable: &[&str]) -> Selection {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Selection::from_flags(&s(enable), &s(disable)).expect("valid flags")
}

/// Wait until `check` gives `Some` (a hang fails after a minute).
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn flags_select_the_plugins_that_run() {
    let srv = harness::start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    // The default chain has NamespaceLifecycle: a missing namespace is 404.
    let (code, body) = post(&srv, "/api/v1/namespaces/nowhere/configmaps", cm.clone()).await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "namespaces \"nowhere\" not found");
    // Disabled, the create goes through, as upstream without the plugin.
    let srv = srv
        .another(|o| o.admission = flags(&[], &["NamespaceLifecycle"]))
        .await;
    let (code, body) = post(&srv, "/api/v1/namespaces/nowhere/configmaps", cm.clone()).await;
    assert_eq!(code, 201, "{body}");

    // AlwaysDeny refuses creates, patches and deletes alike.
    let srv = srv
        .another(|o| o.admission = flags(&["AlwaysDeny"], &["NamespaceLifecycle"]))
        .await;
    let deny = "admission control is denying all modifications";
    let cm_b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
    let (code, body) = post(&srv, "/api/v1/namespaces/default/configmaps", cm_b).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (403, Some("Forbidden")),
        "{body}"
    );
    assert_eq!(
        body["message"],
        format!("configmaps \"b\" is forbidden: {deny}")
    );
    let patch = http::Request::patch("/api/v1/namespaces/nowhere/configmaps/a")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"data":{"k":"v"}}"#.to_vec())
        .unwrap();
    let (code, body) = srv.raw(patch).await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = srv
        .send_json(
            "DELETE",
            "/api/v1/namespaces/nowhere/configmaps/a",
            Vec::new(),
        )
        .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        format!("configmaps \"a\" is forbidden: {deny}")
    );
    let (code, _) = srv
        .get_json("/api/v1/namespaces/nowhere/configmaps/a")
        .await;
    assert_eq!(code, 200, "the refused delete left the object");
}

#[tokio::test]
async fn immortal_namespaces_may_not_be_deleted() {
    let srv = harness::start().await;
    for ns in ["default", "kube-system", "kube-public"] {
        let (code, body) = srv
            .send_json("DELETE", &format!("/api/v1/namespaces/{ns}"), Vec::new())
            .await;
        assert_eq!(code, 403, "{body}");
        assert_eq!(
            body["message"],
            format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted")
        );
    }
}

/// `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds` set the seconds given.
#[tokio::test]
async fn default_toleration_seconds_follow_the_flags() {
    let srv = harness::start_configured(|o| {
        o.admission = o.admission.clone().with_toleration_seconds(30, 45);
    })
    .await;
    let (code, p) = post(&srv, "/api/v1/namespaces/default/pods", pod("quick")).await;
    assert_eq!(code, 201, "{p}");
    let tolerations = p["spec"]["tolerations"].as_array().expect("tolerations");
    let seconds = |key: &str| {
        tolerations.iter().find(|t| t["key"] == key).expect(key)["tolerationSeconds"].clone()
    };
    assert_eq!(seconds("node.kubernetes.io/not-ready"), 30);
    assert_eq!(seconds("node.kubernetes.io/unreachable"), 45);
}

#[tokio::test]
async fn priority_and_default_tolerations_are_set_on_pods() {
    let srv = harness::start().await;
    let (code, p) = post(&srv, "/api/v1/namespaces/default/pods", pod("plain")).await;
    assert_eq!(code, 201, "{p}");
    assert_eq!(p["spec"]["priority"], 0);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    let tolerations = p["spec"]["tolerations"].as_array().expect("tolerations");
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let t = tolerations.iter().find(|t| t["key"] == key).expect(key);
        assert_eq!(t["tolerationSeconds"], 300);
        assert_eq!(
            (t["operator"].as_str(), t["effect"].as_str()),
            (Some("Exists"), Some("NoExecute"))
        );
    }
    // A pod tolerating everything gets nothing more.
    let mut tolerant = pod("tolerant");
    tolerant["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    let (_, p) = post(&srv, "/api/v1/namespaces/default/pods", tolerant).await;
    assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 1);

    let class = |name: &str, value: i64, default: bool| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name}, "value": value, "globalDefault": default,
               "preemptionPolicy": "Never"})
    };
    let pcs = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let (code, body) = post(&srv, pcs, class("high", 1000, false)).await;
    assert_eq!(code, 201, "{body}");
    let mut high = pod("high");
    high["spec"]["priorityClassName"] = json!("high");
    let (code, p) = post(&srv, "/api/v1/namespaces/default/pods", high).await;
    assert_eq!(code, 201, "{p}");
    assert_eq!(
        (
            p["spec"]["priority"].as_i64(),
            p["spec"]["preemptionPolicy"].as_str()
        ),
        (Some(1000), Some("Never"))
    );

    let mut unknown = pod("unknown");
    unknown["spec"]["priorityClassName"] = json!("nope");
    let (code, body) = post(&srv, "/api/v1/namespaces/default/pods", unknown).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"unknown\" is forbidden: no PriorityClass with name nope was found"
    );
    let mut stated = pod("stated");
    stated["spec"]["priority"] = json!(7);
    let (code, body) = post(&srv, "/api/v1/namespaces/default/pods", stated).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("the integer value of priority (7) must not be provided in pod spec"),
        "{body}"
    );

    // One global default; new pods get it.
    let (code, body) = post(&srv, pcs, class("base", 10, true)).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = post(&srv, pcs, class("other", 20, true)).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with(
            "PriorityClass base is already marked as default. Only one default can exist"
        ),
        "{body}"
    );
    let (_, p) = post(&srv, "/api/v1/namespaces/default/pods", pod("defaulted")).await;
    assert_eq!(
        (
            p["spec"]["priorityClassName"].as_str(),
            p["spec"]["priority"].as_i64()
        ),
        (Some("base"), Some(10))
    );
}

#[tokio::test]
async fn default_storage_class_fills_claims_without_a_class() {
    let srv = harness::start().await;
    let sc = |name: &str, default: bool| {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "x",
               "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": default.to_string()}}})
    };
    let claim = |name: &str, class: Option<&str>| {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        if let Some(class) = class {
            c["spec"]["storageClassName"] = json!(class);
        }
        c
    };
    let pvcs = "/api/v1/namespaces/default/persistentvolumeclaims";
    let (_, c) = post(&srv, pvcs, claim("before", None)).await;
    assert!(
        c["spec"].get("storageClassName").is_none(),
        "no default class yet: {c}"
    );
    for (name, default) in [("slow", false), ("fast", true)] {
        let (code, body) = post(
            &srv,
            "/apis/storage.k8s.io/v1/storageclasses",
            sc(name, default),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    let (_, c) = post(&srv, pvcs, claim("after", None)).await;
    assert_eq!(c["spec"]["storageClassName"], "fast");
    let (_, c) = post(&srv, pvcs, claim("explicit", Some("slow"))).await;
    assert_eq!(c["spec"]["storageClassName"], "slow");
    let (_, c) = post(&srv, pvcs, claim("none", Some(""))).await;
    assert_eq!(
        c["spec"]["storageClassName"], "",
        "an empty class means none"
    );
}

#[tokio::test]
async fn limit_ranges_default_and_bound_pods_and_claims() {
    let srv = harness::start().await;
    let ns = srv.namespace("limits").await;
    let lr = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
    "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}, "max": {"cpu": "1"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
    ]}});
    let (code, body) = post(&srv, &format!("/api/v1/namespaces/{ns}/limitranges"), lr).await;
    assert_eq!(code, 201, "{body}");
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let (code, p) = post(&srv, &pods, pod("defaulted")).await;
    assert_eq!(code, 201, "{p}");
    let res = &p["spec"]["containers"][0]["resources"];
    assert_eq!(
        (
            res["requests"]["cpu"].as_str(),
            res["limits"]["cpu"].as_str()
        ),
        (Some("100m"), Some("500m"))
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu limit for container c; cpu request for container c"
    );
    let mut big = pod("big");
    big["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "2"}});
    let (code, body) = post(&srv, &pods, big).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    let (code, _) = srv.get_json(&format!("{pods}/big")).await;
    assert_eq!(code, 404);

    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "huge"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}});
    let (code, body) = post(
        &srv,
        &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
        claim,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"
    );
}

#[tokio::test]
async fn service_account_plugin_mounts_the_token_and_refuses_missing_accounts() {
    let srv = harness::start_with_all_controllers().await;
    let ns = srv.namespace("sa").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    // The controller creates `default` with the namespace (admission waits a
    // little for it too; the test does not rely on that).
    let sa = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    eventually("the default service account", || async {
        (srv.get_json(&sa).await.0 == 200).then_some(())
    })
    .await;
    let (code, p) = post(&srv, &pods, pod("p")).await;
    assert_eq!(code, 201, "{p}");
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let vol = &p["spec"]["volumes"][0];
    let name = vol["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{vol}"
    );
    let sources = vol["projected"]["sources"].as_array().unwrap();
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    let mount = &p["spec"]["containers"][0]["volumeMounts"][0];
    assert_eq!(
        mount["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert_eq!(
        (mount["name"].as_str(), mount["readOnly"].as_bool()),
        (Some(name), Some(true))
    );

    let mut no_token = pod("no-token");
    no_token["spec"]["automountServiceAccountToken"] = json!(false);
    let (code, p) = post(&srv, &pods, no_token).await;
    assert_eq!(code, 201, "{p}");
    assert!(p["spec"].get("volumes").is_none(), "{p}");

    let mut missing = pod("missing");
    missing["spec"]["serviceAccountName"] = json!("ghost");
    let (code, body) = post(&srv, &pods, missing).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        format!("pods \"missing\" is forbidden: error looking up service account {ns}/ghost: serviceaccount \"ghost\" not found")
    );
}
