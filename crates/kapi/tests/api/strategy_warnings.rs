//! The warnings the resources' strategies send back with a write
//! (upstream's `WarningsOnCreate` / `WarningsOnUpdate`), as kubectl prints
//! them: a pod's or a template's likely mistakes, a workload name that is not
//! a DNS label, a custom resource finalizer that is not domain-qualified.
//! Texts as kube-apiserver 1.28.4 answered the same requests, except where
//! newer releases reworded them (noted).

use serde_json::{json, Value};

use crate::crd::{crontab_crd, establish};
use crate::harness::{self, Reply, TestServer};

async fn send(s: &TestServer, method: &str, path: &str, ctype: &str, body: Value) -> Reply {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ctype)
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    s.exchange(req).await
}

async fn post(s: &TestServer, path: &str, body: Value) -> Reply {
    send(s, "POST", path, "application/json", body).await
}

async fn merge(s: &TestServer, path: &str, body: Value) -> Reply {
    send(s, "PATCH", path, "application/merge-patch+json", body).await
}

fn template(spec: Value) -> Value {
    json!({"metadata": {"labels": {"a": "b"}}, "spec": spec})
}

fn env_twice() -> Value {
    json!({"containers": [{"name": "c", "image": "i",
        "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]})
}

/// 1.33 added ", which may be dropped when using apply" to 1.28's text.
const ENV: &str = "containers[0].env[1]: hides previous definition of \"A\", which may be dropped when using apply";
const DOTS: &str = "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]";

#[tokio::test]
async fn workloads_warn_for_their_names_and_templates_on_create() {
    let s = harness::start().await;
    let sel = json!({"matchLabels": {"a": "b"}});
    let mut always = env_twice();
    always["restartPolicy"] = json!("Always");
    let mut never = env_twice();
    never["restartPolicy"] = json!("Never");
    let cases = [
        (
            "/apis/apps/v1",
            "deployments",
            "Deployment",
            json!({"selector": sel, "template": template(always.clone())}),
            true,
            "spec.template.spec.",
        ),
        (
            "/apis/apps/v1",
            "replicasets",
            "ReplicaSet",
            json!({"selector": sel, "template": template(always.clone())}),
            true,
            "spec.template.spec.",
        ),
        (
            "/apis/apps/v1",
            "daemonsets",
            "DaemonSet",
            json!({"selector": sel, "template": template(always.clone())}),
            false,
            "spec.template.spec.",
        ),
        (
            "/api/v1",
            "replicationcontrollers",
            "ReplicationController",
            json!({"selector": {"a": "b"}, "template": template(always.clone())}),
            true,
            "spec.template.spec.",
        ),
        (
            "/apis/batch/v1",
            "jobs",
            "Job",
            json!({"template": template(never.clone())}),
            true,
            "spec.template.spec.",
        ),
        (
            "/apis/batch/v1",
            "cronjobs",
            "CronJob",
            json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template(never.clone())}}}),
            true,
            "spec.jobTemplate.spec.template.spec.",
        ),
    ];
    for (prefix, plural, kind, spec, names_pods, at) in cases {
        let api_version = prefix
            .trim_start_matches("/apis/")
            .trim_start_matches("/api/");
        let body = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "a.b"}, "spec": spec});
        let reply = post(&s, &format!("{prefix}/namespaces/default/{plural}"), body).await;
        assert_eq!(
            reply.code,
            201,
            "{kind}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let mut want = Vec::new();
        if names_pods {
            want.push(DOTS.to_owned());
        }
        want.push(format!("{at}{ENV}"));
        assert_eq!(reply.warnings(), want, "{kind}");
    }
    let body = json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "a.b"},
        "template": template(env_twice())});
    let reply = post(&s, "/api/v1/namespaces/default/podtemplates", body).await;
    assert_eq!(reply.code, 201);
    assert_eq!(reply.warnings(), [format!("template.spec.{ENV}")]);

    // A StatefulSet's name must be a label already; its template warns.
    let body = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {"selector": sel, "serviceName": "s", "template": template(always)}});
    let reply = post(&s, "/apis/apps/v1/namespaces/default/statefulsets", body).await;
    assert_eq!(reply.code, 201);
    assert_eq!(reply.warnings(), [format!("spec.template.spec.{ENV}")]);
}

/// Everything `warningsForPodSpecAndMeta` looks at, in its order, on one
/// Deployment (a dry run: nothing is stored, the warnings come all the same).
#[tokio::test]
async fn a_template_full_of_mistakes_warns_for_each_in_upstreams_order() {
    let s = harness::start().await;
    let spec = json!({
        "nodeSelector": {"beta.kubernetes.io/arch": "amd64", "failure-domain.beta.kubernetes.io/zone": "z"},
        "terminationGracePeriodSeconds": -3,
        "imagePullSecrets": [{"name": "a"}, {"name": "a"}, {"name": ""}],
        "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["a"]}, {"ip": "1.2.3.4", "hostnames": ["b"]}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "beta.kubernetes.io/os", "whenUnsatisfiable": "DoNotSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "beta.kubernetes.io/instance-type", "operator": "Exists"}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
                    "matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/region", "operator": "Exists"}]}}]},
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "k"}}]}},
        "volumes": [{"name": "g", "gitRepo": {"repository": "x"}}],
        "containers": [{"name": "c", "image": "nginx",
            "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B", "value": "1"}, {"name": "B", "value": "$(B)x"}],
            "resources": {"limits": {"memory": "100m", "ephemeral-storage": "1.5"}, "requests": {"memory": "50m"}},
            "ports": [{"containerPort": 80}, {"containerPort": 80}, {"containerPort": 81, "hostIP": "1.2.3.4"},
                      {"containerPort": 82, "hostPort": 82}, {"containerPort": 82, "hostPort": 82, "hostIP": "1.1.1.1"}]}],
        "initContainers": [{"name": "i", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    });
    let mut t = template(spec);
    t["metadata"]["annotations"] = json!({
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
        "scheduler.alpha.kubernetes.io/critical-pod": ""});
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w1"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": t}});
    let reply = post(
        &s,
        "/apis/apps/v1/namespaces/default/deployments?dryRun=All",
        body,
    )
    .await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    let p = "spec.template.spec";
    let m = "spec.template.metadata";
    let want = [
        format!("{p}.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use \"kubernetes.io/arch\" instead"),
        format!("{p}.nodeSelector[failure-domain.beta.kubernetes.io/zone]: deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"),
        format!("{p}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/instance-type is deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead"),
        format!("{p}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use \"topology.kubernetes.io/region\" instead"),
        format!("{p}.topologySpreadConstraints[0].topologyKey: beta.kubernetes.io/os is deprecated since v1.14; use \"kubernetes.io/os\" instead"),
        format!("{p}.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod"),
        format!("{m}.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the \"priorityClassName\" field instead"),
        format!("{p}.volumes[0].gitRepo: deprecated in v1.11"),
        format!("{p}.hostAliases[1].ip: duplicate ip \"1.2.3.4\""),
        format!("{p}.imagePullSecrets[1].name: duplicate name \"a\""),
        format!("{p}.imagePullSecrets[2].name: invalid empty name \"\""),
        format!("{m}.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the \"seccompProfile\" field instead"),
        format!("{p}.containers[0].resources.limits[memory]: fractional byte value \"100m\" is invalid, must be an integer"),
        format!("{p}.containers[0].resources.requests[memory]: fractional byte value \"50m\" is invalid, must be an integer"),
        format!("{p}.containers[0].resources.limits[ephemeral-storage]: fractional byte value \"1500m\" is invalid, must be an integer"),
        format!("{p}.{ENV}"),
        format!("{p}.containers[0].ports[0]: overlapping port definition with {p}.initContainers[0].ports[0]"),
        format!("{p}.containers[0].ports[1]: overlapping port definition with {p}.initContainers[0].ports[0]"),
        format!("{p}.containers[0].ports[1]: duplicate port definition with {p}.containers[0].ports[0]"),
        format!("{p}.containers[0].ports[2]: hostIP set without hostPort: {{Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.2.3.4}}"),
        format!("{p}.containers[0].ports[4]: dangerously ambiguous port definition with {p}.containers[0].ports[3]"),
        format!("{p}.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"),
        format!("{p}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod"),
        format!("{p}.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod"),
    ];
    assert_eq!(reply.warnings(), want);
}

/// Updates warn for a template only when they change the spec (a new
/// generation): a label does not, a patch of the template or a scale does.
/// A pod warns when created, never when updated.
#[tokio::test]
async fn updates_warn_only_when_the_spec_changes_and_pods_only_on_create() {
    let s = harness::start().await;
    let grace = "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1";
    let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template(spec.clone())}});
    let path = "/apis/apps/v1/namespaces/default/deployments/d";
    let reply = post(&s, "/apis/apps/v1/namespaces/default/deployments", body).await;
    assert_eq!((reply.code, reply.warnings()), (201, vec![]));
    let reply = merge(
        &s,
        path,
        json!({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": -1}}}}),
    )
    .await;
    assert_eq!(
        (reply.code, reply.warnings()),
        (200, vec![grace.to_owned()])
    );
    let reply = merge(&s, path, json!({"metadata": {"labels": {"z": "1"}}})).await;
    assert_eq!((reply.code, reply.warnings()), (200, vec![]));
    let reply = merge(
        &s,
        &format!("{path}/scale"),
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    assert_eq!(
        (reply.code, reply.warnings()),
        (200, vec![grace.to_owned()])
    );

    spec["terminationGracePeriodSeconds"] = json!(-1);
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
    let reply = post(&s, "/api/v1/namespaces/default/pods", body).await;
    assert_eq!(
        (reply.code, reply.warnings()),
        (201, vec!["spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1".to_owned()])
    );
    let reply = merge(
        &s,
        "/api/v1/namespaces/default/pods/p",
        json!({"spec": {"containers": [{"name": "c", "image": "i2"}]}}),
    )
    .await;
    assert_eq!((reply.code, reply.warnings()), (200, vec![]));
}

/// A custom resource warns for each finalizer a write adds that is not
/// domain-qualified (1.33's text: a dotted name is told to add a path).
#[tokio::test]
async fn custom_resources_warn_for_finalizers_they_add_without_a_domain() {
    let s = harness::start().await;
    establish(&s, crontab_crd()).await;
    let path = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "finalizers": ["mine", "example.com/ok", "orphan"]}});
    let reply = post(&s, path, body).await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(
        reply.warnings(),
        ["metadata.finalizers: \"mine\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"]
    );
    // Only what the update adds is looked at.
    let reply = merge(
        &s,
        &format!("{path}/c"),
        json!({"metadata": {
        "finalizers": ["mine", "example.com/ok", "orphan", "finalizers.example.com", "zz"]}}),
    )
    .await;
    assert_eq!(reply.code, 200);
    assert_eq!(
        reply.warnings(),
        [
            "metadata.finalizers: \"finalizers.example.com\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
            "metadata.finalizers: \"zz\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
        ]
    );
    let reply = merge(
        &s,
        &format!("{path}/c"),
        json!({"metadata": {"labels": {"x": "y"}}}),
    )
    .await;
    assert_eq!((reply.code, reply.warnings()), (200, vec![]));
}

/// v1 Endpoints is deprecated in 1.33: every request on it says so.
#[tokio::test]
async fn v1_endpoints_requests_carry_the_133_deprecation() {
    let s = harness::start().await;
    let want = ["v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"];
    let body = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}});
    let reply = post(&s, "/api/v1/namespaces/default/endpoints", body).await;
    assert_eq!(
        (reply.code, reply.warnings()),
        (201, want.map(String::from).to_vec())
    );
    for path in [
        "/api/v1/namespaces/default/endpoints/e",
        "/api/v1/endpoints",
    ] {
        let reply = s
            .exchange(http::Request::get(path).body(Vec::new()).unwrap())
            .await;
        assert_eq!(
            (reply.code, reply.warnings()),
            (200, want.map(String::from).to_vec()),
            "{path}"
        );
    }
    let reply = s
        .exchange(
            http::Request::get("/apis/discovery.k8s.io/v1/endpointslices")
                .body(Vec::new())
                .unwrap(),
        )
        .await;
    assert_eq!((reply.code, reply.warnings()), (200, vec![]));
}

/// Services, volumes, claims, storage and runtime classes warn on create
/// and again on every update; an Ingress only on create.
#[tokio::test]
async fn other_kinds_warn_as_kube_apiserver_does() {
    let s = harness::start().await;
    let sc_anno = "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use \"storageClassName\" attribute instead";
    let cases = [
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1",
                "annotations": {"service.kubernetes.io/topology-aware-hints": "auto"}},
                "spec": {"ports": [{"port": 80}], "externalName": "x.com", "externalIPs": ["010.2.3.4"]}}),
            vec![
                "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead".to_owned(),
                "spec.externalIPs[0]: non-standard IP address \"010.2.3.4\" will be considered invalid in a future Kubernetes release: use \"10.2.3.4\"".to_owned(),
                "spec.externalName is ignored when spec.type is not \"ExternalName\"".to_owned(),
            ],
            true,
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s2"},
                "spec": {"type": "ExternalName", "externalName": "a.b", "externalIPs": ["1.2.3.4"]}}),
            vec!["spec.externalIPs is ignored when spec.type is \"ExternalName\"".to_owned()],
            true,
        ),
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c",
                "annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5"}}}}),
            vec![
                sc_anno.to_owned(),
                "spec.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be an integer".to_owned(),
            ],
            true,
        ),
        (
            "/api/v1/persistentvolumes",
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv",
                "annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Recycle", "hostPath": {"path": "/x"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "beta.kubernetes.io/os", "operator": "Exists"}]}]}}}}),
            vec![
                sc_anno.to_owned(),
                "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.".to_owned(),
                "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/os is deprecated since v1.14; use \"kubernetes.io/os\" instead".to_owned(),
            ],
            true,
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"},
                "provisioner": "x", "allowedTopologies": [{"matchLabelExpressions": [
                    {"key": "failure-domain.beta.kubernetes.io/zone", "values": ["a"]}]}]}),
            vec!["allowedTopologies[0].matchLabelExpressions[0].key: deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead".to_owned()],
            true,
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"},
                "handler": "h", "scheduling": {"nodeSelector": {"beta.kubernetes.io/arch": "x"}}}),
            vec!["scheduling.nodeSelector: deprecated since v1.14; use \"kubernetes.io/arch\" instead".to_owned()],
            true,
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i",
                "annotations": {"kubernetes.io/ingress.class": "nginx"}},
                "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
            vec!["annotation \"kubernetes.io/ingress.class\" is deprecated, please use 'spec.ingressClassName' instead".to_owned()],
            false,
        ),
    ];
    for (collection, body, want, on_update) in cases {
        let name = body["metadata"]["name"].as_str().unwrap().to_owned();
        let reply = post(&s, collection, body).await;
        assert_eq!(
            reply.code,
            201,
            "{name}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.warnings(), want, "{name}");
        let reply = merge(
            &s,
            &format!("{collection}/{name}"),
            json!({"metadata": {"labels": {"l": "1"}}}),
        )
        .await;
        assert_eq!(reply.code, 200, "{name}");
        let again = if on_update { want } else { vec![] };
        assert_eq!(reply.warnings(), again, "{name} on update");
    }
}

/// A TLS secret whose certificate and key do not load as a pair is stored,
/// with Go's `tls.X509KeyPair` error as a warning, on create and update.
#[tokio::test]
async fn tls_secrets_that_are_not_a_pair_warn() {
    let s = harness::start().await;
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["a".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let other = rcgen::KeyPair::generate().unwrap();
    let path = "/api/v1/namespaces/default/secrets";
    let cases = [
        ("good", cert.pem(), key.serialize_pem(), vec![]),
        (
            "other",
            cert.pem(),
            other.serialize_pem(),
            vec!["tls: private key does not match public key"],
        ),
        (
            "junk",
            "abc".to_owned(),
            key.serialize_pem(),
            vec!["tls: failed to find any PEM data in certificate input"],
        ),
    ];
    for (name, crt, k, want) in cases {
        let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "type": "kubernetes.io/tls", "stringData": {"tls.crt": crt, "tls.key": k}});
        let reply = post(&s, path, body).await;
        assert_eq!(
            (reply.code, reply.warnings()),
            (201, want.iter().map(|w| w.to_string()).collect()),
            "{name}"
        );
        let reply = merge(
            &s,
            &format!("{path}/{name}"),
            json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .await;
        assert_eq!(
            (reply.code, reply.warnings()),
            (200, want.iter().map(|w| w.to_string()).collect()),
            "{name} update"
        );
    }
}

/// A StatefulSet's claim templates warn on every write, the template only
/// when the generation moves (paths as kube-apiserver names them: without
/// the claim's `spec` on create, under `Spec` on update).
#[tokio::test]
async fn stateful_set_claim_templates_warn_on_every_write() {
    let s = harness::start().await;
    let path = "/apis/apps/v1/namespaces/default/statefulsets";
    let mut t = template(json!({"containers": [{"name": "c", "image": "i"}]}));
    t["spec"]["terminationGracePeriodSeconds"] = json!(-1);
    let body = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ss"},
        "spec": {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}}, "template": t,
            "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1.5"}}}}]}});
    let grace = "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1";
    let frac = |at: &str| {
        format!("spec.volumeClaimTemplates[0]{at}.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be an integer")
    };
    let reply = post(&s, path, body).await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.warnings(), [grace.to_owned(), frac("")]);
    let reply = merge(
        &s,
        &format!("{path}/ss"),
        json!({"metadata": {"labels": {"q": "1"}}}),
    )
    .await;
    assert_eq!(reply.warnings(), [frac(".Spec")]);
    let reply = merge(&s, &format!("{path}/ss"), json!({"spec": {"replicas": 3}})).await;
    assert_eq!(reply.warnings(), [grace.to_owned(), frac(".Spec")]);
}

/// CIDRs with bits set past their prefix, or in a form a strict parser
/// refuses, warn (1.33's `GetWarningsForCIDR`): a NetworkPolicy's IP blocks,
/// a Service's load balancer source ranges.
#[tokio::test]
async fn ambiguous_cidrs_warn() {
    let s = harness::start().await;
    let body = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
        "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1/8", "except": ["10.1.0.0/16", "010.2.0.0/16"]}}]}],
            "egress": [{"to": [{"ipBlock": {"cidr": "2001:DB8::/32"}}]}]}});
    let reply = post(
        &s,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        body,
    )
    .await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(
        reply.warnings(),
        [
            "spec.ingress[0].from[0].ipBlock.cidr: CIDR value \"10.0.0.1/8\" is ambiguous in this context (should be \"10.0.0.0/8\" or \"10.0.0.1/32\"?)",
            "spec.ingress[0].from[0].ipBlock.except[1]: non-standard CIDR value \"010.2.0.0/16\" will be considered invalid in a future Kubernetes release: use \"10.2.0.0/16\"",
            "spec.egress[0].to[0].ipBlock.cidr: IPv6 CIDR value \"2001:DB8::/32\" should be in RFC 5952 canonical format (\"2001:db8::/32\")",
        ]
    );
    let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "loadBalancerSourceRanges": ["192.168.1.1/24"]}});
    let reply = post(&s, "/api/v1/namespaces/default/services", body).await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(
        reply.warnings(),
        ["spec.loadBalancerSourceRanges[0]: CIDR value \"192.168.1.1/24\" is ambiguous in this context (should be \"192.168.1.0/24\" or \"192.168.1.1/32\"?)"]
    );
}
