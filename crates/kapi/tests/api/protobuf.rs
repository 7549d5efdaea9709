//! The Kubernetes protobuf wire format over HTTP: raw requests with
//! `application/vnd.kubernetes.protobuf` bodies and `Accept` headers, as Go
//! clients send them — create, get, list, watch frames, patch responses,
//! subresource bodies (Scale, DeleteOptions, TokenRequest, Eviction, access
//! reviews), error `Status` — and malformed bodies or unknown field numbers,
//! which must get a 4xx with nothing stored.

use http_body_util::BodyExt as _;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

const PB: &str = "application/vnd.kubernetes.protobuf";

struct Reply {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Reply {
    fn object(&self) -> Value {
        assert_eq!(self.content_type, PB, "code {}", self.code);
        kapi_protobuf::decode_object(&self.body, None).expect("protobuf response")
    }
}

async fn send(s: &TestServer, method: &str, path: &str, ct: &str, body: Vec<u8>) -> Reply {
    send_accept(
        s,
        method,
        path,
        ct,
        body,
        &format!("{PB}, application/json"),
    )
    .await
}

async fn send_accept(
    s: &TestServer,
    method: &str,
    path: &str,
    ct: &str,
    body: Vec<u8>,
    accept: &str,
) -> Reply {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ct)
        .header("accept", accept)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        code,
        content_type,
        body,
    }
}

fn pb(obj: Value) -> Vec<u8> {
    kapi_protobuf::encode_object(&obj).unwrap()
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"app": "pb"}},
           "data": {"a": "1", "b": "two"}})
}

#[tokio::test]
async fn create_get_list_patch_in_protobuf() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    let created = send(&s, "POST", base, PB, pb(configmap("pb1"))).await;
    assert_eq!(created.code, 201);
    let obj = created.object();
    assert_eq!(obj["data"], json!({"a": "1", "b": "two"}));
    assert!(obj["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));
    assert!(obj["metadata"]["creationTimestamp"].is_string());

    // The same object in JSON, as a JSON client sees it.
    let (code, as_json) = s.get_json(&format!("{base}/pb1")).await;
    assert_eq!(code, 200);
    let got = send(&s, "GET", &format!("{base}/pb1"), PB, Vec::new()).await;
    assert_eq!(got.code, 200);
    assert_eq!(got.object(), as_json);

    let list = send(&s, "GET", base, PB, Vec::new()).await;
    assert_eq!(list.code, 200);
    let list = list.object();
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(list["metadata"]["resourceVersion"].is_string());
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pb1"]);

    let patched = send(
        &s,
        "PATCH",
        &format!("{base}/pb1"),
        "application/merge-patch+json",
        br#"{"data":{"b":null,"c":"3"}}"#.to_vec(),
    )
    .await;
    assert_eq!(patched.code, 200);
    assert_eq!(patched.object()["data"], json!({"a": "1", "c": "3"}));

    // Update with a protobuf body.
    let mut next = as_json.clone();
    next["data"] = json!({"z": "26"});
    let updated = send(&s, "PUT", &format!("{base}/pb1"), PB, pb(next)).await;
    assert_eq!(updated.code, 409, "stale resourceVersion after the patch");
    let status = updated.object();
    assert_eq!(
        (status["kind"].as_str(), status["reason"].as_str()),
        (Some("Status"), Some("Conflict"))
    );
}

#[tokio::test]
async fn errors_are_protobuf_status() {
    let s = harness::start().await;
    let missing = send(
        &s,
        "GET",
        "/api/v1/namespaces/default/configmaps/nope",
        PB,
        Vec::new(),
    )
    .await;
    assert_eq!(missing.code, 404);
    let status = missing.object();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["code"], 404);
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["details"]["name"], "nope");
}

#[tokio::test]
async fn watch_streams_length_prefixed_frames() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    let list = send(&s, "GET", base, PB, Vec::new()).await.object();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        send(&s, "POST", base, PB, pb(configmap("w1"))).await.code,
        201
    );
    assert_eq!(
        send(&s, "DELETE", &format!("{base}/w1"), PB, Vec::new())
            .await
            .code,
        200
    );
    let watch = send(
        &s,
        "GET",
        &format!("{base}?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
        PB,
        Vec::new(),
    )
    .await;
    assert_eq!(watch.code, 200);
    assert_eq!(
        watch.content_type,
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut rest = watch.body.as_slice();
    let mut events = Vec::new();
    while let Some(((ty, obj), more)) = kapi_protobuf::decode_watch_frame(rest).unwrap() {
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("a {ty} event without a name: {obj}"));
        events.push((ty, name.to_owned()));
        rest = more;
    }
    assert!(rest.is_empty(), "a partial frame was left");
    assert_eq!(
        events,
        [
            ("ADDED".into(), "w1".into()),
            ("DELETED".into(), "w1".to_string())
        ]
    );
}

#[tokio::test]
async fn subresource_and_options_bodies_in_protobuf() {
    let s = harness::start().await;
    let base = "/apis/apps/v1/namespaces/default/deployments";
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d1"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d1"}},
                 "template": {"metadata": {"labels": {"app": "d1"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let created = send(&s, "POST", base, PB, pb(deploy)).await;
    assert_eq!(
        created.code,
        201,
        "{:?}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(
        created.object()["spec"]["replicas"],
        0,
        "an explicit zero survives"
    );

    let scale = send(&s, "GET", &format!("{base}/d1/scale"), PB, Vec::new())
        .await
        .object();
    assert_eq!(scale["kind"], "Scale");
    let mut scale = scale;
    scale["spec"]["replicas"] = json!(3);
    let put = send(&s, "PUT", &format!("{base}/d1/scale"), PB, pb(scale)).await;
    assert_eq!(put.code, 200);
    assert_eq!(put.object()["spec"]["replicas"], 3);

    let opts = json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                      "preconditions": {"uid": "not-the-uid"}});
    let del = send(&s, "DELETE", &format!("{base}/d1"), PB, pb(opts)).await;
    assert_eq!(
        del.code, 409,
        "the precondition in the protobuf body applies"
    );
}

#[tokio::test]
async fn malformed_bodies_are_rejected_and_nothing_is_stored() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    let good = pb(configmap("bad"));
    let truncated = good[..good.len() - 3].to_vec();
    let mut wrong_magic = good.clone();
    wrong_magic[..4].copy_from_slice(b"k9s\0");
    let secret = pb(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}}));
    let mut oversized = good.clone();
    oversized.resize(4 * 1024 * 1024, 0);
    for (what, body, code) in [
        ("truncated", truncated, 400),
        ("wrong magic", wrong_magic, 400),
        ("wrong kind", secret, 400),
        ("garbage", b"k8s\0\xff\xff\xff".to_vec(), 400),
        ("oversized", oversized, 413),
    ] {
        let r = send(&s, "POST", base, PB, body).await;
        assert_eq!(r.code, code, "{what}");
        if code == 400 {
            assert_eq!(r.object()["reason"], "BadRequest", "{what}");
        }
    }
    assert!(s.configmap_names("default").await.is_empty());
}

/// A protobuf field: key, then for length-delimited values the length.
fn pb_field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    let mut varint = |mut v: u64| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    varint(u64::from(tag) << 3 | 2);
    varint(bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[tokio::test]
async fn unknown_field_numbers_are_a_bad_request() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    // A ConfigMap message with field 99 (unknown to v1.ConfigMap), enveloped.
    let mut raw = kapi_protobuf::encode_message("v1", "ConfigMap", &configmap("extra")).unwrap();
    pb_field(&mut raw, 99, b"from a newer client");
    let mut type_meta = Vec::new();
    pb_field(&mut type_meta, 1, b"v1");
    pb_field(&mut type_meta, 2, b"ConfigMap");
    let mut body = b"k8s\0".to_vec();
    pb_field(&mut body, 1, &type_meta);
    pb_field(&mut body, 2, &raw);
    let created = send(&s, "POST", base, PB, body).await;
    assert_eq!(
        created.code,
        400,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert!(s.configmap_names("default").await.is_empty());
}

#[tokio::test]
async fn json_only_clients_and_tables_are_unaffected() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    assert_eq!(
        send(&s, "POST", base, PB, pb(configmap("t1"))).await.code,
        201
    );
    let req = http::Request::get(base)
        .header(
            "accept",
            format!(
                "{PB};as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io"
            ),
        )
        .body(Vec::new())
        .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200);
    assert_eq!(
        table["kind"], "Table",
        "Table has no protobuf form: JSON is chosen"
    );
    let accept = format!("{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
    let meta = send_accept(&s, "GET", base, PB, Vec::new(), &accept).await;
    let meta = meta.object();
    assert_eq!(meta["kind"], "PartialObjectMetadataList");
    assert_eq!(meta["items"][0]["metadata"]["name"], "t1");
    assert!(meta["items"][0].get("data").is_none());
}

#[tokio::test]
async fn discovery_documents_in_protobuf_when_asked() {
    let s = harness::start().await;
    for (path, kind) in [
        ("/api", "APIVersions"),
        ("/apis", "APIGroupList"),
        ("/apis/apps", "APIGroup"),
        ("/api/v1", "APIResourceList"),
        ("/apis/apps/v1", "APIResourceList"),
    ] {
        let r = send_accept(&s, "GET", path, PB, Vec::new(), PB).await;
        assert_eq!(r.code, 200, "{path}");
        assert_eq!(r.object()["kind"], kind, "{path}");
        let json = send_accept(&s, "GET", path, PB, Vec::new(), "application/json").await;
        assert_eq!(json.content_type, "application/json", "{path}");
    }
    let list = send_accept(&s, "GET", "/api/v1", PB, Vec::new(), PB)
        .await
        .object();
    let names: Vec<_> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"configmaps"), "{names:?}");
    // Aggregated discovery, as upstream's handler serves it in any codec.
    let agg = format!("{PB};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    let r = send_accept(&s, "GET", "/apis", PB, Vec::new(), &agg).await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.content_type, agg);
    let doc = kapi_protobuf::decode_object(&r.body, None).unwrap();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let groups: Vec<_> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["metadata"]["name"].as_str())
        .collect();
    assert!(groups.contains(&"apps"), "{groups:?}");
}

#[tokio::test]
async fn token_review_and_eviction_bodies_in_protobuf() {
    let s = harness::start().await;
    let ns = "/api/v1/namespaces/default";
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    assert_eq!(
        send(&s, "POST", &format!("{ns}/serviceaccounts"), PB, pb(sa))
            .await
            .code,
        201
    );

    // TokenRequest, as `kubectl create token` 1.33 sends it.
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"audiences": ["https://kapi.test"], "expirationSeconds": 3600}});
    let path = format!("{ns}/serviceaccounts/robot/token");
    let token = send(&s, "POST", &path, PB, pb(tr)).await;
    assert_eq!(token.code, 201, "{}", String::from_utf8_lossy(&token.body));
    let token = token.object();
    assert_eq!(token["kind"], "TokenRequest");
    assert_eq!(token["spec"]["audiences"], json!(["https://kapi.test"]));
    assert!(token["status"]["token"]
        .as_str()
        .is_some_and(|t| t.len() > 20));

    // SelfSubjectAccessReview, as `kubectl auth can-i` 1.33 sends it.
    let review = json!({"apiVersion": "authorization.k8s.io/v1",
                        "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods",
                                                        "namespace": "default"}}});
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let answer = send(&s, "POST", path, PB, pb(review)).await;
    assert_eq!(answer.code, 201);
    let answer = answer.object();
    assert_eq!(answer["kind"], "SelfSubjectAccessReview");
    assert_eq!(answer["status"]["allowed"], true);

    // A SubjectAccessReview for somebody else, answered from RBAC: no grant.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                        "spec": {"user": "nobody",
                                 "resourceAttributes": {"verb": "delete", "resource": "secrets",
                                                        "namespace": "default"}}});
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let answer = send(&s, "POST", path, PB, pb(review)).await;
    assert_eq!(answer.code, 201);
    assert_ne!(answer.object()["status"]["allowed"], true);

    // An Eviction of a pod: the pod goes.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
                     "spec": {"serviceAccountName": "robot",
                              "containers": [{"name": "c", "image": "nginx"}]}});
    let created = send(&s, "POST", &format!("{ns}/pods"), PB, pb(pod)).await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "p1", "namespace": "default"}});
    let path = format!("{ns}/pods/p1/eviction");
    let evicted = send(&s, "POST", &path, PB, pb(eviction)).await;
    assert_eq!(
        evicted.code,
        201,
        "{}",
        String::from_utf8_lossy(&evicted.body)
    );
    assert_eq!(evicted.object()["kind"], "Status");
    let gone = send(&s, "GET", &format!("{ns}/pods/p1"), PB, Vec::new()).await;
    assert_eq!(gone.code, 404);
    assert_eq!(gone.object()["reason"], "NotFound");
}
