//! ValidatingAdmissionPolicies end to end: a policy and a binding deny, warn
//! about, or let through writes as their CEL validations decide, with
//! upstream's message and status; params from a ConfigMap; policies whose
//! expressions do not compile are refused with 422.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::harness::{self, api_error, configmap, TestServer};

const BASE: &str = "/apis/admissionregistration.k8s.io/v1";

fn policy(name: &str, spec_extra: Value) -> Value {
    let mut spec = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
        "validations": [{"expression": "size(object.data) <= 1"}],
    });
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
}

async fn post(ts: &TestServer, plural: &str, body: Value) -> (u16, Value) {
    ts.send_json(
        "POST",
        &format!("{BASE}/{plural}"),
        body.to_string().into_bytes(),
    )
    .await
}

async fn bind(ts: &TestServer, name: &str, policy: &str, extra: Value) {
    let mut spec = json!({"policyName": policy, "validationActions": ["Deny"]});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let b = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": spec});
    let (code, out) = post(ts, "validatingadmissionpolicybindings", b).await;
    assert_eq!(code, 201, "{out}");
}

fn two_keys(name: &str) -> ConfigMap {
    let mut cm = configmap(name, &[]);
    cm.data.as_mut().unwrap().insert("k2".into(), "v2".into());
    cm
}

#[tokio::test]
async fn policy_denies_with_upstream_message_and_reason() {
    let ts = harness::start().await;
    let (code, out) = post(
        &ts,
        "validatingadmissionpolicies",
        policy("small", json!({})),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let api: Api<ConfigMap> = ts.api("default");
    // Without a binding a policy does nothing.
    api.create(&PostParams::default(), &two_keys("unbound"))
        .await
        .expect("unbound policy");
    bind(&ts, "small-binding", "small", json!({})).await;
    api.create(&PostParams::default(), &configmap("one", &[]))
        .await
        .expect("valid");
    let s = api_error(api.create(&PostParams::default(), &two_keys("two")).await);
    assert_eq!(s.code, 422);
    assert_eq!(s.reason, "Invalid");
    assert_eq!(
        s.message,
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-binding' denied request: failed expression: size(object.data) <= 1"
    );

    let forbidden = policy(
        "named",
        json!({"validations": [{"expression": "object.metadata.name != 'bad'",
        "message": "not that name", "reason": "Forbidden"}]}),
    );
    post(&ts, "validatingadmissionpolicies", forbidden).await;
    bind(&ts, "named-binding", "named", json!({})).await;
    let s = api_error(
        api.create(&PostParams::default(), &configmap("bad", &[]))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert!(
        s.message.ends_with("denied request: not that name"),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn warn_action_admits_with_a_warning() {
    let ts = harness::start().await;
    post(
        &ts,
        "validatingadmissionpolicies",
        policy("small", json!({})),
    )
    .await;
    bind(&ts, "warn", "small", json!({"validationActions": ["Warn"]})).await;
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&two_keys("w")).unwrap())
        .unwrap();
    let resp = ts
        .client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("transport");
    assert_eq!(resp.status().as_u16(), 201);
    let warnings: Vec<String> = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains(
            "Validation failed for ValidatingAdmissionPolicy 'small' with binding 'warn': failed expression: size(object.data) <= 1"
        )),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn params_come_from_the_bound_object() {
    let ts = harness::start().await;
    let p = policy(
        "limited",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "namespaceSelector": {"matchLabels": {"limited": "yes"}}},
            "validations": [{"expression": "object.metadata.name != params.data.forbidden",
                "messageExpression": "'name ' + object.metadata.name + ' is forbidden'"}],
        }),
    );
    let (code, out) = post(&ts, "validatingadmissionpolicies", p).await;
    assert_eq!(code, 201, "{out}");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lim", "labels": {"limited": "yes"}}});
    ts.send_json("POST", "/api/v1/namespaces", ns.to_string().into_bytes())
        .await;
    bind(
        &ts,
        "limited-binding",
        "limited",
        json!({"paramRef": {"name": "limits", "namespace": "default",
        "parameterNotFoundAction": "Deny"}}),
    )
    .await;
    let api: Api<ConfigMap> = ts.api("lim");
    // The param does not exist yet: parameterNotFoundAction Deny.
    let s = api_error(
        api.create(&PostParams::default(), &configmap("x", &[]))
            .await,
    );
    assert_eq!(
        s.message,
        "configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'limited' with binding 'limited-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    let mut limits = configmap("limits", &[]);
    limits.data = Some([("forbidden".to_string(), "evil".to_string())].into());
    ts.api::<ConfigMap>("default")
        .create(&PostParams::default(), &limits)
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("x", &[]))
        .await
        .expect("allowed by params");
    let s = api_error(
        api.create(&PostParams::default(), &configmap("evil", &[]))
            .await,
    );
    assert!(
        s.message
            .ends_with("denied request: name evil is forbidden"),
        "{}",
        s.message
    );
    // Outside the selected namespaces the policy does not apply.
    ts.api::<ConfigMap>("default")
        .create(&PostParams::default(), &configmap("evil", &[]))
        .await
        .expect("not matched");
}

#[tokio::test]
async fn policies_that_do_not_compile_are_refused() {
    let ts = harness::start().await;
    let bad = policy(
        "bad",
        json!({"validations": [
            {"expression": "size(object.data) <="},
            {"expression": "nothing.here == 1", "messageExpression": "'x' +"},
        ]}),
    );
    let (code, out) = post(&ts, "validatingadmissionpolicies", bad).await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(out["reason"], "Invalid");
    let fields: Vec<&str> = out["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.validations[0].expression",
            "spec.validations[1].expression",
            "spec.validations[1].messageExpression"
        ]
    );
    let msg = out["message"].as_str().unwrap();
    assert!(
        msg.contains("compilation failed: ERROR: <input>:1:"),
        "{msg}"
    );
    assert!(msg.contains("undeclared reference to 'nothing'"), "{msg}");
    // params without a paramKind is undeclared too; an update is checked the same way.
    let (code, _) = post(&ts, "validatingadmissionpolicies", policy("ok", json!({}))).await;
    assert_eq!(code, 201);
    let (_, mut cur) = ts
        .get_json(&format!("{BASE}/validatingadmissionpolicies/ok"))
        .await;
    cur["spec"]["validations"] = json!([{"expression": "params.x == 1"}]);
    let (code, out) = ts
        .send_json(
            "PUT",
            &format!("{BASE}/validatingadmissionpolicies/ok"),
            cur.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        out["details"]["causes"][0]["field"],
        "spec.validations[0].expression"
    );
}
