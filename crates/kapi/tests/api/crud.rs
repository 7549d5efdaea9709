//! Create, get, list, replace and delete through typed `kube::Api`s; object
//! metadata set by the server; optimistic concurrency; namespace checks.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::Api;

use crate::harness::{self, api_error, configmap, rv};

#[tokio::test]
async fn configmap_create_get_list_replace_delete() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let created = api
        .create(&PostParams::default(), &configmap("one", &[("app", "a")]))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.name.as_deref(), Some("one"));
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(
        meta.uid.as_deref().is_some_and(|u| u.len() == 36),
        "{meta:?}"
    );
    assert!(meta.creation_timestamp.is_some());
    let rv1 = rv(meta);

    let got = api.get("one").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(rv(&got.metadata), rv1);
    assert_eq!(got.data.as_ref().unwrap()["k"], "v");

    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(
        list.metadata
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= rv1
    );

    let mut changed = got.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("k".into(), "w".into());
    let replaced = api
        .replace("one", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert!(rv(&replaced.metadata) > rv1);
    assert_eq!(replaced.metadata.uid, created.metadata.uid);
    assert_eq!(
        replaced.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );
    assert_eq!(replaced.data.unwrap()["k"], "w");

    api.delete("one", &DeleteParams::default()).await.unwrap();
    let err = api_error(api.get("one").await);
    assert_eq!(err.code, 404);
    assert!(s.configmap_names("default").await.is_empty());
}

#[tokio::test]
async fn resource_versions_increase_across_writes() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut last = 0;
    for i in 0..5 {
        let c = api
            .create(&PostParams::default(), &configmap(&format!("c{i}"), &[]))
            .await
            .unwrap();
        let now = rv(&c.metadata);
        assert!(now > last, "{now} after {last}");
        last = now;
    }
}

#[tokio::test]
async fn generate_name_produces_prefixed_name() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut cm = configmap("", &[]);
    cm.metadata = ObjectMeta {
        generate_name: Some("gen-".into()),
        ..Default::default()
    };
    let a = api.create(&PostParams::default(), &cm).await.unwrap();
    let b = api.create(&PostParams::default(), &cm).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("gen-") && a.len() == "gen-".len() + 5, "{a}");
    assert!(b.starts_with("gen-"), "{b}");
    assert_ne!(a, b);
}

#[tokio::test]
async fn create_in_missing_namespace_is_not_found() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("x");
    let err = api_error(
        api.create(&PostParams::default(), &configmap("a", &[]))
            .await,
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, r#"namespaces "x" not found"#);
}

#[tokio::test]
async fn create_in_terminating_namespace_is_forbidden() {
    let s = harness::start().await;
    let ns = s.namespace("doomed").await;
    let api: Api<ConfigMap> = s.api(&ns);
    // A finalizer on content keeps the namespace terminating.
    let mut cm = configmap("held", &[]);
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();
    let nss: Api<Namespace> = s.cluster();
    nss.delete(&ns, &DeleteParams::default()).await.unwrap();
    let err = api_error(
        api.create(&PostParams::default(), &configmap("b", &[]))
            .await,
    );
    assert_eq!(err.code, 403, "{err:?}");
    assert_eq!(err.reason, "Forbidden");
    assert!(
        err.message.contains("because it is being terminated"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn replace_with_stale_resource_version_conflicts() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let first = api
        .create(&PostParams::default(), &configmap("occ", &[]))
        .await
        .unwrap();
    let mut second = first.clone();
    second.data.as_mut().unwrap().insert("k".into(), "2".into());
    api.replace("occ", &PostParams::default(), &second)
        .await
        .unwrap();

    let mut stale = first.clone();
    stale.data.as_mut().unwrap().insert("k".into(), "3".into());
    let err = api_error(api.replace("occ", &PostParams::default(), &stale).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(api.get("occ").await.unwrap().data.unwrap()["k"], "2");

    let mut unconditional = first;
    unconditional.metadata.resource_version = None;
    unconditional
        .data
        .as_mut()
        .unwrap()
        .insert("k".into(), "4".into());
    let out = api
        .replace("occ", &PostParams::default(), &unconditional)
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "4");
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = api.create(&dry, &configmap("dry", &[])).await.unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("dry"));
    assert!(s.configmap_names("default").await.is_empty());

    let real = api
        .create(&PostParams::default(), &configmap("real", &[]))
        .await
        .unwrap();
    let mut changed = real.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("k".into(), "dry".into());
    let out = api.replace("real", &dry, &changed).await.unwrap();
    assert_eq!(out.data.unwrap()["k"], "dry");
    let stored = api.get("real").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "v");
    assert_eq!(
        stored.metadata.resource_version,
        real.metadata.resource_version
    );

    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    api.delete("real", &dp).await.unwrap();
    assert_eq!(s.configmap_names("default").await, vec!["real"]);
}

/// A create answers with the object as a GET then reads it, in every form a
/// client may ask for: plain JSON (written from the stored object's JSON, as
/// the watch cache keeps it), YAML, protobuf and with unknown-to-JSON text
/// (HTML-significant characters, non-ASCII, escapes).
#[tokio::test]
async fn create_answers_what_a_get_reads() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    let accepts = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ];
    for (i, accept) in accepts.into_iter().enumerate() {
        let name = format!("answer-{i}");
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"a": "b"}},
            "data": {"html": "<a href=\"x\">&amp;</a>", "text": "é ✓ \u{2028} \\ \t"},
        });
        let req = http::Request::post(base)
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let reply = s.exchange(req).await;
        assert_eq!(
            reply.code,
            201,
            "{accept}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let created: serde_json::Value = match accept {
            "application/yaml" => serde_saphyr::from_slice(&reply.body).unwrap(),
            "application/vnd.kubernetes.protobuf" => {
                kapi_protobuf::decode_object(&reply.body, None).unwrap()
            }
            _ => reply.json(),
        };
        let (code, got) = s.get_json(&format!("{base}/{name}")).await;
        assert_eq!(code, 200);
        if accept.contains("PartialObjectMetadata") {
            assert_eq!(created["kind"], "PartialObjectMetadata", "{created}");
            assert_eq!(created["metadata"], got["metadata"]);
            continue;
        }
        assert_eq!(created, got, "{accept}");
        assert_eq!(got["data"], body["data"]);
        assert!(reply.body.ends_with(b"\n") || accept.contains("protobuf"));
    }
}

/// Fields the schema does not know are dropped from what is stored, under
/// every validation mode that lets the write through (as upstream decodes
/// into its types), on create and on update.
#[tokio::test]
async fn unknown_fields_are_never_stored() {
    let s = harness::start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    for (i, mode) in ["", "?fieldValidation=Warn", "?fieldValidation=Ignore"]
        .into_iter()
        .enumerate()
    {
        let name = format!("pruned-{i}");
        let body = |rv: Option<&str>| {
            let mut o = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap", "bogus": 1,
                "metadata": {"name": name, "bogusMeta": {"x": 1}},
                "data": {"k": "v"},
            });
            if let Some(rv) = rv {
                o["metadata"]["resourceVersion"] = rv.into();
            }
            serde_json::to_vec(&o).unwrap()
        };
        let (code, created) = s
            .send_json("POST", &format!("{base}{mode}"), body(None))
            .await;
        assert_eq!(code, 201, "{mode}: {created}");
        let rv = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("{base}/{name}");
        let (code, updated) = s
            .send_json("PUT", &format!("{path}{mode}"), body(Some(&rv)))
            .await;
        assert_eq!(code, 200, "{mode}: {updated}");
        let (_, got) = s.get_json(&path).await;
        for obj in [&created, &updated, &got] {
            assert!(obj.get("bogus").is_none(), "{mode}: {obj}");
            assert!(obj["metadata"].get("bogusMeta").is_none(), "{mode}: {obj}");
            assert_eq!(obj["data"]["k"], "v");
        }
    }
}

/// A YAML answer lists every mapping's keys in the order upstream's YAML
/// encoder writes them (sorted, digit runs as numbers), whatever the
/// object's field order: a GET and a list alike.
#[tokio::test]
async fn yaml_answers_list_keys_in_go_yaml_order() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut cm = configmap("y", &[("app", "x")]);
    cm.data = Some(
        [("key10", "a"), ("key9", "b"), ("Key", "c")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
    );
    api.create(&PostParams::default(), &cm).await.unwrap();
    let yaml = |path: &'static str| {
        let s = &s;
        async move {
            let req = http::Request::get(path)
                .header("accept", "application/yaml")
                .body(Vec::new())
                .unwrap();
            let (code, text) = s.raw_text(req).await;
            assert_eq!(code, 200, "{text}");
            text
        }
    };
    let one = yaml("/api/v1/namespaces/default/configmaps/y").await;
    let top: Vec<&str> = one
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_once(':').map(|(k, _)| k))
        .collect();
    assert_eq!(top, ["apiVersion", "data", "kind", "metadata"], "{one}");
    assert!(
        one.starts_with("apiVersion: v1\ndata:\n  Key: c\n  key9: b\n  key10: a\nkind: ConfigMap\nmetadata:\n  creationTimestamp:"),
        "{one}"
    );
    let list = yaml("/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dy").await;
    assert!(
        list.starts_with(
            "apiVersion: v1\nitems:\n- data:\n    Key: c\n    key9: b\n    key10: a\n  metadata:\n"
        ),
        "{list}"
    );
    assert!(
        list.contains("\nkind: ConfigMapList\nmetadata:\n  resourceVersion:"),
        "{list}"
    );
}
