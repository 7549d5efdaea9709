//! Field selectors resource by resource, as kube-apiserver's field label
//! conversions accept and refuse them (read from 1.28.4 for every resource
//! it serves): kinds with a conversion of their own select on their fields
//! and refuse others as `field label not supported` (Jobs in words of their
//! own); every other kind selects on metadata only and refuses the rest as
//! `"x" is not a known field selector`. Core and `events.k8s.io` events share
//! their objects but not their field names, whichever group reads first.

use serde_json::{json, Value};

use crate::harness::{self, TestServer};

/// The selectable fields (beyond metadata) of the kinds with a field label
/// conversion upstream, by group and resource.
const CONVERTED: &[(&str, &str, &[&str])] = &[
    (
        "",
        "pods",
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
    ),
    (
        "",
        "events",
        &[
            "type",
            "reason",
            "source",
            "reportingComponent",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
        ],
    ),
    ("", "namespaces", &["status.phase"]),
    ("", "nodes", &["spec.unschedulable"]),
    ("", "replicationcontrollers", &["status.replicas"]),
    ("", "secrets", &["type"]),
    // 1.33 (not 1.28) selects services by these (kube-proxy watches only
    // the services it proxies).
    ("", "services", &["spec.clusterIP", "spec.type"]),
    (
        "events.k8s.io",
        "events",
        &[
            "type",
            "reason",
            "reportingController",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
        ],
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &["spec.signerName"],
    ),
    ("batch", "jobs", &["status.successful"]),
];

async fn listable(s: &TestServer) -> Vec<(String, String, String)> {
    let mut gvs = vec![("".to_owned(), "/api/v1".to_owned())];
    let (_, groups) = s.get_json("/apis").await;
    for g in groups["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap();
            gvs.push((
                g["name"].as_str().unwrap().to_owned(),
                format!("/apis/{gv}"),
            ));
        }
    }
    let mut out = Vec::new();
    for (group, base) in gvs {
        let (_, list) = s.get_json(&base).await;
        for r in list["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            let lists = r["verbs"].as_array().unwrap().iter().any(|v| v == "list");
            if !name.contains('/') && lists {
                out.push((group.clone(), base.clone(), name.to_owned()));
            }
        }
    }
    out
}

async fn select(s: &TestServer, base: &str, resource: &str, selector: &str) -> (u16, Value) {
    s.get_json(&format!(
        "{base}/{resource}?limit=1&fieldSelector={selector}"
    ))
    .await
}

#[tokio::test]
async fn every_resource_selects_and_refuses_as_upstream() {
    let s = harness::start().await;
    for (group, base, resource) in listable(&s).await {
        let converted = CONVERTED
            .iter()
            .find(|(g, r, _)| *g == group && *r == resource);
        let (code, out) = select(&s, &base, &resource, "bogus.field%3Dx").await;
        assert_eq!(code, 400, "{base}/{resource}: {out}");
        let want = match converted {
            _ if group == "batch" && resource == "jobs" => {
                "field label \"bogus.field\" not supported for Job".to_owned()
            }
            Some(_) => "field label not supported: bogus.field".to_owned(),
            None => "\"bogus.field\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".to_owned(),
        };
        assert_eq!(out["message"], want, "{base}/{resource}");
        for field in converted.map(|c| c.2).unwrap_or_default() {
            let (code, out) = select(&s, &base, &resource, &format!("{field}%3Dx")).await;
            assert_eq!(code, 200, "{base}/{resource} {field}: {out}");
        }
        let (code, out) = select(&s, &base, &resource, "metadata.name%3Dx").await;
        assert_eq!(code, 200, "{base}/{resource}: {out}");
    }
}

/// The watch cache keeps one object's selectable fields for the first
/// resource that reads it; a resource on the same objects with other field
/// names (core events after `events.k8s.io` events) must not get them.
#[tokio::test]
async fn events_select_by_their_groups_fields_whichever_group_reads_first() {
    let s = harness::start().await;
    let event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1", "labels": {"a": "b"}},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Pulled", "type": "Normal", "source": {"component": "kubelet"},
        "reportingComponent": "kubelet", "reportingInstance": "n1",
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z"});
    let (code, out) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/events",
            serde_json::to_vec(&event).unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let new_api = "/apis/events.k8s.io/v1/namespaces/default/events";
    let core = "/api/v1/namespaces/default/events";
    let names = |out: &Value| -> Vec<String> {
        out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (code, out) = s.get_json(&format!("{new_api}?labelSelector=a%3Db")).await;
    assert_eq!((code, names(&out)), (200, vec!["e1".to_owned()]), "{out}");
    for query in [
        "source%3Dkubelet",
        "involvedObject.name%3Dp",
        "reportingComponent%3Dkubelet",
    ] {
        let (code, out) = s.get_json(&format!("{core}?fieldSelector={query}")).await;
        assert_eq!(
            (code, names(&out)),
            (200, vec!["e1".to_owned()]),
            "{query}: {out}"
        );
    }
    for query in [
        "regarding.name%3Dp",
        "reportingController%3Dkubelet",
        "reason%3DPulled",
    ] {
        let (code, out) = s
            .get_json(&format!("{new_api}?fieldSelector={query}"))
            .await;
        assert_eq!(
            (code, names(&out)),
            (200, vec!["e1".to_owned()]),
            "{query}: {out}"
        );
    }
    let (_, out) = s
        .get_json(&format!("{new_api}?fieldSelector=regarding.name%3Dq"))
        .await;
    assert!(names(&out).is_empty(), "{out}");
}
