//! The bytes of JSON answers, as upstream writes them: compact bodies end with
//! a newline (Go's `json.Encoder`), on every path — objects, the cached fast
//! paths for LIST and GET, `Status` errors; indented bodies (`?pretty=true`,
//! or a `curl`, `Wget` or `Mozilla/5.0` User-Agent without `pretty`) are
//! `json.MarshalIndent`'s: two spaces, no final newline; watch streams stay
//! one compact event per line; `/version` is always indented.

use serde_json::Value;

use crate::harness::{self, TestServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn get(path: &str, agent: Option<&str>) -> http::Request<Vec<u8>> {
    let mut b = http::Request::get(path).header("accept", "application/json");
    if let Some(a) = agent {
        b = b.header("user-agent", a);
    }
    b.body(Vec::new()).unwrap()
}

async fn body(s: &TestServer, path: &str, agent: Option<&str>) -> (u16, String) {
    let reply = s.exchange(get(path, agent)).await;
    (reply.code, String::from_utf8(reply.body).unwrap())
}

/// Compact JSON with exactly one final newline.
fn assert_compact(what: &str, text: &str) {
    assert!(text.ends_with("}\n"), "{what}: {text:?}");
    assert!(!text[..text.len() - 1].contains('\n'), "{what}: {text:?}");
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&v).unwrap() + "\n", text, "{what}");
}

/// Indented as `json.MarshalIndent(v, "", "  ")`: no final newline.
fn assert_indented(what: &str, text: &str) {
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string_pretty(&v).unwrap(), text, "{what}");
    assert!(text.starts_with("{\n  \""), "{what}: {text:?}");
}

async fn seeded() -> TestServer {
    let s = harness::start().await;
    let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "one"}, "data": {"k": "v"}});
    let (code, out) = s
        .send_json("POST", CMS, serde_json::to_vec(&cm).unwrap())
        .await;
    assert_eq!(code, 201, "{out}");
    s
}

#[tokio::test]
async fn compact_bodies_end_with_a_newline_on_every_path() {
    let s = seeded().await;
    let (code, one) = body(&s, &format!("{CMS}/one"), None).await;
    assert_eq!(code, 200);
    assert_compact("get", &one);
    let rv = serde_json::from_str::<Value>(&one).unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    for (what, path) in [
        ("list", CMS.to_owned()),
        ("cached list", format!("{CMS}?resourceVersion=0")),
        ("cached get", format!("{CMS}/one?resourceVersion={rv}")),
        ("not found", format!("{CMS}/none")),
        ("discovery", "/api/v1".to_owned()),
        ("group list", "/apis".to_owned()),
    ] {
        let (_, text) = body(&s, &path, None).await;
        assert_compact(what, &text);
    }
    let anonymous = s.anonymous_client().await;
    let req = get(CMS, None).map(kube::client::Body::from);
    let resp = anonymous.send(req).await.expect("transport");
    assert!(matches!(resp.status().as_u16(), 401 | 403));
    use http_body_util::BodyExt as _;
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    assert_compact("refused", std::str::from_utf8(&bytes).unwrap());
}

#[tokio::test]
async fn pretty_output_is_asked_for_by_query_or_by_user_agent() {
    let s = seeded().await;
    let one = format!("{CMS}/one");
    let (_, text) = body(&s, &format!("{one}?pretty=true"), None).await;
    assert_indented("pretty=true", &text);
    let (_, text) = body(&s, &format!("{CMS}?pretty=1"), None).await;
    assert_indented("list, pretty=1", &text);
    let (_, text) = body(&s, &format!("{CMS}?resourceVersion=0&pretty=t"), None).await;
    assert_indented("cached list, pretty=t", &text);
    for agent in [
        "curl/8.5.0",
        "Wget/1.21.4",
        "Mozilla/5.0 (X11; Linux x86_64)",
    ] {
        let (_, text) = body(&s, &one, Some(agent)).await;
        assert_indented(agent, &text);
    }
    let (code, text) = body(&s, &format!("{CMS}/none"), Some("curl/8.5.0")).await;
    assert_eq!(code, 404);
    assert_indented("an error for curl", &text);
    let (_, text) = body(&s, &format!("{one}?pretty=false"), Some("curl/8.5.0")).await;
    assert_compact("pretty=false wins over curl", &text);
    let (_, text) = body(&s, &format!("{one}?pretty=yes"), None).await;
    assert_compact("pretty=yes is not a Go boolean", &text);
    let (_, text) = body(&s, &one, Some("kubectl/v1.33.0")).await;
    assert_compact("kubectl", &text);
}

#[tokio::test]
async fn watch_events_stay_one_compact_line_each() {
    let s = seeded().await;
    let path = format!("{CMS}?watch=true&resourceVersion=0&timeoutSeconds=1");
    let (code, text) = body(&s, &path, Some("curl/8.5.0")).await;
    assert_eq!(code, 200);
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty(), "{text:?}");
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["type"], "ADDED");
    }
    assert!(text.ends_with('\n'));
}

#[tokio::test]
async fn version_is_always_indented() {
    let s = harness::start().await;
    let (code, text) = body(&s, "/version", None).await;
    assert_eq!(code, 200);
    assert_indented("/version", &text);
}

/// A GET without `resourceVersion` is answered from the watch cache once it
/// has caught up with storage: every write is seen by the next GET (no stale
/// read), in JSON and in protobuf: the JSON answer is the write's answer,
/// and the protobuf answer carries the same resourceVersion.
#[tokio::test]
async fn gets_read_their_writes_through_the_cache() {
    let s = seeded().await;
    let one = format!("{CMS}/one");
    for i in 0..40 {
        let patch = serde_json::json!({"data": {"n": i.to_string()}});
        let req = http::Request::builder()
            .method("PATCH")
            .uri(&one)
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(&patch).unwrap())
            .unwrap();
        let (code, written) = s.raw(req).await;
        assert_eq!(code, 200, "{written}");
        let (code, read) = s.get_json(&one).await;
        assert_eq!(code, 200);
        assert_eq!(read["data"]["n"], i.to_string());
        assert_eq!(read, written, "the GET reads what the write answered");
        let pb = s.get_protobuf(&one).await;
        assert_eq!(
            pb["metadata"]["resourceVersion"],
            written["metadata"]["resourceVersion"]
        );
    }
    let (code, _) = s.get_json(&format!("{CMS}/missing")).await;
    assert_eq!(code, 404);
}
