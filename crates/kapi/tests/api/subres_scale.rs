//! Admission of `scale` writes: webhooks and ValidatingAdmissionPolicies see
//! an UPDATE of `<resource>/scale` with `autoscaling/v1` Scale objects; a
//! mutating webhook's patch of `spec.replicas` is what gets stored; a denial
//! leaves the object as it was; rules match subresources as upstream
//! (`*` only main resources, `*/*` and `x/*` both, `*/scale` only scale); dry-run
//! admits and stores nothing.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use crate::harness::{self, api_error, TestServer};
use crate::webhook_server::{self, Hook};
use crate::webhooks::{configure, hook_spec, url_config};

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
    .unwrap()
}

fn statefulset(name: &str) -> StatefulSet {
    serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
    .unwrap()
}

/// A webhook on `resources` of group `apps` for UPDATE, calling `path`.
fn apps_hook(hook: &Hook, name: &str, path: &str, resources: Value) -> Value {
    let rules = json!([{"operations": ["UPDATE"], "apiGroups": ["apps"],
        "apiVersions": ["v1"], "resources": resources}]);
    hook_spec(name, url_config(hook, path), json!({"rules": rules}))
}

fn replicas_patch(n: i64) -> Patch<Value> {
    Patch::Merge(json!({"spec": {"replicas": n}}))
}

async fn stored_replicas(api: &Api<Deployment>, name: &str) -> i32 {
    let d = api.get(name).await.unwrap();
    d.spec.unwrap().replicas.unwrap()
}

/// The reviews `hook` received on `path`.
fn reviews(hook: &Hook, path: &str) -> Vec<Value> {
    hook.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, _)| p == path)
        .map(|(_, r)| r.clone())
        .collect()
}

/// A server with Deployment "web" and a mutating webhook that sets every
/// `deployments/scale` update's replicas to 3.
async fn web_with_replicas_hook() -> (harness::TestServer, webhook_server::Hook, Api<Deployment>) {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let deps: Api<Deployment> = ts.api("default");
    deps.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let m = apps_hook(
        &hook,
        "replicas.example.com",
        "/replicas-3",
        json!(["deployments/scale"]),
    );
    configure(&ts, true, "replicas", m).await;
    (ts, hook, deps)
}

#[tokio::test]
async fn mutating_webhook_changes_a_scale_update() {
    let (_ts, hook, deps) = web_with_replicas_hook().await;

    let out = deps
        .patch_scale("web", &PatchParams::default(), &replicas_patch(5))
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(3));
    assert_eq!(stored_replicas(&deps, "web").await, 3);

    let r = hook.last();
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["requestSubResource"], "scale");
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["name"], "web");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["object"]["kind"], "Scale");
    assert_eq!(r["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(r["object"]["spec"]["replicas"], 5);
    assert_eq!(r["oldObject"]["kind"], "Scale");
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);
    // A patch is admitted with UpdateOptions, as upstream's patch handler
    // converts its PatchOptions.
    assert_eq!(r["options"]["kind"], "UpdateOptions");
    assert_eq!(r["dryRun"], false);

    // A PUT of the Scale is an UPDATE with UpdateOptions, mutated the same way.
    let mut scale = deps.get_scale("web").await.unwrap();
    scale.spec.as_mut().unwrap().replicas = Some(8);
    let out = deps
        .replace_scale("web", &PostParams::default(), &scale)
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(3));
    let r = hook.last();
    assert_eq!(r["object"]["spec"]["replicas"], 8);
    assert_eq!(r["options"]["kind"], "UpdateOptions");

    // A PUT naming another object is refused before admission.
    let calls = hook.calls().len();
    let mut other = scale.clone();
    other.metadata.name = Some("other".into());
    let s = api_error(
        deps.replace_scale("web", &PostParams::default(), &other)
            .await,
    );
    assert_eq!(s.code, 400);
    assert_eq!(
        s.message,
        "the name of the object (other) does not match the name on the URL (web)"
    );
    assert_eq!(hook.calls().len(), calls);
}

#[tokio::test]
async fn validating_webhook_denies_scale_updates_and_nothing_changes() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let deps: Api<Deployment> = ts.api("default");
    deps.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let v = apps_hook(&hook, "deny.example.com", "/deny", json!(["*/scale"]));
    configure(&ts, false, "deny", v).await;

    let s = api_error(
        deps.patch_scale("web", &PatchParams::default(), &replicas_patch(4))
            .await,
    );
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        "admission webhook \"deny.example.com\" denied the request: no way"
    );
    assert_eq!(stored_replicas(&deps, "web").await, 1);
    let r = hook.last();
    assert_eq!(r["object"]["spec"]["replicas"], 4);
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);

    // The same rule covers a StatefulSet's scale; the main resource's update
    // is not a scale update and goes through.
    let sets: Api<StatefulSet> = ts.api("default");
    sets.create(&PostParams::default(), &statefulset("db"))
        .await
        .unwrap();
    let s = api_error(
        sets.patch_scale("db", &PatchParams::default(), &replicas_patch(2))
            .await,
    );
    assert_eq!(s.code, 403);
    assert_eq!(
        hook.last()["resource"],
        json!({"group": "apps", "version": "v1", "resource": "statefulsets"})
    );
    let calls = hook.calls().len();
    deps.patch("web", &PatchParams::default(), &replicas_patch(6))
        .await
        .unwrap();
    assert_eq!(hook.calls().len(), calls, "main resource not matched");
    assert_eq!(stored_replicas(&deps, "web").await, 6);
}

#[tokio::test]
async fn webhook_rules_match_subresources_as_upstream() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let deps: Api<Deployment> = ts.api("default");
    deps.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    for (name, resources) in [
        ("star", json!(["*"])),
        ("star-star", json!(["*/*"])),
        ("deployments", json!(["deployments"])),
        ("deployments-star", json!(["deployments/*"])),
        ("deployments-scale", json!(["deployments/scale"])),
        ("star-scale", json!(["*/scale"])),
        ("star-status", json!(["*/status"])),
        ("replicasets-scale", json!(["replicasets/scale"])),
    ] {
        let path = format!("/{name}");
        let h = apps_hook(&hook, &format!("{name}.example.com"), &path, resources);
        configure(&ts, false, name, h).await;
    }
    deps.patch_scale("web", &PatchParams::default(), &replicas_patch(2))
        .await
        .unwrap();
    let mut called = hook.calls();
    called.sort();
    assert_eq!(
        called,
        [
            "/deployments-scale",
            "/deployments-star",
            "/star-scale",
            "/star-star"
        ]
    );
    hook.seen.lock().unwrap().clear();
    deps.patch("web", &PatchParams::default(), &replicas_patch(3))
        .await
        .unwrap();
    // `x/*` and `*/*` match the main resource too (upstream splits the rule
    // into resource and subresource; `*` matches an empty subresource).
    let mut called = hook.calls();
    called.sort();
    assert_eq!(
        called,
        ["/deployments", "/deployments-star", "/star", "/star-star"]
    );
}

#[tokio::test]
async fn dry_run_scale_is_admitted_and_not_stored() {
    let (ts, hook, deps) = web_with_replicas_hook().await;
    let v = apps_hook(&hook, "allow.example.com", "/allow", json!(["*/*"]));
    configure(&ts, false, "allow", v).await;

    let pp = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let out: Scale = deps
        .patch_scale("web", &pp, &replicas_patch(9))
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(3));
    assert_eq!(stored_replicas(&deps, "web").await, 1);
    let mutating = reviews(&hook, "/replicas-3");
    let validating = reviews(&hook, "/allow");
    assert_eq!(mutating.len(), 1);
    assert_eq!(validating.len(), 1);
    assert_eq!(mutating[0]["dryRun"], true);
    assert_eq!(validating[0]["dryRun"], true);
    // The validating phase sees the mutated Scale.
    assert_eq!(validating[0]["object"]["spec"]["replicas"], 3);
    assert_eq!(validating[0]["object"]["kind"], "Scale");
}

/// A ValidatingAdmissionPolicy bound to deployments/scale.
async fn max_replicas_policy(ts: &TestServer) {
    let base = "/apis/admissionregistration.k8s.io/v1";
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "max-replicas"},
        "spec": {"matchConstraints": {"resourceRules": [{"operations": ["UPDATE"],
            "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/scale"]}]},
            "validations": [{"expression": "object.kind == 'Scale' && object.spec.replicas <= 5",
                "message": "at most 5 replicas"}]}});
    let (code, out) = ts
        .send_json(
            "POST",
            &format!("{base}/validatingadmissionpolicies"),
            policy.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "max-replicas-binding"},
        "spec": {"policyName": "max-replicas", "validationActions": ["Deny"]}});
    let (code, out) = ts
        .send_json(
            "POST",
            &format!("{base}/validatingadmissionpolicybindings"),
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
}

#[tokio::test]
async fn policy_denies_scale_updates_with_422() {
    let ts = harness::start().await;
    let deps: Api<Deployment> = ts.api("default");
    deps.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    max_replicas_policy(&ts).await;

    let s = api_error(
        deps.patch_scale("web", &PatchParams::default(), &replicas_patch(10))
            .await,
    );
    assert_eq!(s.code, 422);
    assert_eq!(s.reason, "Invalid");
    assert_eq!(
        s.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' \
         with binding 'max-replicas-binding' denied request: at most 5 replicas"
    );
    assert_eq!(stored_replicas(&deps, "web").await, 1);
    deps.patch_scale("web", &PatchParams::default(), &replicas_patch(5))
        .await
        .unwrap();
    assert_eq!(stored_replicas(&deps, "web").await, 5);
    // The policy matches the scale subresource only.
    deps.patch("web", &PatchParams::default(), &replicas_patch(10))
        .await
        .unwrap();
    assert_eq!(stored_replicas(&deps, "web").await, 10);
    // Upstream's Scale validation answers for a negative count.
    let s = api_error(
        deps.patch_scale("web", &PatchParams::default(), &replicas_patch(-1))
            .await,
    );
    assert_eq!(s.code, 422);
    assert_eq!(
        s.message,
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: \
         must be greater than or equal to 0"
    );
}

#[tokio::test]
async fn status_updates_are_admitted_with_the_full_object() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let deps: Api<Deployment> = ts.api("default");
    deps.create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let v = apps_hook(&hook, "status.example.com", "/deny", json!(["*/status"]));
    configure(&ts, false, "status", v).await;
    let status = Patch::Merge(json!({"status": {"observedGeneration": 7}}));
    let s = api_error(
        deps.patch_status("web", &PatchParams::default(), &status)
            .await,
    );
    assert_eq!(s.code, 403);
    let r = hook.last();
    assert_eq!(
        r["kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(r["subResource"], "status");
    assert_eq!(r["object"]["kind"], "Deployment");
    assert_eq!(r["object"]["status"]["observedGeneration"], 7);
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);
    let d = deps.get("web").await.unwrap();
    assert_ne!(d.status.and_then(|s| s.observed_generation), Some(7));
}

#[tokio::test]
async fn custom_resource_scale_is_admitted_as_scale() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    crate::crd::establish(&ts, crate::crd::crontab_crd()).await;
    let base = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let obj = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "a"}, "spec": {"cronSpec": "x", "replicas": 1}});
    let (code, out) = ts
        .send_json("POST", base, obj.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{out}");
    let rules = json!([{"operations": ["UPDATE"], "apiGroups": ["stable.example.com"],
        "apiVersions": ["*"], "resources": ["crontabs/scale"]}]);
    let m = hook_spec(
        "replicas.example.com",
        url_config(&hook, "/replicas-3"),
        json!({"rules": rules}),
    );
    configure(&ts, true, "replicas", m).await;

    let req = http::Request::patch(format!("{base}/a/scale"))
        .header("content-type", "application/merge-patch+json")
        .body(json!({"spec": {"replicas": 5}}).to_string().into_bytes())
        .unwrap();
    let (code, scaled) = ts.raw(req).await;
    assert_eq!(code, 200, "{scaled}");
    assert_eq!(scaled["spec"]["replicas"], 3);
    let (_, stored) = ts.get_json(&format!("{base}/a")).await;
    assert_eq!(stored["spec"]["replicas"], 3);
    let r = hook.last();
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "stable.example.com", "version": "v1", "resource": "crontabs"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["object"]["spec"]["replicas"], 5);
}
