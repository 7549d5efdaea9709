//! `batch/v1` through the kube client: a Job's generated selector and labels, its
//! defaults, immutable template and selector with upstream's 422 causes, the
//! status subresource, the Table columns kubectl shows, watch; CronJob defaults,
//! schedule validation, and the `cj` short name in discovery.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job, JobStatus};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::Api;
use serde_json::{json, Value};

use crate::harness::{self, api_error, TestServer};

fn job(name: &str, restart: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": restart,
            "containers": [{"name": "pi", "image": "perl:5.34"}]}}}
    }))
    .unwrap()
}

fn cronjob(name: &str, schedule: &str) -> CronJob {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}
    }))
    .unwrap()
}

/// The `(field, message)` pairs of a 422.
fn causes(status: &kube::core::Status) -> Vec<(String, String)> {
    let details = status.details.clone().expect("details");
    details
        .causes
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect()
}

async fn table(s: &TestServer, path: &str) -> Value {
    let req = http::Request::get(path)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let (code, body) = s.raw(req).await;
    assert_eq!(code, 200, "{body}");
    body
}

#[tokio::test]
async fn job_gets_generated_selector_labels_and_defaults() {
    let s = harness::start().await;
    let api: Api<Job> = s.api("default");
    let created = api
        .create(&PostParams::default(), &job("pi", "Never"))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let spec = created.spec.clone().unwrap();
    let selector = spec.selector.unwrap().match_labels.unwrap();
    assert_eq!(
        selector.get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    let labels = spec.template.metadata.unwrap().labels.unwrap();
    for (k, v) in [
        ("controller-uid", uid.as_str()),
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("job-name", "pi"),
        ("batch.kubernetes.io/job-name", "pi"),
    ] {
        assert_eq!(labels.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert_eq!(created.metadata.labels.as_ref(), Some(&labels));
    assert_eq!(
        (spec.completions, spec.parallelism, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(
        spec.pod_replacement_policy.as_deref(),
        Some("TerminatingOrFailed")
    );
    assert_eq!(created.metadata.generation, Some(1));

    let got = api.get("pi").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert_eq!(names, vec!["pi"]);

    // generateName: the generated name is the job-name label.
    let mut generated = job("", "OnFailure");
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("batch-".into());
    let g = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = g.metadata.name.clone().unwrap();
    assert!(name.starts_with("batch-"));
    let g_labels = g.spec.unwrap().template.metadata.unwrap().labels.unwrap();
    assert_eq!(g_labels.get("job-name"), Some(&name));
}

#[tokio::test]
async fn job_validation_failures_are_422_and_store_unchanged() {
    let s = harness::start().await;
    let api: Api<Job> = s.api("default");
    let err = api_error(
        api.create(&PostParams::default(), &job("bad", "Always"))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message.starts_with("Job.batch \"bad\" is invalid"),
        "{}",
        err.message
    );
    assert_eq!(
        causes(&err),
        vec![(
            "spec.template.spec.restartPolicy".to_string(),
            "Required value: valid values: \"OnFailure\", \"Never\"".to_string(),
        )]
    );
    assert!(api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
}

#[tokio::test]
async fn job_template_and_selector_are_immutable_but_parallelism_is_not() {
    let s = harness::start().await;
    let api: Api<Job> = s.api("default");
    api.create(&PostParams::default(), &job("pi", "Never"))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let scaled = api
        .patch(
            "pi",
            &pp,
            &Patch::Merge(json!({"spec": {"parallelism": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().parallelism, Some(3));
    assert_eq!(scaled.metadata.generation, Some(2));

    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:6"}]}}}});
    let err = api_error(api.patch("pi", &pp, &Patch::Strategic(image)).await);
    assert_eq!(err.code, 422);
    let fields: Vec<String> = causes(&err).into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, vec!["spec.template"]);
    assert!(causes(&err)[0].1.ends_with("field is immutable"));

    let mut current = api.get("pi").await.unwrap();
    current
        .spec
        .as_mut()
        .unwrap()
        .selector
        .as_mut()
        .unwrap()
        .match_labels
        .as_mut()
        .unwrap()
        .insert("extra".into(), "x".into());
    let err = api_error(api.replace("pi", &PostParams::default(), &current).await);
    let fields: Vec<String> = causes(&err).into_iter().map(|(f, _)| f).collect();
    assert!(fields.contains(&"spec.selector".to_string()), "{fields:?}");
    let still = api.get("pi").await.unwrap();
    assert_eq!(
        still.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some("perl:5.34")
    );
}

#[tokio::test]
async fn job_status_and_table_columns() {
    let s = harness::start().await;
    let api: Api<Job> = s.api("default");
    api.create(&PostParams::default(), &job("pi", "Never"))
        .await
        .unwrap();
    let status = json!({"status": {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
        "completionTime": "2024-01-01T00:00:12Z",
        "conditions": [{"type": "Complete", "status": "True"}]}});
    let out = api
        .patch_status("pi", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    let st: JobStatus = out.status.unwrap();
    assert_eq!(st.succeeded, Some(1));

    let t = table(&s, "/apis/batch/v1/namespaces/default/jobs").await;
    let columns: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["priority"] == 0)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        vec!["Name", "Status", "Completions", "Duration", "Age"]
    );
    let cells = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[0..4],
        [json!("pi"), json!("Complete"), json!("1/1"), json!("12s")]
    );
}

#[tokio::test]
async fn job_watch_sees_lifecycle() {
    let s = harness::start().await;
    let api: Api<Job> = s.api("default");
    let wp = WatchParams::default().timeout(30).disable_bookmarks();
    let mut events = api.watch(&wp, "0").await.unwrap().boxed();
    api.create(&PostParams::default(), &job("w", "Never"))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::background()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("event in time")
            .expect("no error")
            .expect("open");
        seen.push(match ev {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            _ => continue,
        });
    }
    assert_eq!(seen, vec!["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn cronjob_defaults_validation_table_and_discovery() {
    let s = harness::start().await;
    let api: Api<CronJob> = s.api("default");
    let c = api
        .create(&PostParams::default(), &cronjob("nightly", "0 2 * * *"))
        .await
        .unwrap();
    let spec = c.spec.unwrap();
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Allow"));
    assert_eq!(
        (
            spec.successful_jobs_history_limit,
            spec.failed_jobs_history_limit
        ),
        (Some(3), Some(1))
    );
    assert_eq!(spec.suspend, Some(false));

    let err = api_error(
        api.create(&PostParams::default(), &cronjob("bad", "61 * * * *"))
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        causes(&err),
        vec![(
            "spec.schedule".to_string(),
            "Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61".to_string(),
        )]
    );

    let patched = api
        .patch(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().suspend, Some(true));
    let t = table(&s, "/apis/batch/v1/namespaces/default/cronjobs/nightly").await;
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names[..7],
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age"
        ]
    );
    assert_eq!(
        t["rows"][0]["cells"].as_array().unwrap()[1..6],
        [
            json!("0 2 * * *"),
            json!("<none>"),
            json!("True"),
            json!(0),
            json!("<none>")
        ]
    );

    let (code, disc) = s.get_json("/apis/batch/v1").await;
    assert_eq!(code, 200);
    let cj = disc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cronjobs")
        .unwrap();
    assert_eq!(cj["shortNames"], json!(["cj"]));
    assert_eq!(cj["categories"], json!(["all"]));
    assert!(disc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "jobs/status"));
    api.delete("nightly", &DeleteParams::default())
        .await
        .unwrap();
    assert!(api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
}
