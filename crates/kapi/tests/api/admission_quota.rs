//! ResourceQuota: usage charged at admission and refused past `status.hard`
//! with upstream's message, never exceeded under concurrent creates, not
//! charged by dry-run, compute quotas needing requests, and `status.used`
//! given back by the quota controller when objects go away.

use serde_json::{json, Value};

use crate::admission::{eventually, pod, post};
use crate::harness::{self, TestServer};

async fn quota(srv: &TestServer, ns: &str, name: &str, hard: Value) {
    let q = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}});
    let (code, body) = post(srv, &format!("/api/v1/namespaces/{ns}/resourcequotas"), q).await;
    assert_eq!(code, 201, "{body}");
    // Creates are refused until the controller has filled in the status.
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas/{name}");
    eventually("quota status", || async {
        let (_, q) = srv.get_json(&path).await;
        (q["status"]["hard"] == q["spec"]["hard"] && q["status"]["used"].is_object()).then_some(())
    })
    .await;
}

async fn used(srv: &TestServer, ns: &str, name: &str) -> Value {
    let (_, q) = srv
        .get_json(&format!("/api/v1/namespaces/{ns}/resourcequotas/{name}"))
        .await;
    q["status"]["used"].clone()
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[tokio::test]
async fn quota_counts_refuses_and_gives_back() {
    let srv = harness::start().await;
    let ns = srv.namespace("q1").await;
    quota(&srv, &ns, "q", json!({"pods": "2", "count/secrets": "1"})).await;
    assert_eq!(
        used(&srv, &ns, "q").await,
        json!({"pods": "0", "count/secrets": "0"})
    );
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    for name in ["a", "b"] {
        let (code, body) = post(&srv, &pods, pod(name)).await;
        assert_eq!(code, 201, "{body}");
    }
    assert_eq!(used(&srv, &ns, "q").await["pods"], "2");
    // Dry-run is checked like a real create...
    let (code, body) = post(&srv, &format!("{pods}?dryRun=All"), pod("c")).await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = post(&srv, &pods, pod("c")).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "pods \"c\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
    // Deleting gives usage back (the controller recounts).
    let (code, _) = srv
        .send_json(
            "DELETE",
            &format!("{pods}/a?gracePeriodSeconds=0"),
            Vec::new(),
        )
        .await;
    assert_eq!(code, 200);
    eventually("pods usage given back", || async {
        (used(&srv, &ns, "q").await["pods"] == "1").then_some(())
    })
    .await;
    // ...but charges nothing.
    let (code, body) = post(&srv, &format!("{pods}?dryRun=All"), pod("c")).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(used(&srv, &ns, "q").await["pods"], "1");
    let (code, body) = post(&srv, &pods, pod("c")).await;
    assert_eq!(code, 201, "{body}");

    // Object counts of any resource.
    let secret = |n: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n}});
    let secrets = format!("/api/v1/namespaces/{ns}/secrets");
    assert_eq!(post(&srv, &secrets, secret("s1")).await.0, 201);
    let (code, body) = post(&srv, &secrets, secret("s2")).await;
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().ends_with(
        "exceeded quota: q, requested: count/secrets=1, used: count/secrets=1, limited: count/secrets=1"
    ), "{body}");
    // Deleting a secret gives its count back (the controller sees deletions
    // of resources other than pods without decoding their objects).
    let (code, _) = srv
        .send_json("DELETE", &format!("{secrets}/s1"), Vec::new())
        .await;
    assert_eq!(code, 200);
    eventually("secret count given back", || async {
        (used(&srv, &ns, "q").await["count/secrets"] == "0").then_some(())
    })
    .await;
    assert_eq!(post(&srv, &secrets, secret("s2")).await.0, 201);
}

#[tokio::test]
async fn quota_is_never_exceeded_under_concurrent_creates() {
    let srv = harness::start().await;
    let ns = srv.namespace("q2").await;
    quota(&srv, &ns, "cm", json!({"configmaps": "5"})).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut tasks = Vec::new();
    for i in 0..24 {
        let (client, path) = (srv.client.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let body = serde_json::to_vec(&configmap(&format!("cm-{i}"))).unwrap();
            let req = http::Request::post(path)
                .header("content-type", "application/json")
                .body(kube::client::Body::from(body))
                .unwrap();
            client.send(req).await.expect("transport").status().as_u16()
        }));
    }
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap());
    }
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 5, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 403).count(), 19, "{codes:?}");
    assert_eq!(srv.configmap_names(&ns).await.len(), 5);
    assert_eq!(used(&srv, &ns, "cm").await["configmaps"], "5");
}

#[tokio::test]
async fn compute_quota_needs_requests_and_sums_them() {
    let srv = harness::start().await;
    let ns = srv.namespace("q3").await;
    quota(
        &srv,
        &ns,
        "compute",
        json!({"requests.cpu": "1", "limits.memory": "1Gi"}),
    )
    .await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let (code, body) = post(&srv, &pods, pod("bare")).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"
    );
    let sized = |name: &str| {
        let mut p = pod(name);
        p["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}});
        p
    };
    let (code, body) = post(&srv, &pods, sized("one")).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        used(&srv, &ns, "compute").await,
        json!({"requests.cpu": "600m", "limits.memory": "512Mi"})
    );
    let (code, body) = post(&srv, &pods, sized("two")).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"two\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
}
