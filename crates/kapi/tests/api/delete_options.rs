//! Where a delete's options come from, as kube-apiserver decodes them
//! (checked against 1.28.4): the body when there is one — then the query is
//! not read at all, not even `dryRun` — else the query.

use serde_json::json;

use crate::harness::{self, TestServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn create(ts: &TestServer, name: &str) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let (code, out) = ts.send_json("POST", CMS, cm.to_string().into_bytes()).await;
    assert_eq!(code, 201, "{out}");
}

async fn exists(ts: &TestServer, name: &str) -> bool {
    let (code, _) = ts
        .send_json("GET", &format!("{CMS}/{name}"), Vec::new())
        .await;
    code == 200
}

#[tokio::test]
async fn a_body_is_the_options_and_the_query_is_not_read() {
    let ts = harness::start().await;

    // No body: the query's dry run holds.
    create(&ts, "a").await;
    let (code, out) = ts
        .send_json("DELETE", &format!("{CMS}/a?dryRun=All"), Vec::new())
        .await;
    assert_eq!(code, 200, "{out}");
    assert!(exists(&ts, "a").await);

    // A body, even an empty object: the query's dry run is not read.
    let (code, out) = ts
        .send_json("DELETE", &format!("{CMS}/a?dryRun=All"), b"{}".to_vec())
        .await;
    assert_eq!(code, 200, "{out}");
    assert!(!exists(&ts, "a").await);

    // Nor is a query value that would be refused without a body.
    create(&ts, "b").await;
    let (code, out) = ts
        .send_json(
            "DELETE",
            &format!("{CMS}/b?gracePeriodSeconds=abc&propagationPolicy=Bad"),
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(code, 200, "{out}");
    assert!(!exists(&ts, "b").await);
    create(&ts, "c").await;
    let (code, out) = ts
        .send_json(
            "DELETE",
            &format!("{CMS}/c?gracePeriodSeconds=abc"),
            Vec::new(),
        )
        .await;
    assert_eq!(code, 400, "{out}");
    assert!(exists(&ts, "c").await);

    // The body's own dry run holds.
    let body = json!({"dryRun": ["All"]}).to_string().into_bytes();
    let (code, out) = ts.send_json("DELETE", &format!("{CMS}/c"), body).await;
    assert_eq!(code, 200, "{out}");
    assert!(exists(&ts, "c").await);
}
