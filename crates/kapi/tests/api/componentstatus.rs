//! `kubectl get componentstatuses`: computed on each read by probing the
//! components, deprecated with upstream's warning, read-only.

use serde_json::json;

use crate::harness;

#[tokio::test]
async fn componentstatuses_probe_the_control_plane() {
    let s = harness::start().await;
    let (code, list) = s.get_json("/api/v1/componentstatuses").await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ComponentStatusList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["controller-manager", "embedded-store", "scheduler"]);
    let store = &list["items"][1]["conditions"][0];
    assert_eq!(
        store,
        &json!({"type": "Healthy", "status": "True", "message": "ok"})
    );
    // Go's HTTP prober: a probe that fails (nothing listens in the tests, or
    // a bad status) is False with the reason as message and no error.
    for item in [&list["items"][0], &list["items"][2]] {
        let condition = &item["conditions"][0];
        assert!(condition.get("error").is_none(), "{item}");
        if condition["status"] == "False" {
            let message = condition["message"].as_str().unwrap();
            assert!(
                message.starts_with("Get \"https://127.0.0.1:102")
                    || message.starts_with("HTTP probe failed with statuscode: "),
                "{item}"
            );
        } else {
            assert_eq!(condition["status"], "True", "{item}");
        }
    }

    let req = http::Request::builder()
        .uri("/api/v1/componentstatuses/embedded-store")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200);
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Status", "Message", "Error"]);
    assert_eq!(
        table["rows"][0]["cells"],
        json!(["embedded-store", "Healthy", "ok", ""])
    );

    let (code, missing) = s.get_json("/api/v1/componentstatuses/nope").await;
    assert_eq!((code, missing["reason"].as_str()), (404, Some("NotFound")));
    let (code, _) = s
        .send_json("POST", "/api/v1/componentstatuses", b"{}".to_vec())
        .await;
    assert_eq!(code, 405);
}
