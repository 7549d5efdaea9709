//! The admission flags: `--admission-control-config-file` (PodSecurity's
//! defaults and exemptions, ResourceQuota's limited resources),
//! `--admission-control` (the deprecated list that replaces the default set)
//! and `--allow-privileged` (privileged containers refused without it).

use serde_json::{json, Value};

use crate::admission::{pod, post};
use crate::harness::{self, TestServer};
use kapi_admission_plugins::config::PluginConfigs;
use kapi_admission_plugins::Selection;

/// The default plugins configured by the AdmissionConfiguration `yaml`.
fn configured(yaml: &str) -> Selection {
    let configs = PluginConfigs::parse(yaml, std::path::Path::new(".")).expect("configuration");
    let off = ["ServiceAccount".to_string()];
    Selection::from_flags(&[], &off)
        .unwrap()
        .with_configs(&configs)
        .expect("valid plugin configuration")
}

const PSA: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
      warn: restricted
    exemptions:
      namespaces: [exempt]
      runtimeClasses: [trusted]
      usernames: [ci]
";

fn host_pod(name: &str) -> Value {
    let mut p = pod(name);
    p["spec"]["hostNetwork"] = json!(true);
    p
}

async fn ns(s: &TestServer, name: &str) {
    s.namespace(name).await;
}

#[tokio::test]
async fn admission_config_file_sets_pod_security_defaults_and_exemptions() {
    let s = harness::start_configured(|o| o.admission = configured(PSA)).await;
    ns(&s, "plain").await;
    ns(&s, "exempt").await;
    // Unlabelled namespaces enforce the configured default.
    let (code, out) = post(&s, "/api/v1/namespaces/plain/pods", host_pod("h")).await;
    assert_eq!(code, 403, "{out}");
    assert!(
        out["message"].as_str().unwrap().contains(
            "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"
        ),
        "{out}"
    );
    // Exempt namespace and runtime class.
    let (code, out) = post(&s, "/api/v1/namespaces/exempt/pods", host_pod("h")).await;
    assert_eq!(code, 201, "{out}");
    let mut trusted = host_pod("t");
    trusted["spec"]["runtimeClassName"] = json!("trusted");
    let (code, out) = post(&s, "/api/v1/namespaces/plain/pods", trusted).await;
    assert_eq!(code, 201, "{out}");
    // An exempt user (the admin acting as `ci`).
    let req = http::Request::post("/api/v1/namespaces/plain/pods")
        .header("content-type", "application/json")
        .header("impersonate-user", "ci")
        .header("impersonate-group", "system:masters")
        .body(host_pod("by-ci").to_string().into_bytes())
        .unwrap();
    let (code, out) = s.raw(req).await;
    assert_eq!(code, 201, "{out}");
    // A label still wins over the default.
    let labelled = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "open",
        "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}});
    assert_eq!(post(&s, "/api/v1/namespaces", labelled).await.0, 201);
    assert_eq!(
        post(&s, "/api/v1/namespaces/open/pods", host_pod("h"))
            .await
            .0,
        201
    );
    // Without the file, unlabelled namespaces are privileged.
    let plain = harness::start().await;
    ns(&plain, "plain").await;
    assert_eq!(
        post(&plain, "/api/v1/namespaces/plain/pods", host_pod("h"))
            .await
            .0,
        201
    );
}

const QUOTA: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchContains: [cpu]
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: [critical]
";

fn cpu_pod(name: &str) -> Value {
    let mut p = pod(name);
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    p
}

#[tokio::test]
async fn admission_config_file_limits_resources_to_covering_quotas() {
    let s = harness::start_configured(|o| o.admission = configured(QUOTA)).await;
    ns(&s, "q").await;
    let (code, out) = post(&s, "/api/v1/namespaces/q/pods", cpu_pod("a")).await;
    assert_eq!(code, 403, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .ends_with("insufficient quota to consume: cpu,requests.cpu"),
        "{out}"
    );
    // Pods that consume no CPU are not limited.
    assert_eq!(
        post(&s, "/api/v1/namespaces/q/pods", pod("free")).await.0,
        201
    );
    let pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "critical"}, "value": 1000});
    assert_eq!(
        post(&s, "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
            .await
            .0,
        201
    );
    let mut critical = pod("c");
    critical["spec"]["priorityClassName"] = json!("critical");
    // Upstream answers an uncovered scope with a plain error: 500, no reason.
    let (code, out) = post(&s, "/api/v1/namespaces/q/pods", critical.clone()).await;
    assert_eq!(code, 500, "{out}");
    assert_eq!(
        out["message"], "insufficient quota to match these scopes: [{PriorityClass In [critical]}]",
        "{out}"
    );
    // A covering quota lets both through.
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cover"},
        "spec": {"hard": {"cpu": "10", "requests.cpu": "10", "pods": "10"},
                 "scopeSelector": {"matchExpressions": [
                     {"scopeName": "PriorityClass", "operator": "In", "values": ["critical"]}]}}});
    let quota2 = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cpu"},
        "spec": {"hard": {"cpu": "10", "requests.cpu": "10"}}});
    assert_eq!(
        post(&s, "/api/v1/namespaces/q/resourcequotas", quota)
            .await
            .0,
        201
    );
    assert_eq!(
        post(&s, "/api/v1/namespaces/q/resourcequotas", quota2)
            .await
            .0,
        201
    );
    crate::admission::eventually("quota status", || async {
        let (code, _) = post(&s, "/api/v1/namespaces/q/pods", cpu_pod("a")).await;
        (code == 201).then_some(())
    })
    .await;
    // The covering quota limits CPU: the pod must say what it requests.
    critical["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "10m"}});
    let (code, out) = post(&s, "/api/v1/namespaces/q/pods", critical).await;
    assert_eq!(code, 201, "{out}");
}

#[tokio::test]
async fn admission_control_replaces_the_default_set() {
    let deny = Selection::from_admission_control(&["AlwaysDeny".to_string()]).unwrap();
    assert_eq!(deny.names(), ["AlwaysDeny"]);
    let s = harness::start_configured(move |o| o.admission = deny).await;
    let (code, out) = post(
        &s,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    )
    .await;
    assert_eq!(code, 403, "{out}");
    // NamespaceLifecycle is not among them: a pod in a missing namespace is
    // not refused by admission.
    let only = Selection::from_admission_control(&["LimitRanger".to_string()]).unwrap();
    assert_eq!(only.names(), ["LimitRanger"]);
}

fn privileged_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}}}})
}

#[tokio::test]
async fn allow_privileged_decides_privileged_containers() {
    let s = harness::start().await;
    let mut p = pod("p");
    p["spec"]["initContainers"] =
        json!([{"name": "i", "image": "busybox", "securityContext": {"privileged": true}}]);
    let (code, out) = post(&s, "/api/v1/namespaces/default/pods", p.clone()).await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(out["reason"], "Invalid");
    assert_eq!(
        out["details"]["causes"][0]["field"],
        "spec.initContainers[0].securityContext.privileged"
    );
    assert_eq!(
        out["details"]["causes"][0]["message"],
        "Forbidden: disallowed by cluster policy"
    );
    let (code, out) = post(
        &s,
        "/apis/apps/v1/namespaces/default/deployments",
        privileged_deployment(),
    )
    .await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        out["details"]["causes"][0]["field"],
        "spec.template.spec.containers[0].securityContext.privileged"
    );
    let allowed = harness::start_configured(|o| o.allow_privileged = true).await;
    assert_eq!(
        post(&allowed, "/api/v1/namespaces/default/pods", p).await.0,
        201
    );
    let (code, _) = post(
        &allowed,
        "/apis/apps/v1/namespaces/default/deployments",
        privileged_deployment(),
    )
    .await;
    assert_eq!(code, 201);
}
