//! Tests of the OpenAPI documents: index, kinds, references, parameters, hashes.

use std::collections::BTreeSet;
use std::sync::Arc;

use kapi_registry::{DefaultStrategy, ResourceDef, Subresource, Verb};
use serde_json::{json, Value};

use super::*;

fn res(group: &str, version: &str, resource: &str, kind: &str, namespaced: bool) -> ResourceDef {
    ResourceDef {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced,
        verbs: Verb::ALL.to_vec(),
        subresources: Vec::new(),
        short_names: Vec::new(),
        categories: Vec::new(),
        strategy: Arc::new(DefaultStrategy),
        key_prefix: format!("/{resource}"),
        conversion: None,
        protobuf: true,
        origin: kapi_registry::Origin::Builtin,
    }
}

fn scale() -> Subresource {
    Subresource::Scale {
        spec_replicas: "/spec/replicas".into(),
        status_replicas: "/status/replicas".into(),
        label_selector: "/status/selector".into(),
    }
}

pub(crate) fn served() -> Vec<ResourceDef> {
    let mut out = vec![
        res("", "v1", "namespaces", "Namespace", false),
        res("", "v1", "configmaps", "ConfigMap", true),
        res("", "v1", "secrets", "Secret", true),
        res("", "v1", "pods", "Pod", true),
        res("", "v1", "services", "Service", true),
        res("", "v1", "endpoints", "Endpoints", true),
        res("", "v1", "events", "Event", true),
        res("", "v1", "serviceaccounts", "ServiceAccount", true),
        res("", "v1", "nodes", "Node", false),
        res("apps", "v1", "deployments", "Deployment", true),
        res("apps", "v1", "replicasets", "ReplicaSet", true),
        res("apps", "v1", "statefulsets", "StatefulSet", true),
        res("apps", "v1", "daemonsets", "DaemonSet", true),
        res("example.com", "v1alpha1", "widgets", "Widget", true),
    ];
    for r in &mut out {
        if ["pods", "services", "namespaces", "nodes", "daemonsets"].contains(&r.resource.as_str())
        {
            r.subresources.push(Subresource::Status);
        }
        if ["deployments", "replicasets", "statefulsets"].contains(&r.resource.as_str()) {
            r.subresources.extend([Subresource::Status, scale()]);
        }
    }
    out
}

fn doc(api: &OpenApi, key: &str) -> Value {
    let (bytes, _) = api
        .v3_document(key)
        .unwrap_or_else(|| panic!("no document {key}"));
    serde_json::from_slice(&bytes).unwrap()
}

fn v2(api: &OpenApi) -> Value {
    serde_json::from_slice(&api.v2_json().0).unwrap()
}

#[test]
fn v3_index_lists_every_group_version_and_discovery_document() {
    let api = OpenApi::build(&served());
    let index = api.v3_index();
    let keys: BTreeSet<&str> = index["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let want = [
        "api",
        "api/v1",
        "apis",
        "apis/apps",
        "apis/apps/v1",
        "apis/example.com",
        "apis/example.com/v1alpha1",
    ];
    assert_eq!(keys, want.into_iter().collect());
    for key in want {
        let (bytes, hash) = api.v3_document(key).unwrap();
        assert_eq!(hash, super::hash(&bytes));
        assert_eq!(hash.len(), 128);
        assert!(hash
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        let url = index["paths"][key]["serverRelativeURL"].as_str().unwrap();
        assert_eq!(url, format!("/openapi/v3/{key}?hash={hash}"));
        assert_eq!(doc(&api, key)["openapi"], "3.0.0");
    }
    assert!(api.v3_document("apis/batch/v1").is_none());
    assert!(api.v3_document("/api/v1").is_some());
}

#[test]
fn pod_schema_has_gvk_and_container_patch_facts() {
    let api = OpenApi::build(&served());
    for (schemas, spec_ref) in [
        (
            doc(&api, "api/v1")["components"]["schemas"].clone(),
            "#/components/schemas/io.k8s.api.core.v1.PodSpec",
        ),
        (
            v2(&api)["definitions"].clone(),
            "#/definitions/io.k8s.api.core.v1.PodSpec",
        ),
    ] {
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            serde_json::json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        let spec = &pod["properties"]["spec"];
        let target = spec["$ref"]
            .as_str()
            .or_else(|| spec["allOf"][0]["$ref"].as_str());
        assert_eq!(target, Some(spec_ref));
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        let ports = &schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"];
        assert_eq!(
            ports["x-kubernetes-list-map-keys"],
            serde_json::json!(["containerPort", "protocol"])
        );
        assert!(
            schemas["io.k8s.api.core.v1.PodList"]["x-kubernetes-group-version-kind"].is_array()
        );
    }
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(m) => m.iter().for_each(|(k, v)| match (k.as_str(), v) {
            ("$ref", Value::String(r)) => out.push(r.clone()),
            _ => refs(v, out),
        }),
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

fn all_docs(api: &OpenApi) -> Vec<(String, Value, &'static str, &'static [&'static str])> {
    let mut docs = vec![(
        "v2".to_string(),
        v2(api),
        "#/definitions/",
        &["definitions"][..],
    )];
    for key in api.v3_keys() {
        docs.push((
            key.to_string(),
            doc(api, key),
            "#/components/schemas/",
            &["components", "schemas"][..],
        ));
    }
    docs
}

#[test]
fn every_ref_resolves_in_every_document() {
    let api = OpenApi::build(&served());
    for (key, d, prefix, at) in all_docs(&api) {
        let schemas = at.iter().fold(&d, |v, k| &v[*k]);
        let mut found = Vec::new();
        refs(&d, &mut found);
        assert!(!found.is_empty(), "{key}");
        for r in found {
            let name = r
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("{key}: bad ref {r}"));
            assert!(schemas.get(name).is_some(), "{key}: unresolved {r}");
        }
    }
}

#[test]
fn write_operations_declare_field_validation() {
    let api = OpenApi::build(&served());
    let mut patches = 0;
    for (key, d, _, _) in all_docs(&api) {
        for (path, item) in d["paths"].as_object().unwrap() {
            for method in ["post", "put", "patch"] {
                let Some(op) = item.get(method) else { continue };
                let names: Vec<&str> = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                for want in ["dryRun", "fieldManager", "fieldValidation"] {
                    assert!(names.contains(&want), "{key} {method} {path} lacks {want}");
                }
                assert!(
                    op["x-kubernetes-group-version-kind"].is_object(),
                    "{key} {path}"
                );
                patches += usize::from(method == "patch");
            }
        }
    }
    assert!(patches > 20);
    let d = doc(&api, "apis/apps/v1");
    let scale =
        &d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"];
    assert_eq!(scale["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    let content = scale["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/strategic-merge-patch+json"));
    assert!(content.contains_key("application/apply-patch+yaml"));
}

#[test]
fn operations_are_named_like_upstream() {
    let api = OpenApi::build(&served());
    let d = v2(&api);
    let p = &d["paths"];
    assert_eq!(
        p["/api/v1/namespaces/{namespace}/pods"]["get"]["operationId"],
        "listCoreV1NamespacedPod"
    );
    assert_eq!(
        p["/api/v1/namespaces/{namespace}/pods"]["delete"]["operationId"],
        "deleteCoreV1CollectionNamespacedPod"
    );
    assert_eq!(
        p["/api/v1/namespaces/{namespace}/pods/{name}/status"]["put"]["operationId"],
        "replaceCoreV1NamespacedPodStatus"
    );
    assert_eq!(
        p["/api/v1/pods"]["get"]["operationId"],
        "listCoreV1PodForAllNamespaces"
    );
    assert_eq!(
        p["/api/v1/watch/pods"]["get"]["operationId"],
        "watchCoreV1PodListForAllNamespaces"
    );
    assert_eq!(
        p["/api/v1/nodes/{name}"]["get"]["operationId"],
        "readCoreV1Node"
    );
    assert_eq!(
        p["/api/v1/nodes/{name}"]["patch"]["x-kubernetes-action"],
        "patch"
    );
    assert_eq!(
        p["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]["x-kubernetes-action"],
        "post"
    );
    assert_eq!(
        p["/apis/apps/v1/"]["get"]["operationId"],
        "getAppsV1APIResources"
    );
    assert_eq!(p["/apis/apps/"]["get"]["operationId"], "getAppsAPIGroup");
    let widget = &d["definitions"]["com.example.v1alpha1.Widget"];
    assert_eq!(widget["x-kubernetes-preserve-unknown-fields"], true);
}

#[test]
fn scalar_types_take_upstream_forms() {
    let api = OpenApi::build(&served());
    let defs = &v2(&api)["definitions"];
    let ios = &defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(
        (ios["type"].as_str(), ios["format"].as_str()),
        (Some("string"), Some("int-or-string"))
    );
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
        "string"
    );
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"],
        "date-time"
    );
    let schemas = &doc(&api, "api/v1")["components"]["schemas"];
    let ios = &schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(ios["format"], "int-or-string");
    assert_eq!(ios["oneOf"].as_array().map(Vec::len), Some(2));
    assert!(
        schemas["io.k8s.apimachinery.pkg.runtime.RawExtension"].is_object()
            || schemas
                .get("io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent")
                .is_some()
    );
}

const SWAGGER_KEYS: &[&str] = &[
    "$ref",
    "description",
    "type",
    "format",
    "items",
    "properties",
    "additionalProperties",
    "required",
    "enum",
    "default",
    "title",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "readOnly",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "discriminator",
    "externalDocs",
    "xml",
    "maxProperties",
    "minProperties",
    "allOf",
];

#[test]
fn metadata_is_never_required() {
    let defs = super::defs::base();
    assert_eq!(
        defs["io.k8s.api.authentication.v1.TokenReview"]["required"],
        json!(["spec"])
    );
    assert!(defs["io.k8s.api.core.v1.ConfigMap"]
        .get("required")
        .is_none());
    for (name, def) in defs.iter() {
        let required = def["required"].as_array().cloned().unwrap_or_default();
        assert!(!required.contains(&json!("metadata")), "{name}");
    }
}

#[test]
fn v2_definitions_use_only_swagger_keywords() {
    let api = OpenApi::build(&served());
    fn check(name: &str, schema: &Value) {
        let Some(m) = schema.as_object() else { return };
        for (k, v) in m {
            assert!(
                k.starts_with("x-") || SWAGGER_KEYS.contains(&k.as_str()),
                "{name}: keyword {k}"
            );
            match k.as_str() {
                "properties" => v
                    .as_object()
                    .unwrap()
                    .iter()
                    .for_each(|(p, s)| check(&format!("{name}.{p}"), s)),
                "items" | "additionalProperties" => check(name, v),
                _ => {}
            }
        }
    }
    for (name, def) in v2(&api)["definitions"].as_object().unwrap() {
        check(name, def);
    }
}

/// Every listable kind of the table, served namespaced (for timing).
fn every_kind() -> Vec<ResourceDef> {
    let listable = kinds::KINDS.iter().filter(|k| k.listable);
    listable
        .map(|k| {
            res(
                k.group,
                k.version,
                &format!("{}s", k.kind.to_lowercase()),
                k.kind,
                true,
            )
        })
        .collect()
}

#[test]
fn build_is_deterministic_and_fast() {
    let started = std::time::Instant::now();
    let _ = defs::base();
    let base_time = started.elapsed();
    for resources in [served(), every_kind()] {
        let started = std::time::Instant::now();
        let a = OpenApi::build(&resources);
        let elapsed = started.elapsed();
        let b = OpenApi::build(&resources);
        assert_eq!(a.v2_json().1, b.v2_json().1);
        assert_eq!(a.v3_index(), b.v3_index());
        let n = resources.len();
        let size = a.v2_json().0.len();
        eprintln!(
            "OpenApi::build({n} resources): {elapsed:?}, base {base_time:?}, v2 {size} bytes"
        );
    }
}

#[test]
fn every_fact_names_an_existing_property() {
    let base = defs::base();
    for fact in crate::patchmeta::FACTS {
        let prop = &base[fact.def]["properties"][fact.field];
        assert!(prop.is_object(), "{}.{}", fact.def, fact.field);
        if fact.list != crate::patchmeta::ListFact::Unset || !fact.merge_key.is_empty() {
            assert_eq!(prop["type"], "array", "{}.{}", fact.def, fact.field);
        }
    }
    for name in crate::patchmeta::ATOMIC_STRUCTS {
        assert!(base.contains_key(*name), "{name}");
    }
    for kind in kinds::KINDS {
        assert!(base.contains_key(&kind.def_name()), "{}", kind.kind);
    }
}

#[test]
fn one_definition_is_completed_alone() {
    // Asked for by name (as writes do), without the whole map being built.
    let spec = defs::definition("io.k8s.api.core.v1.PodSpec").expect("PodSpec");
    let containers = &spec["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    let list = defs::definition("io.k8s.api.core.v1.ConfigMapList").expect("a kind's list");
    assert_eq!(
        list[defs::GVK],
        json!([{"group": "", "kind": "ConfigMapList", "version": "v1"}])
    );
    let cm = defs::definition("io.k8s.api.core.v1.ConfigMap").expect("ConfigMap");
    assert_eq!(cm[defs::GVK][0]["kind"], "ConfigMap");
    let ios = defs::definition(defs::INT_OR_STRING).expect("IntOrString");
    assert_eq!(ios["format"], "int-or-string");
    let review = defs::definition("io.k8s.api.authentication.v1.TokenReview").expect("review");
    assert!(!review["required"]
        .as_array()
        .is_some_and(|r| r.iter().any(|f| f == "metadata")));
    assert!(defs::definition("io.k8s.api.core.v1.NoSuchThing").is_none());
    // The map the documents use holds the same values, and every name.
    let base = defs::base();
    assert_eq!(&base["io.k8s.api.core.v1.PodSpec"], spec);
    assert_eq!(&base["io.k8s.api.core.v1.ConfigMapList"], list);
    for name in base.keys() {
        assert!(defs::definition(name).is_some(), "{name}");
    }
}
