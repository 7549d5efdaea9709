use super::*;
use crate::registry::builtin_resources;

fn up(obj: Value) -> Value {
    let u = on_read();
    let av = obj["apiVersion"].as_str().unwrap().to_owned();
    let kind = obj["kind"].as_str().unwrap().to_owned();
    assert!(u.is_older(&av, &kind), "{av} {kind}");
    u.upgrade(obj)
}

#[test]
fn todays_versions_and_other_groups_are_not_older() {
    let u = on_read();
    for (av, kind) in [
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
        ("discovery.k8s.io/v1", "EndpointSlice"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("example.com/v1beta1", "FlowSchema"),
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
    ] {
        assert!(!u.is_older(av, kind), "{av} {kind}");
    }
}

#[test]
fn flowcontrol_v1beta3_changes_only_its_version() {
    let fs = json!({"kind": "FlowSchema", "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
                    "metadata": {"name": "exempt"}, "spec": {"matchingPrecedence": 1}});
    let mut want = fs.clone();
    want["apiVersion"] = "flowcontrol.apiserver.k8s.io/v1".into();
    assert_eq!(up(fs), want);
}

#[test]
fn priority_level_shares_as_v1_has_them() {
    let plc = |v: &str, ann: Value, limited: Value| {
        json!({"kind": "PriorityLevelConfiguration",
               "apiVersion": format!("flowcontrol.apiserver.k8s.io/{v}"),
               "metadata": {"name": "p", "annotations": ann},
               "spec": {"type": "Limited", "limited": limited}})
    };
    let got = up(plc(
        "v1beta2",
        json!({"a": "b"}),
        json!({"assuredConcurrencyShares": 5}),
    ));
    assert_eq!(
        got["spec"]["limited"],
        json!({"nominalConcurrencyShares": 5})
    );
    assert_eq!(got["metadata"]["annotations"], json!({"a": "b"}));
    // v1beta3: zero is the default unless the annotation says otherwise.
    let got = up(plc(
        "v1beta3",
        json!({}),
        json!({"nominalConcurrencyShares": 0}),
    ));
    assert_eq!(got["spec"]["limited"]["nominalConcurrencyShares"], 30);
    let keep = json!({"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""});
    let got = up(plc("v1beta3", keep, json!({"nominalConcurrencyShares": 0})));
    assert_eq!(got["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert!(got["metadata"].get("annotations").is_none(), "{got}");
    assert_eq!(got["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
}

#[test]
fn endpoint_slice_topology_moves_to_fields() {
    let slice = json!({"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1beta1",
    "addressType": "IPv4",
    "endpoints": [
        {"addresses": ["10.0.0.1"],
         "topology": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z",
                      "rack": "r1"}},
        {"addresses": ["10.0.0.2"], "nodeName": "n2",
         "topology": {"kubernetes.io/hostname": "other"}},
        {"addresses": ["10.0.0.3"], "nodeName": "n3",
         "topology": {"kubernetes.io/hostname": "n3"}},
        {"addresses": ["10.0.0.4"]},
    ]});
    let got = up(slice);
    assert_eq!(got["apiVersion"], "discovery.k8s.io/v1");
    assert_eq!(
        got["endpoints"],
        json!([
            {"addresses": ["10.0.0.1"], "zone": "z", "nodeName": "n1",
             "deprecatedTopology": {"rack": "r1"}},
            {"addresses": ["10.0.0.2"], "nodeName": "n2",
             "deprecatedTopology": {"kubernetes.io/hostname": "other"}},
            {"addresses": ["10.0.0.3"], "nodeName": "n3"},
            {"addresses": ["10.0.0.4"]},
        ])
    );
}

#[test]
fn pdb_v1beta1_selectors_keep_their_meaning() {
    let pdb = |sel: Value| {
        json!({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1beta1",
               "spec": {"selector": sel}})
    };
    let label = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match";
    let none = up(pdb(json!({})));
    assert_eq!(
        none["spec"]["selector"],
        json!({"matchExpressions": [{"key": label, "operator": "Exists"}]})
    );
    let all = up(pdb(
        json!({"matchExpressions": [{"key": label, "operator": "DoesNotExist"}]}),
    ));
    assert_eq!(all["spec"]["selector"], json!({}));
    let some = up(pdb(json!({"matchLabels": {"app": "a"}})));
    assert_eq!(
        some["spec"]["selector"],
        json!({"matchLabels": {"app": "a"}})
    );
    assert_eq!(some["apiVersion"], "policy/v1");
}

/// The version every built-in resource is stored at, as kube-apiserver 1.33
/// stores it: the preferred version of its group (none of kapi's resources is
/// in 1.33's override list), `autoscaling/v2` for HorizontalPodAutoscalers,
/// core `v1` for `events.k8s.io` events (they share core events' storage), and
/// `apiextensions.k8s.io/v1beta1` for CustomResourceDefinitions (the
/// apiextensions server's storage codec; checked in kapi-apiextensions).
#[test]
fn storage_versions_are_upstreams() {
    for def in builtin_resources() {
        if def.verbs == [kapi_registry::Verb::Create] || def.resource == "componentstatuses" {
            continue; // not stored
        }
        let stored = match &def.conversion {
            Some(c) => c.storage_api_version().to_owned(),
            None => def.api_version(),
        };
        let want = match (def.group.as_str(), def.resource.as_str()) {
            ("autoscaling", _) => "autoscaling/v2".to_owned(),
            ("events.k8s.io", _) => "v1".to_owned(),
            ("", _) => "v1".to_owned(),
            (g, _) => format!("{g}/v1"),
        };
        assert_eq!(stored, want, "{}", def.gvr());
    }
}

/// Reads apply the defaults of today's storage version: a Job kube-apiserver
/// 1.28 stored (before `podReplacementPolicy` existed) reads as 1.33 serves it.
#[test]
fn reads_apply_todays_defaults() {
    let mut job = json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "j"},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6,
                 "completionMode": "NonIndexed", "suspend": false,
                 "template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox"}]}}}});
    on_read().default(&mut job);
    assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    let mut unknown = json!({"kind": "Widget", "apiVersion": "example.com/v1"});
    on_read().default(&mut unknown);
    assert_eq!(
        unknown,
        json!({"kind": "Widget", "apiVersion": "example.com/v1"})
    );
}
