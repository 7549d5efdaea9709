//! Upstream's exact answer (code, reason, message) to bad requests on every
//! decode, patch, option and routing path: a table, each row read from
//! kube-apiserver 1.28.4 (where a message names a generated value, the row
//! avoids it). Bodies without a Content-Type are JSON; bodies that do not
//! decode are described as upstream's decoders describe them.

use serde_json::json;

use crate::harness::{self, TestServer};

const CM: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

struct Row {
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: &'static str,
    code: u16,
    reason: &'static str,
    message: &'static str,
}

fn row(
    method: &'static str,
    path: impl Into<String>,
    content_type: Option<&'static str>,
    body: &'static str,
    (code, reason, message): (u16, &'static str, &'static str),
) -> Row {
    Row {
        method,
        path: path.into(),
        content_type,
        body,
        code,
        reason,
        message,
    }
}

const JSON: Option<&str> = Some("application/json");
const SMP: Option<&str> = Some("application/strategic-merge-patch+json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");

fn decoding() -> Vec<Row> {
    vec![
        row("POST", "/api/v1/namespaces", None, "hello", (400, "BadRequest",
            "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: invalid character 'h' looking for beginning of value (68656c6c6f)")),
        row("POST", CM, JSON, r#"{"apiVersion":"#, (400, "BadRequest",
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":)"#)),
        row("POST", CM, JSON, r#"{"apiVersion":"v1",x}"#, (400, "BadRequest",
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'x' looking for beginning of object key string ({"apiVersion":"v1",x})"#)),
        row("POST", CM, JSON, "[]", (400, "BadRequest",
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)"#)),
        row("POST", CM, JSON, "", (400, "BadRequest",
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)")),
        row("POST", CM, JSON, r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#, (400, "BadRequest",
            r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#)),
        row("POST", CM, JSON, r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}"#, (400, "BadRequest",
            r#"ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/runtime/scheme.go:100""#)),
        row("POST", CM, JSON, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#, (400, "BadRequest",
            r#"Deployment in version "v1" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion"#)),
        row("POST", DEPLOY, JSON, r#"{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"x"}}"#, (400, "BadRequest",
            "the API version in the data (apps/v1beta1) does not match the expected API version (apps/v1)")),
        row("POST", CM, JSON, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":1}}"#, (400, "BadRequest",
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type map[string]string"#)),
        row("POST", PODS, JSON, r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":1}]}}"#, (400, "BadRequest",
            r#"Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string"#)),
        row("POST", DEPLOY, JSON, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"replicas":1.5}}"#, (400, "BadRequest",
            r#"Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"#)),
        row("POST", CM, JSON, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#, (422, "Invalid",
            r#"ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required"#)),
        row("POST", "/api/v1/namespaces/default/services", JSON, r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"redis-master"},"spec":{"ports":[{"port":0}]}}"#, (422, "Invalid",
            r#"Service "redis-master" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive]"#)),
    ]
}

fn patching() -> Vec<Row> {
    let target = format!("{CM}/target");
    let d = format!("{DEPLOY}/target");
    vec![
        row("PATCH", &target, SMP, r#"{"metadata":{"labels":"x"}}"#, (422, "Invalid",
            r#" "" is invalid: patch: Invalid value: "map[metadata:map[labels:x]]": cannot restore map from string"#)),
        row("PATCH", &target, SMP, r#"{"data":{"a":1}}"#, (422, "Invalid",
            r#" "" is invalid: patch: Invalid value: "map[data:map[a:1]]": cannot convert int64 to string"#)),
        row("PATCH", &d, SMP, r#"{"spec":{"replicas":true}}"#, (422, "Invalid",
            r#" "" is invalid: patch: Invalid value: "map[spec:map[replicas:true]]": unrecognized type: int32"#)),
        row("PATCH", &d, SMP, r#"{"spec":{"template":{"spec":{"containers":{"a":1}}}}}"#, (422, "Invalid",
            r#" "" is invalid: patch: Invalid value: "map[spec:map[template:map[spec:map[containers:map[a:1]]]]]": cannot restore slice from map"#)),
        row("PATCH", &d, SMP, r#"{"spec":{"template":{"spec":{"containers":[{"$patch":"bogus","name":"c"}]}}}}"#, (500, "",
            "unknown patch type: bogus in map: map[$patch:bogus name:c]")),
        row("PATCH", &target, MERGE, "{", (400, "BadRequest", "error decoding patch: unexpected end of JSON input")),
        // Non-object patches: decoded into a map first, then json-patch's MergePatch.
        row("PATCH", &target, MERGE, "null", (400, "BadRequest", "Invalid JSON Patch")),
        row("PATCH", &target, MERGE, r#""x""#, (400, "BadRequest",
            "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}")),
        row("PATCH", &target, MERGE, "[1]", (400, "BadRequest",
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}")),
        row("PATCH", format!("{target}?fieldValidation=Ignore"), MERGE, "[1]", (422, "Invalid",
            r#" "" is invalid: patch: Invalid value: "[1]": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#)),
        row("PATCH", &target, SMP, "1", (400, "BadRequest", "json: cannot unmarshal number into Go value of type map[string]interface {}")),
        row("PUT", &target, JSON, "{}", (400, "BadRequest",
            "the name of the object (target based on URL) was undeterminable: name must be provided")),
        row("PATCH", &target, JSON_PATCH, r#"{"op":"remove"}"#, (400, "BadRequest",
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")),
        row("PATCH", &target, JSON_PATCH, r#"[{"op":"test","path":"/data/a","value":"zz"}]"#, (422, "Invalid",
            "the server rejected our request due to an error in our request")),
        row("PATCH", &target, MERGE, r#"{"metadata":{"name":"zz"}}"#, (400, "BadRequest",
            "the name of the object (zz) does not match the name on the URL (target)")),
    ]
}

fn options_and_routes() -> Vec<Row> {
    vec![
        row("POST", format!("{CM}?dryRun=Nope"), JSON, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#, (422, "Invalid",
            r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Nope"}: supported values: "All""#)),
        row("POST", format!("{CM}?fieldValidation=Nope"), JSON, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#, (422, "Invalid",
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Nope": supported values: "", "Ignore", "Strict", "Warn""#)),
        row("GET", format!("{CM}?resourceVersionMatch=Nope"), None, "", (422, "Invalid",
            r#"ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Nope": supported values: "Exact", "NotOlderThan", ""]"#)),
        row("GET", format!("{CM}?limit=abc"), None, "", (400, "BadRequest", r#"strconv.ParseInt: parsing "abc": invalid syntax"#)),
        // timeoutSeconds decodes before limit, on a list as on a watch.
        row("GET", format!("{CM}?timeoutSeconds=1.5&limit=abc"), None, "", (400, "BadRequest", r#"strconv.ParseInt: parsing "1.5": invalid syntax"#)),
        row("GET", format!("{CM}?watch=1&limit=abc"), None, "", (400, "BadRequest", r#"strconv.ParseInt: parsing "abc": invalid syntax"#)),
        // A *bool present with any value is set: forbidden on a list.
        row("GET", format!("{CM}?sendInitialEvents=false"), None, "", (422, "Invalid",
            r#"ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"#)),
        row("GET", format!("{CM}?resourceVersion=0&resourceVersionMatch=Exact&continue=abc"), None, "", (422, "Invalid",
            r#"ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"]"#)),
        row("GET", format!("{CM}?resourceVersion=0&resourceVersionMatch=Exact"), None, "", (422, "Invalid",
            r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0""#)),
        row("GET", format!("{CM}?watch=1&sendInitialEvents=&resourceVersionMatch=Exact"), None, "", (422, "Invalid",
            r#"ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]"#)),
        row("DELETE", format!("{CM}/target?dryRun=abc"), None, "", (422, "Invalid",
            r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"abc"}: supported values: "All""#)),
        row("DELETE", format!("{CM}/target?orphanDependents=abc&propagationPolicy=Orphan"), None, "", (422, "Invalid",
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set"#)),
        row("DELETE", format!("{CM}/target"), JSON, r#"{"dryRun":["All","Some"]}"#, (422, "Invalid",
            r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"All", "Some"}: supported values: "All""#)),
        row("GET", format!("{CM}?resourceVersion=abc"), None, "", (500, "",
            r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#)),
        row("GET", format!("{CM}?continue=abc"), None, "", (400, "BadRequest",
            "invalid continue token: continue key is not valid: invalid character 'i' looking for beginning of value")),
        row("GET", format!("{CM}?fieldSelector=spec.x%3D1"), None, "", (400, "BadRequest",
            r#""spec.x" is not a known field selector: only "metadata.name", "metadata.namespace""#)),
        row("DELETE", format!("{CM}/target?gracePeriodSeconds=x"), None, "", (400, "BadRequest", r#"strconv.ParseInt: parsing "x": invalid syntax"#)),
        row("DELETE", format!("{CM}/target"), JSON, "{", (500, "", "couldn't get version/kind; json parse error: unexpected end of JSON input")),
        row("DELETE", format!("{CM}/target"), JSON, r#"{"kind":"Pod","apiVersion":"v1"}"#, (500, "",
            r#"no kind "Pod" is registered for version "v1" in scheme "pkg/runtime/scheme.go:100""#)),
        row("DELETE", format!("{CM}/target"), JSON, r#"{"gracePeriodSeconds":"x"}"#, (500, "",
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64")),
        row("DELETE", format!("{CM}/target"), JSON, r#"{"preconditions":{"resourceVersion":"1"}}"#, (409, "Conflict", "")),
        // Decoding: a null body is an empty object; times are read as Go's time.Parse reads them.
        row("POST", CM, JSON, "null", (422, "Invalid", r#"ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required"#)),
        row("POST", CM, Some("application/yaml"), "", (422, "Invalid", r#"ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required"#)),
        row("POST", CM, JSON, r#"{"metadata":{"name":"t","creationTimestamp":"yesterday"}}"#, (400, "BadRequest",
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#)),
        row("POST", "/apis/events.k8s.io/v1/namespaces/default/events", JSON, r#"{"metadata":{"name":"e"},"eventTime":"2026-12-05T07:16:11Z"}"#, (400, "BadRequest",
            r#"Event in version "v1" cannot be handled as a Event: parsing time "2026-12-05T07:16:11Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#)),
        // Storage refuses a create that names a revision, after validation, before the name's conflict.
        row("POST", CM, JSON, r#"{"metadata":{"name":"target","resourceVersion":"5"}}"#, (500, "",
            "resourceVersion should not be set on objects to be created")),
        // kube-apiserver's own kinds refuse an unqualified finalizer name (core ObjectMeta validation).
        row("POST", CM, JSON, r#"{"metadata":{"name":"f","finalizers":["custom"]}}"#, (422, "Invalid",
            r#"ConfigMap "f" is invalid: metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified"#)),
        row("PUT", CM, JSON, "{}", (405, "MethodNotAllowed", "the server does not allow this method on the requested resource")),
        row("POST", format!("{CM}/x"), JSON, "{}", (405, "MethodNotAllowed", "the server does not allow this method on the requested resource")),
        row("DELETE", "/api/v1/namespaces", None, "", (405, "MethodNotAllowed", "the server does not allow this method on the requested resource")),
        row("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None, "", (405, "MethodNotAllowed",
            "the server does not allow this method on the requested resource")),
        row("PUT", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x", JSON, "{}", (404, "NotFound",
            "the server could not find the requested resource")),
        row("GET", "/apis/apps/v9/deployments", None, "", (404, "NotFound", "the server could not find the requested resource")),
    ]
}

async fn seeded() -> TestServer {
    let s = harness::start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"a": "b"}});
    let (code, out) = s
        .send_json("POST", CM, serde_json::to_vec(&cm).unwrap())
        .await;
    assert_eq!(code, 201, "{out}");
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "target"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (code, out) = s
        .send_json("POST", DEPLOY, serde_json::to_vec(&d).unwrap())
        .await;
    assert_eq!(code, 201, "{out}");
    s
}

#[tokio::test]
async fn bad_requests_get_upstreams_answers() {
    let s = seeded().await;
    let rows = decoding()
        .into_iter()
        .chain(patching())
        .chain(options_and_routes());
    for r in rows {
        let mut req = http::Request::builder().method(r.method).uri(&r.path);
        if let Some(ct) = r.content_type {
            req = req.header("content-type", ct);
        }
        let reply = s
            .exchange(req.body(r.body.as_bytes().to_vec()).unwrap())
            .await;
        let out = reply.json();
        let what = format!("{} {} {}", r.method, r.path, r.body);
        assert_eq!(reply.code, r.code, "{what}: {out}");
        assert_eq!(
            out["reason"].as_str().unwrap_or(""),
            r.reason,
            "{what}: {out}"
        );
        if !r.message.is_empty() {
            assert_eq!(out["message"], r.message, "{what}");
        }
    }
}

/// A path no API serves is Go's plain-text 404, not a Status.
#[tokio::test]
async fn paths_outside_every_api_are_plain_404s() {
    let s = harness::start().await;
    for path in ["/foo", "/apis/nope.io/v1", "/apis/nope.io/v1/things"] {
        let reply = s
            .exchange(http::Request::get(path).body(Vec::new()).unwrap())
            .await;
        assert_eq!(reply.code, 404, "{path}");
        assert_eq!(reply.body, b"404 page not found\n", "{path}");
        assert_eq!(
            reply.headers["content-type"], "text/plain; charset=utf-8",
            "{path}"
        );
    }
}

/// A request's method, path, Content-Type and Accept, and the answer's code and message.
type MediaCase = (
    &'static str,
    String,
    Option<&'static str>,
    Option<&'static str>,
    u16,
    String,
);

/// Media types as kube-apiserver 1.28.4 answers them: its built-in resources
/// are served through go-restful routes, which refuse a PATCH body no patch
/// route consumes (415) and an `Accept` the route produces nothing of (406)
/// with go-restful's own messages and empty details, before the handler
/// (which still refuses what passes them, a `Table` where there is none, or
/// a POST body it cannot decode); custom resources have no such routes.
#[tokio::test]
async fn media_types_are_refused_as_upstreams_routes_refuse_them() {
    let s = seeded().await;
    crate::crd::establish(&s, crate::crd::crontab_crd()).await;
    const ROUTE_406: &str = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    let collection_406 = format!("{ROUTE_406}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch");
    let crs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let cases: Vec<MediaCase> = vec![
        ("PATCH", format!("{CM}/target"), JSON, None, 415, "415: Unsupported Media Type".into()),
        ("PATCH", format!("{DEPLOY}/target"), Some("text/plain"), Some("application/xml"), 415, "415: Unsupported Media Type".into()),
        ("GET", CM.into(), None, Some("application/xml"), 406, collection_406.clone()),
        ("GET", format!("{CM}?watch=true"), None, Some("text/html"), 406, collection_406.clone()),
        ("GET", format!("{CM}/target"), None, Some("application/xml"), 406, ROUTE_406.into()),
        ("GET", CM.into(), None, Some("application/*"), 406, collection_406.clone()),
        ("GET", CM.into(), None, Some("APPLICATION/JSON"), 406, collection_406),
        ("POST", CM.into(), JSON, Some("application/xml"), 406, ROUTE_406.into()),
        ("POST", CM.into(), Some("text/plain"), None, 415,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf".into()),
        ("GET", crs.into(), None, Some("application/xml"), 406,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf".into()),
        ("PATCH", format!("{crs}/nope"), JSON, None, 415,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into()),
    ];
    for (method, path, content_type, accept, code, message) in cases {
        let mut req = http::Request::builder().method(method).uri(&path);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let reply = s.exchange(req.body(b"{}".to_vec()).unwrap()).await;
        let out = reply.json();
        let what = format!("{method} {path} {content_type:?} {accept:?}");
        assert_eq!(reply.code, code, "{what}: {out}");
        assert_eq!(out["message"], message.as_str(), "{what}");
        if message.starts_with(&code.to_string()) {
            assert_eq!(out["details"], json!({}), "{what}: {out}");
        }
    }
    // What go-restful lets through is the handler's: `*/*`, parameters.
    for accept in [
        "*/*",
        "text/plain, application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    ] {
        let req = http::Request::get(CM)
            .header("accept", accept)
            .body(Vec::new())
            .unwrap();
        assert_eq!(s.exchange(req).await.code, 200, "{accept}");
    }
}

/// What upstream keeps that the rows above refuse: an unqualified finalizer
/// on the few kinds validated with the generic `ObjectMeta` checks alone, and
/// a named revision on a dry-run create or a create by server-side apply.
#[tokio::test]
async fn what_those_refusals_leave_alone() {
    let s = harness::start().await;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "finalizers": ["custom"]}});
    let (code, out) = s
        .send_json(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            lease.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let named = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rv", "resourceVersion": "5"}});
    let (code, out) = s
        .send_json(
            "POST",
            &format!("{CM}?dryRun=All"),
            named.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    // "0" and what does not parse are dropped.
    for (name, rv) in [("zero", "0"), ("text", "abc")] {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "resourceVersion": rv}});
        let (code, out) = s.send_json("POST", CM, obj.to_string().into_bytes()).await;
        assert_eq!(code, 201, "{out}");
    }
    let req = http::Request::builder()
        .method("PATCH")
        .uri(format!("{CM}/rv?fieldManager=m"))
        .header("content-type", "application/apply-patch+yaml")
        .body(named.to_string().into_bytes())
        .unwrap();
    let reply = s.exchange(req).await;
    assert_eq!(reply.code, 201, "{}", reply.json());
    // A `null` JSON patch or strategic merge patch changes nothing.
    for content_type in [
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let req = http::Request::builder()
            .method("PATCH")
            .uri(format!("{CM}/rv"))
            .header("content-type", content_type)
            .body(b"null".to_vec())
            .unwrap();
        let reply = s.exchange(req).await;
        assert_eq!(reply.code, 200, "{content_type}: {}", reply.json());
    }
}
