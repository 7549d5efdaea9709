//! Table-driven server-side apply scenarios over the built-in schemas: a list
//! of applies and updates by several managers, then the object and every
//! `managedFields` entry checked field by field. The expected `fieldsV1` are
//! what upstream's field manager records for the same steps.

use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_registry::managed::FieldManager;
use serde_json::{json, Value};

use crate::patchmeta::{root_type, BuiltinSchema};

const NOW: &str = "2026-01-01T00:00:00Z";

enum Step {
    /// Apply `config` as `manager`; `Err(n)` expects a 409 with `n` conflicts.
    Apply(&'static str, Value, bool, Result<(), usize>),
    /// An update by `manager`: the object merge-patched with the value.
    Update(&'static str, Value),
    /// A create by `manager` (an update from nothing) of the object as the
    /// store holds it after defaulting.
    Create(&'static str, Value),
}

struct Scenario {
    name: &'static str,
    steps: Vec<Step>,
    /// JSON pointer into the object, and the value there (`None`: absent).
    object: Vec<(&'static str, Option<Value>)>,
    /// Every managedFields entry: manager, operation, fieldsV1.
    entries: Vec<(&'static str, &'static str, Value)>,
}

fn deploy(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
}

fn containers(cs: Value) -> Value {
    deploy(json!({"template": {"spec": {"containers": cs}}}))
}

fn run(s: &Scenario) {
    let schema = BuiltinSchema::shared();
    let root: TypeRef = root_type("apps", "v1", "Deployment").unwrap();
    let fm = FieldManager {
        schema: schema.as_ref(),
        root: &root,
        api_version: "apps/v1",
        kind: "Deployment",
        subresource: None,
        has_status: true,
    };
    let mut obj: Option<Value> = None;
    for (i, step) in s.steps.iter().enumerate() {
        match step {
            Step::Apply(m, cfg, force, expect) => {
                let res = fm.apply(obj.as_ref(), cfg, m, *force, NOW);
                match (res, expect) {
                    (Ok(mut out), Ok(())) => {
                        if obj.is_none() {
                            out["metadata"]["uid"] = json!("u1");
                        }
                        obj = Some(out);
                    }
                    (Err(e), Err(n)) => {
                        assert_eq!(e.code, 409, "{}: step {i}: {e:?}", s.name);
                        let causes = e.details.as_ref().map_or(0, |d| d.causes.len());
                        assert_eq!(causes, *n, "{}: step {i}: {e:?}", s.name);
                    }
                    (res, _) => panic!("{}: step {i}: unexpected {res:?}", s.name),
                }
            }
            Step::Create(m, input) => {
                let mut new = input.clone();
                fm.update(None, &mut new, m, NOW);
                new["metadata"]["uid"] = json!("u1");
                obj = Some(new);
            }
            Step::Update(m, patch) => {
                let live = obj.clone().expect("update needs an object");
                let mut new = live.clone();
                merge_patch(&mut new, patch);
                fm.update(Some(&live), &mut new, m, NOW);
                obj = Some(new);
            }
        }
    }
    let obj = obj.expect("an object");
    for (ptr, want) in &s.object {
        assert_eq!(
            obj.pointer(ptr),
            want.as_ref(),
            "{}: {ptr} in {obj:#}",
            s.name
        );
    }
    let mut got: Vec<(String, String, Value)> = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("manager"), s("operation"), e["fieldsV1"].clone())
        })
        .collect();
    let mut want: Vec<(String, String, Value)> = s
        .entries
        .iter()
        .map(|(m, op, f)| (m.to_string(), op.to_string(), f.clone()))
        .collect();
    // Entry order (by time) is checked in the registry's own tests.
    got.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    want.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    assert_eq!(got, want, "{}: managedFields", s.name);
}

/// RFC 7386 merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn k(name: &str) -> String {
    format!("k:{{\"name\":\"{name}\"}}")
}

fn scenarios() -> Vec<Scenario> {
    let c = |name: &str, image: &str| json!({"name": name, "image": image});
    let spec_containers =
        |entries: Value| json!({"f:spec": {"f:template": {"f:spec": {"f:containers": entries}}}});
    let mut out = vec![
        Scenario {
            name: "two managers share a list map; one stops applying its element",
            steps: vec![
                Step::Apply("a", containers(json!([c("x", "i1")])), false, Ok(())),
                Step::Apply("b", containers(json!([c("y", "i2")])), false, Ok(())),
                Step::Apply("a", containers(json!([])), false, Ok(())),
            ],
            object: vec![
                ("/spec/template/spec/containers/0/name", Some(json!("y"))),
                ("/spec/template/spec/containers/1", None),
            ],
            // "a" applies nothing any more, so it has no entry.
            entries: vec![(
                "b",
                "Apply",
                spec_containers(json!({k("y"): {".": {}, "f:image": {}, "f:name": {}}})),
            )],
        },
        Scenario {
            name: "atomic list conflicts, force takes it",
            steps: vec![
                Step::Apply(
                    "a",
                    containers(json!([{"name": "x", "args": ["1"]}])),
                    false,
                    Ok(()),
                ),
                Step::Apply(
                    "b",
                    containers(json!([{"name": "x", "args": ["2"]}])),
                    false,
                    Err(1),
                ),
                Step::Apply(
                    "b",
                    containers(json!([{"name": "x", "args": ["2"]}])),
                    true,
                    Ok(()),
                ),
            ],
            object: vec![("/spec/template/spec/containers/0/args", Some(json!(["2"])))],
            entries: vec![
                (
                    "a",
                    "Apply",
                    spec_containers(json!({k("x"): {".": {}, "f:name": {}}})),
                ),
                (
                    "b",
                    "Apply",
                    spec_containers(json!({k("x"): {".": {}, "f:args": {}, "f:name": {}}})),
                ),
            ],
        },
        Scenario {
            name: "set lists merge by value",
            steps: vec![
                Step::Apply(
                    "a",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "d", "finalizers": ["x/a"]}}),
                    false,
                    Ok(()),
                ),
                Step::Apply(
                    "b",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "d", "finalizers": ["x/b"]}}),
                    false,
                    Ok(()),
                ),
            ],
            object: vec![("/metadata/finalizers", Some(json!(["x/a", "x/b"])))],
            entries: vec![
                (
                    "a",
                    "Apply",
                    json!({"f:metadata": {"f:finalizers": {"v:\"x/a\"": {}}}}),
                ),
                (
                    "b",
                    "Apply",
                    json!({"f:metadata": {"f:finalizers": {"v:\"x/b\"": {}}}}),
                ),
            ],
        },
        Scenario {
            name: "same value is shared, a different one conflicts",
            steps: vec![
                Step::Apply(
                    "a",
                    deploy(json!({"replicas": 2, "paused": true})),
                    false,
                    Ok(()),
                ),
                Step::Apply("b", deploy(json!({"replicas": 2})), false, Ok(())),
                Step::Apply(
                    "c",
                    deploy(json!({"replicas": 3, "paused": false})),
                    false,
                    Err(3),
                ),
            ],
            object: vec![("/spec/replicas", Some(json!(2)))],
            entries: vec![
                (
                    "a",
                    "Apply",
                    json!({"f:spec": {"f:paused": {}, "f:replicas": {}}}),
                ),
                ("b", "Apply", json!({"f:spec": {"f:replicas": {}}})),
            ],
        },
        Scenario {
            name: "fields a manager stops applying go unless someone else owns them",
            steps: vec![
                Step::Apply(
                    "a",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "d", "labels": {"x": "1", "y": "2", "z": "3"}}}),
                    false,
                    Ok(()),
                ),
                Step::Apply(
                    "b",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "d", "labels": {"z": "3"}}}),
                    false,
                    Ok(()),
                ),
                Step::Apply(
                    "a",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "d", "labels": {"x": "1"}}}),
                    false,
                    Ok(()),
                ),
            ],
            object: vec![("/metadata/labels", Some(json!({"x": "1", "z": "3"})))],
            entries: vec![
                (
                    "a",
                    "Apply",
                    json!({"f:metadata": {"f:labels": {"f:x": {}}}}),
                ),
                (
                    "b",
                    "Apply",
                    json!({"f:metadata": {"f:labels": {"f:z": {}}}}),
                ),
            ],
        },
        Scenario {
            name: "an update takes what it changes; the applier then conflicts",
            steps: vec![
                Step::Apply(
                    "a",
                    deploy(json!({"replicas": 2, "paused": true})),
                    false,
                    Ok(()),
                ),
                Step::Update("kubectl-edit", json!({"spec": {"replicas": 5}})),
                Step::Apply(
                    "a",
                    deploy(json!({"replicas": 2, "paused": true})),
                    false,
                    Err(1),
                ),
            ],
            object: vec![("/spec/replicas", Some(json!(5)))],
            entries: vec![
                ("a", "Apply", json!({"f:spec": {"f:paused": {}}})),
                (
                    "kubectl-edit",
                    "Update",
                    json!({"f:spec": {"f:replicas": {}}}),
                ),
            ],
        },
    ];
    out.push(Scenario {
        name: "container ports are keyed by port and defaulted protocol",
        steps: vec![Step::Apply(
            "a",
            containers(json!([{"name": "x", "ports": [{"containerPort": 80}]}])),
            false,
            Ok(()),
        )],
        object: vec![("/spec/template/spec/containers/0/ports/0/containerPort", Some(json!(80)))],
        entries: vec![(
            "a",
            "Apply",
            spec_containers(json!({k("x"): {".": {}, "f:name": {}, "f:ports": {
                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}})),
        )],
    });
    out.push(Scenario {
        name: "updates by the same manager merge into one entry; removed fields leave",
        steps: vec![
            Step::Apply("a", deploy(json!({"paused": true})), false, Ok(())),
            Step::Update("ctl", json!({"spec": {"replicas": 1}})),
            Step::Update("ctl", json!({"spec": {"minReadySeconds": 3}})),
            Step::Update("other", json!({"spec": {"paused": null}})),
        ],
        object: vec![("/spec/paused", None), ("/spec/replicas", Some(json!(1)))],
        entries: vec![(
            "ctl",
            "Update",
            json!({"f:spec": {"f:minReadySeconds": {}, "f:replicas": {}}}),
        )],
    });
    out.push(Scenario {
        name: "a create records what the defaulted object adds to the Go zero value",
        steps: vec![Step::Create("kubectl-client-side-apply", defaulted_nginx())],
        object: vec![("/spec/replicas", Some(json!(3)))],
        // What kube-apiserver records for `kubectl apply` of this Deployment:
        // no `.` on structs the zero value holds (strategy, template and its
        // metadata and spec, the null containers list), `.` on maps and
        // elements the create added.
        entries: vec![("kubectl-client-side-apply", "Update", nginx_create_entry())],
    });
    out.push(Scenario {
        name: "client-side apply, then server-side apply by another manager",
        steps: vec![
            Step::Create("kubectl-client-side-apply", defaulted_nginx()),
            Step::Apply("ctl", deploy(json!({"replicas": 3})), false, Ok(())),
            Step::Apply("other", deploy(json!({"replicas": 4})), false, Err(2)),
        ],
        object: vec![("/spec/replicas", Some(json!(3)))],
        // A same-value apply shares the field; the update keeps it too.
        entries: vec![
            ("ctl", "Apply", json!({"f:spec": {"f:replicas": {}}})),
            ("kubectl-client-side-apply", "Update", nginx_create_entry()),
        ],
    });
    out
}

/// The fieldsV1 kube-apiserver records for the create of [`defaulted_nginx`].
fn nginx_create_entry() -> Value {
    json!({
        "f:metadata": {
            "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
            "f:labels": {".": {}, "f:app": {}}
        },
        "f:spec": {
            "f:progressDeadlineSeconds": {},
            "f:replicas": {},
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:strategy": {
                "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                "f:type": {}
            },
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        k("nginx"): {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:ports": {
                                ".": {},
                                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                    ".": {}, "f:containerPort": {}, "f:protocol": {}
                                }
                            },
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {}
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {}
                }
            }
        }
    })
}

/// `kubectl apply` of an nginx Deployment as the store holds it after
/// defaulting (what kube-apiserver's decoder makes of it).
fn defaulted_nginx() -> Value {
    let last = r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#;
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "d", "namespace": "ns", "uid": "u1", "generation": 1,
            "creationTimestamp": NOW,
            "labels": {"app": "nginx"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [{
                        "name": "nginx", "image": "nginx:1.25",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    })
}

#[test]
fn apply_scenarios() {
    for s in scenarios() {
        run(&s);
    }
}

/// The field manager of `kind` at `api_version` (root type `root`), for
/// writes through `subresource`.
pub(crate) fn field_manager<'a>(
    schema: &'a dyn SchemaNav,
    root: &'a TypeRef,
    api_version: &'a str,
    kind: &'a str,
    subresource: Option<&'a str>,
    has_status: bool,
) -> FieldManager<'a> {
    FieldManager {
        schema,
        root,
        api_version,
        kind,
        subresource,
        has_status,
    }
}

#[test]
fn a_configmap_create_marks_its_new_data_map() {
    let schema = BuiltinSchema::shared();
    let root = root_type("", "v1", "ConfigMap").unwrap();
    let fm = field_manager(schema.as_ref(), &root, "v1", "ConfigMap", None, false);
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "creationTimestamp": NOW},
        "data": {"k": "v"}});
    fm.update(None, &mut obj, "kubectl-create", NOW);
    let want = json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
        "time": NOW, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}]);
    assert_eq!(obj["metadata"]["managedFields"], want);
}

#[test]
fn configuration_errors_are_upstreams_typed_patch_errors() {
    let schema = BuiltinSchema::shared();
    let root = root_type("apps", "v1", "Deployment").unwrap();
    let fm = field_manager(schema.as_ref(), &root, "apps/v1", "Deployment", None, false);
    let cases = [
        (
            containers(json!([{"image": "x"}])),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)",
        ),
        (
            containers(json!([{"name": "a"}, {"name": "a"}])),
            ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]",
        ),
        (
            deploy(json!({"replicas": 1, "replica": 2})),
            ".spec.replica: field not declared in schema",
        ),
        (
            containers(json!([{"name": "a", "imagee": "x"}])),
            ".spec.template.spec.containers[name=\"a\"].imagee: field not declared in schema",
        ),
        (
            // Atomic lists are validated element by element too.
            deploy(json!({"template": {"spec": {"tolerations": [{"key": "k", "bogus": 1}]}}})),
            ".spec.template.spec.tolerations[0].bogus: field not declared in schema",
        ),
    ];
    for (cfg, detail) in cases {
        let e = fm.apply(None, &cfg, "m", false, NOW).unwrap_err();
        assert_eq!(e.code, 500, "{e:?}");
        assert_eq!(e.reason.as_str(), "", "{e:?}");
        let want = format!(
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): {detail}"
        );
        assert_eq!(e.message, want);
    }
    // Labels, annotations and other maps take any key.
    let ok = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"any": "x"}}, "spec": {"replicas": 1}});
    assert!(fm.apply(None, &ok, "m", false, NOW).is_ok());
}
