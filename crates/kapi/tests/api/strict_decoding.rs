//! `fieldValidation` over every way a body reaches an object: JSON and YAML
//! creates, merge, strategic merge and JSON patches, apply configurations —
//! unknown fields and repeated keys, each reported in upstream's words and
//! order (Strict), as warnings (Warn), or not at all (Ignore). Every
//! expected answer was read from kube-apiserver 1.28.4.

use serde_json::{json, Value};

use crate::harness::{self, TestServer};

const CM: &str = "/api/v1/namespaces/default/configmaps";

struct Case {
    name: &'static str,
    method: &'static str,
    /// Path under the ConfigMaps or Deployments of `default`, with the query.
    path: String,
    content_type: &'static str,
    body: &'static str,
    code: u16,
    /// The Status message (Strict) or nothing.
    message: Option<&'static str>,
    warnings: &'static [&'static str],
}

const DEPLOYMENT: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dup","labels":{"a":"1","a":"2"}},"spec":{"replicas":1,"unknownField":1,"replicas":2,"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i","image":"j","foo":1}]}}}}"#;
const DEPLOYMENT_STRICT: &str = r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "metadata.labels.a", unknown field "spec.unknownField", duplicate field "spec.replicas", duplicate field "spec.template.spec.containers[0].image", unknown field "spec.template.spec.containers[0].foo""#;
const DEPLOYMENT_WARNINGS: &[&str] = &[
    r#"duplicate field "metadata.labels.a""#,
    r#"unknown field "spec.unknownField""#,
    r#"duplicate field "spec.replicas""#,
    r#"duplicate field "spec.template.spec.containers[0].image""#,
    r#"unknown field "spec.template.spec.containers[0].foo""#,
];
const YAML_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dy\ndata:\n  a: \"1\"\n  a: \"2\"\nfoo: 1\n";
const YAML_APPLY: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n  a: \"2\"\n";
const PATCH: &str = r#"{"data":{"a":"1","a":"2"},"foo":1,"bar":[1,"x",true,null,1.5,{"z":1}]}"#;
const PATCH_WARNINGS: &[&str] = &[
    r#"duplicate field "data.a""#,
    r#"unknown field "bar""#,
    r#"unknown field "foo""#,
];

fn cases() -> Vec<Case> {
    let deploy = |fv: &str| {
        format!("/apis/apps/v1/namespaces/default/deployments?dryRun=All&fieldValidation={fv}")
    };
    let cm = |fv: &str| format!("{CM}?dryRun=All&fieldValidation={fv}");
    let patch = |fv: &str| format!("{CM}/target?dryRun=All&fieldValidation={fv}");
    let apply = |fv: &str| format!("{CM}/applied?fieldManager=m&fieldValidation={fv}");
    let json = "application/json";
    let yaml = "application/yaml";
    let merge = "application/merge-patch+json";
    let smp = "application/strategic-merge-patch+json";
    let apply_yaml = "application/apply-patch+yaml";
    let c = |name, method, path, content_type, body, code, message, warnings| Case {
        name,
        method,
        path,
        content_type,
        body,
        code,
        message,
        warnings,
    };
    vec![
        c("json strict", "POST", deploy("Strict"), json, DEPLOYMENT, 400, Some(DEPLOYMENT_STRICT), &[]),
        c("json warn", "POST", deploy("Warn"), json, DEPLOYMENT, 201, None, DEPLOYMENT_WARNINGS),
        c("json ignore", "POST", deploy("Ignore"), json, DEPLOYMENT, 201, None, &[]),
        c("yaml strict", "POST", cm("Strict"), yaml, YAML_CM, 400,
          Some("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal errors:\n  line 7: key \"a\" already set in map, unknown field \"foo\""), &[]),
        c("yaml warn", "POST", cm("Warn"), yaml, YAML_CM, 201, None,
          &["line 7: key \"a\" already set in map", "unknown field \"foo\""]),
        c("yaml ignore", "POST", cm("Ignore"), yaml, YAML_CM, 201, None, &[]),
        c("merge warn", "PATCH", patch("Warn"), merge, PATCH, 200, None, PATCH_WARNINGS),
        c("strategic strict", "PATCH", patch("Strict"), smp, PATCH, 422,
          Some(r#" "" is invalid: patch: Invalid value: "map[bar:[1 x true <nil> 1.5 map[z:1]] data:map[a:2] foo:1]": strict decoding error: duplicate field "data.a", unknown field "bar", unknown field "foo""#), &[]),
        c("strategic warn", "PATCH", patch("Warn"), smp, PATCH, 200, None, PATCH_WARNINGS),
        c("strategic ignore", "PATCH", patch("Ignore"), smp, PATCH, 200, None, &[]),
        c("apply strict", "PATCH", apply("Strict"), apply_yaml, YAML_APPLY, 400,
          Some("error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"a\" already set in map"), &[]),
        c("apply warn", "PATCH", apply("Warn"), apply_yaml, YAML_APPLY, 201, None,
          &["line 7: key \"a\" already set in map"]),
        c("apply ignore", "PATCH", apply("Ignore"), apply_yaml, YAML_APPLY, 200, None, &[]),
    ]
}

async fn seeded() -> TestServer {
    let s = harness::start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}});
    let (code, out) = s
        .send_json("POST", CM, serde_json::to_vec(&cm).unwrap())
        .await;
    assert_eq!(code, 201, "{out}");
    s
}

#[tokio::test]
async fn unknown_and_repeated_fields_are_reported_as_upstream_reports_them() {
    let s = seeded().await;
    for c in cases() {
        let req = http::Request::builder()
            .method(c.method)
            .uri(&c.path)
            .header("content-type", c.content_type)
            .body(c.body.as_bytes().to_vec())
            .unwrap();
        let reply = s.exchange(req).await;
        let out = reply.json();
        assert_eq!(reply.code, c.code, "{}: {out}", c.name);
        if let Some(m) = c.message {
            assert_eq!(out["message"], m, "{}", c.name);
        }
        assert_eq!(reply.warnings(), c.warnings, "{}", c.name);
    }
    // The last repeated key wins wherever the body is accepted.
    let (_, applied) = s.get_json(&format!("{CM}/applied")).await;
    assert_eq!(applied["data"], json!({"a": "2"}));
}

/// A merge patch's Strict error carries the patched object as upstream's
/// patch library writes it: the maps the patch touched sorted, the metadata
/// in Go's field order.
#[tokio::test]
async fn a_strict_merge_patch_error_shows_the_patched_object() {
    let s = seeded().await;
    let req = http::Request::patch(format!("{CM}/target?fieldValidation=Strict"))
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"zzz":1,"data":{"b":"1","a":"2"}}"#.to_vec())
        .unwrap();
    let reply = s.exchange(req).await;
    assert_eq!(reply.code, 422);
    let out = reply.json();
    let (_, target) = s.get_json(&format!("{CM}/target")).await;
    let m = &target["metadata"];
    let object = format!(
        r#"{{"apiVersion":"v1","data":{{"a":"2","b":"1"}},"kind":"ConfigMap","metadata":{{"name":"target","namespace":"default","uid":{},"resourceVersion":{},"creationTimestamp":{}}},"zzz":1}}"#,
        m["uid"], m["resourceVersion"], m["creationTimestamp"]
    );
    let detail = format!(
        "Invalid value: {}: strict decoding error: unknown field \"zzz\"",
        Value::String(object)
    );
    assert_eq!(out["message"], format!(" \"\" is invalid: patch: {detail}"));
    assert_eq!(
        out["details"],
        json!({"causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]})
    );
}
