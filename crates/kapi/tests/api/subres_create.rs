//! Admission of creates through subresources: `pods/eviction` (policy/v1
//! Eviction), `pods/binding` and `bindings` (v1 Binding) and
//! `serviceaccounts/token` (authentication.k8s.io/v1 TokenRequest) are
//! CREATEs with the subresource's kind, named as the parent object; webhooks
//! and policies may change or refuse them; NamespaceLifecycle refuses them
//! in a terminating namespace, as upstream, while updates of subresources
//! there go through.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use crate::harness::{self, api_error, TestServer};
use crate::webhook_server::{self, Hook};
use crate::webhooks::{configure, hook_spec, url_config};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap()
}

fn account(name: &str) -> ServiceAccount {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name}}))
    .unwrap()
}

/// A webhook on CREATE of core `resources`, calling `path`.
fn core_hook(hook: &Hook, name: &str, path: &str, resources: Value) -> Value {
    let rules = json!([{"operations": ["CREATE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": resources}]);
    hook_spec(name, url_config(hook, path), json!({"rules": rules}))
}

async fn bind(ts: &TestServer, ns: &str, pod: &str) -> (u16, Value) {
    let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
        "target": {"kind": "Node", "name": "node-1"}});
    let path = format!("/api/v1/namespaces/{ns}/pods/{pod}/binding");
    ts.send_json("POST", &path, body.to_string().into_bytes())
        .await
}

fn token_request() -> TokenRequest {
    serde_json::from_value(json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest", "spec": {"audiences": ["api"]}}))
    .unwrap()
}

#[tokio::test]
async fn eviction_is_admitted_as_a_create_of_pods_eviction() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let pods: Api<Pod> = ts.api("default");
    for name in ["a", "protected"] {
        pods.create(&PostParams::default(), &pod(name))
            .await
            .unwrap();
    }
    let h = core_hook(&hook, "see.example.com", "/allow", json!(["pods/eviction"]));
    configure(&ts, false, "see", h).await;
    pods.evict("a", &EvictParams::default()).await.unwrap();
    let r = hook.last();
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(
        r["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"})
    );
    assert_eq!(r["subResource"], "eviction");
    assert_eq!(r["name"], "a");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["object"]["kind"], "Eviction");
    assert_eq!(r["object"]["metadata"]["name"], "a");
    assert!(r.get("oldObject").is_none());
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert_eq!(hook.calls().len(), 1, "the pod's delete is not admitted");

    // A policy on pods/eviction refuses one pod; it stays.
    let base = "/apis/admissionregistration.k8s.io/v1";
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-evict"},
        "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"]}]},
            "validations": [{"expression": "request.subResource == 'eviction' && object.metadata.name != 'protected'",
                "message": "protected pod", "reason": "Forbidden"}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-evict"},
        "spec": {"policyName": "no-evict", "validationActions": ["Deny"]}});
    for (plural, body) in [
        ("validatingadmissionpolicies", policy),
        ("validatingadmissionpolicybindings", binding),
    ] {
        let path = format!("{base}/{plural}");
        let (code, out) = ts
            .send_json("POST", &path, body.to_string().into_bytes())
            .await;
        assert_eq!(code, 201, "{out}");
    }
    let s = api_error(pods.evict("protected", &EvictParams::default()).await);
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        "pods \"protected\" is forbidden: ValidatingAdmissionPolicy 'no-evict' with binding \
         'no-evict' denied request: protected pod"
    );
    pods.get("protected").await.expect("still there");
}

#[tokio::test]
async fn dry_run_eviction_is_admitted_and_deletes_nothing() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let pods: Api<Pod> = ts.api("default");
    pods.create(&PostParams::default(), &pod("a"))
        .await
        .unwrap();
    let h = core_hook(&hook, "see.example.com", "/allow", json!(["pods/*"]));
    configure(&ts, false, "see", h).await;
    let ep = EvictParams {
        delete_options: None,
        post_options: PostParams {
            dry_run: true,
            ..PostParams::default()
        },
    };
    pods.evict("a", &ep).await.unwrap();
    assert_eq!(hook.last()["dryRun"], true);
    assert_eq!(hook.last()["subResource"], "eviction");
    pods.get("a").await.expect("not deleted");
}

#[tokio::test]
async fn binding_is_admitted_and_a_denial_leaves_the_pod_unbound() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let pods: Api<Pod> = ts.api("default");
    for name in ["a", "b"] {
        pods.create(&PostParams::default(), &pod(name))
            .await
            .unwrap();
    }
    let h = core_hook(&hook, "see.example.com", "/allow", json!(["*/binding"]));
    configure(&ts, false, "see", h).await;
    let (code, out) = bind(&ts, "default", "a").await;
    assert_eq!(code, 201, "{out}");
    let r = hook.last();
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "Binding"})
    );
    assert_eq!(r["resource"]["resource"], "pods");
    assert_eq!(r["subResource"], "binding");
    assert_eq!(r["name"], "a");
    assert_eq!(r["object"]["target"]["name"], "node-1");

    let deny = core_hook(&hook, "deny.example.com", "/deny", json!(["pods/binding"]));
    configure(&ts, false, "deny", deny).await;
    let (code, out) = bind(&ts, "default", "b").await;
    assert_eq!(code, 403, "{out}");
    assert_eq!(
        out["message"],
        "admission webhook \"deny.example.com\" denied the request: no way"
    );
    let b = pods.get("b").await.unwrap();
    assert!(b.spec.unwrap().node_name.is_none());
}

#[tokio::test]
async fn token_request_is_admitted_mutated_and_refused() {
    let ts = harness::start().await;
    let hook = webhook_server::start().await;
    let sas: Api<ServiceAccount> = ts.api("default");
    sas.create(&PostParams::default(), &account("robot"))
        .await
        .unwrap();
    let m = core_hook(
        &hook,
        "audience.example.com",
        "/audience",
        json!(["serviceaccounts/token"]),
    );
    configure(&ts, true, "audience", m).await;
    let see = core_hook(&hook, "see.example.com", "/allow", json!(["*/*"]));
    configure(&ts, false, "see", see).await;

    let out = sas
        .create_token_request("robot", &PostParams::default(), &token_request())
        .await
        .unwrap();
    assert_eq!(out.spec.audiences, ["mutated"]);
    assert!(!out.status.unwrap().token.is_empty());
    let calls = hook.seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for (_, r) in &calls {
        assert_eq!(r["operation"], "CREATE");
        assert_eq!(
            r["kind"],
            json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"})
        );
        assert_eq!(
            r["resource"],
            json!({"group": "", "version": "v1", "resource": "serviceaccounts"})
        );
        assert_eq!(r["subResource"], "token");
        assert_eq!(r["name"], "robot");
        assert_eq!(r["namespace"], "default");
    }
    assert_eq!(calls[0].1["object"]["spec"]["audiences"], json!(["api"]));
    // Validation sees the mutated, defaulted request.
    let validated = &calls[1].1["object"];
    assert_eq!(validated["spec"]["audiences"], json!(["mutated"]));
    assert_eq!(validated["spec"]["expirationSeconds"], 3600);
    assert_eq!(validated["metadata"]["name"], "robot");

    let deny = core_hook(
        &hook,
        "deny.example.com",
        "/deny",
        json!(["serviceaccounts/*"]),
    );
    configure(&ts, false, "deny", deny).await;
    let s = api_error(
        sas.create_token_request("robot", &PostParams::default(), &token_request())
            .await,
    );
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "admission webhook \"deny.example.com\" denied the request: no way"
    );
}

#[tokio::test]
async fn terminating_namespace_refuses_subresource_creates_not_updates() {
    // No namespace controller: the namespace stays terminating.
    let ts = harness::start_with_controllers(&["garbagecollector"]).await;
    let ns = ts.namespace("ending").await;
    let pods: Api<Pod> = ts.api(&ns);
    pods.create(&PostParams::default(), &pod("p"))
        .await
        .unwrap();
    let sas: Api<ServiceAccount> = ts.api(&ns);
    sas.create(&PostParams::default(), &account("robot"))
        .await
        .unwrap();
    let deps: Api<Deployment> = ts.api(&ns);
    let d: Deployment = serde_json::from_value(json!({"apiVersion": "apps/v1",
        "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
    .unwrap();
    deps.create(&PostParams::default(), &d).await.unwrap();
    let namespaces: Api<Namespace> = ts.cluster();
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    let phase = namespaces.get(&ns).await.unwrap().status.unwrap().phase;
    assert_eq!(phase.as_deref(), Some("Terminating"));

    let msg = |name: &str, r: &str| {
        format!(
            "{r} \"{name}\" is forbidden: unable to create new content in namespace ending \
             because it is being terminated"
        )
    };
    let s = api_error(pods.evict("p", &EvictParams::default()).await);
    assert_eq!((s.code, s.message.clone()), (403, msg("p", "pods")));
    let causes = s.details.unwrap().causes;
    assert_eq!(causes[0].reason, "NamespaceTerminating");
    let (code, out) = bind(&ts, &ns, "p").await;
    assert_eq!(
        (code, out["message"].clone()),
        (403, json!(msg("p", "pods")))
    );
    let s = api_error(
        sas.create_token_request("robot", &PostParams::default(), &token_request())
            .await,
    );
    assert_eq!((s.code, s.message), (403, msg("robot", "serviceaccounts")));
    pods.get("p").await.expect("not evicted");

    // Updates of subresources are not creates.
    let status = json!({"status": {"phase": "Running"}});
    pods.patch_status("p", &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("status update");
    deps.patch_scale(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .expect("scale update");
}
