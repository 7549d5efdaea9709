//! The warnings a pod or a pod template draws when it is created (upstream's
//! `GetWarningsForPod` and `GetWarningsForPodTemplate`): what validation lets
//! through but is likely a mistake — deprecated node labels and annotations,
//! removed volume plugins, duplicates that hide one another, fractional byte
//! quantities, ports that overlap — and for a name that is not a DNS label.
//! When the workloads holding a template warn is `workload_warnings.rs`.

use std::collections::{BTreeSet, HashMap};

use kapi_machinery::quantity::Qty;
use kapi_machinery::validation::{is_dns1123_label, FieldPath};
use serde_json::Value;

use super::util::str_at;

/// Node labels kube-apiserver warns about, with what to use instead.
const DEPRECATED_NODE_LABELS: &[(&str, &str)] = &[
    (
        "beta.kubernetes.io/arch",
        "deprecated since v1.14; use \"kubernetes.io/arch\" instead",
    ),
    (
        "beta.kubernetes.io/os",
        "deprecated since v1.14; use \"kubernetes.io/os\" instead",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead",
    ),
    (
        "failure-domain.beta.kubernetes.io/zone",
        "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead",
    ),
    (
        "beta.kubernetes.io/instance-type",
        "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead",
    ),
    ("app.kubernetes.io/created-by", "deprecated since v1.9"),
    (
        "scheduler.alpha.kubernetes.io/preferAvoidPods",
        "deprecated since v1.22; use Taints and Tolerations instead",
    ),
    (
        "node-role.kubernetes.io/master",
        "use \"node-role.kubernetes.io/control-plane\" instead",
    ),
];

/// Pod annotations that no longer do anything.
const DEPRECATED_ANNOTATIONS: &[(&str, &str)] = &[
    (
        "scheduler.alpha.kubernetes.io/critical-pod",
        "non-functional in v1.16+; use the \"priorityClassName\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/unsafe-sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
];

/// Volume plugins deprecated or removed, with the note for each.
const DEPRECATED_VOLUMES: &[(&str, &str)] = &[
    (
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageos", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
];

const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";

pub(crate) fn node_label_note(key: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, m)| *m)
}

/// `prefix.name`, or `name` at the root.
fn at(prefix: Option<&FieldPath>, name: &str) -> FieldPath {
    match prefix {
        Some(p) => p.child(name),
        None => FieldPath::new(name),
    }
}

pub(crate) fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The warning for a name that is not a DNS label, on the kinds whose names
/// become pod names (`what`: "Pod names and hostnames").
pub fn name_warning(obj: &Value, what: &str) -> Option<String> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let msgs = is_dns1123_label(name);
    (!msgs.is_empty()).then(|| {
        format!(
            "metadata.name: this is used in {what}, which can result in surprising behavior; a DNS label is recommended: [{}]",
            msgs.join(" ")
        )
    })
}

/// A created pod's warnings (`WarningsOnCreate`).
pub fn pod_create_warnings(pod: &Value) -> Vec<String> {
    let mut out: Vec<String> = name_warning(pod, "the Pod's hostname")
        .into_iter()
        .collect();
    let empty = Value::Null;
    out.extend(spec_and_meta(
        None,
        pod.get("spec").unwrap_or(&empty),
        pod.get("metadata").unwrap_or(&empty),
    ));
    out
}

/// A pod template's warnings, `path` naming the template.
pub fn template_warnings(path: &FieldPath, template: Option<&Value>) -> Vec<String> {
    let Some(t) = template.filter(|t| t.is_object()) else {
        return Vec::new();
    };
    let empty = Value::Null;
    spec_and_meta(
        Some(path),
        t.get("spec").unwrap_or(&empty),
        t.get("metadata").unwrap_or(&empty),
    )
}

fn spec_and_meta(prefix: Option<&FieldPath>, spec: &Value, meta: &Value) -> Vec<String> {
    let mut w = Vec::new();
    let spec_path = at(prefix, "spec");
    let annotations = meta.get("annotations").and_then(Value::as_object);
    let has_annotation = |k: &str| annotations.is_some_and(|a| a.contains_key(k));
    let annotation_path = |k: &str| at(prefix, "metadata").child("annotations").key(k);

    // Deprecated node labels in selectors, affinity and spread constraints.
    if let Some(sel) = spec.get("nodeSelector").and_then(Value::as_object) {
        for k in sel.keys() {
            if let Some(msg) = node_label_note(k) {
                w.push(format!("{}: {msg}", spec_path.child("nodeSelector").key(k)));
            }
        }
    }
    if let Some(na) = spec.pointer("/affinity/nodeAffinity") {
        let na_path = spec_path.child("affinity").child("nodeAffinity");
        let terms = na.pointer("/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms");
        let terms_path = na_path
            .child("requiredDuringSchedulingIgnoredDuringExecution")
            .child("nodeSelectorTerms");
        for (i, term) in items(terms).iter().enumerate() {
            w.extend(node_selector_term(term, &terms_path.index(i)));
        }
        let preferred = na.get("preferredDuringSchedulingIgnoredDuringExecution");
        let preferred_path = na_path.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, p) in items(preferred).iter().enumerate() {
            if let Some(term) = p.get("preference") {
                w.extend(node_selector_term(
                    term,
                    &preferred_path.index(i).child("preference"),
                ));
            }
        }
    }
    for (i, t) in items(spec.get("topologySpreadConstraints"))
        .iter()
        .enumerate()
    {
        let path = spec_path.child("topologySpreadConstraints").index(i);
        let key = str_at(t, "/topologyKey");
        if let Some(msg) = node_label_note(key) {
            w.push(format!("{}: {key} is {msg}", path.child("topologyKey")));
        }
        if t.get("labelSelector").is_none_or(Value::is_null) {
            w.push(format!(
                "{}: a null labelSelector results in matching no pod",
                path.child("labelSelector")
            ));
        }
    }

    for (key, msg) in DEPRECATED_ANNOTATIONS {
        if has_annotation(key) {
            w.push(format!("{}: {msg}", annotation_path(key)));
        }
    }

    let volumes = items(spec.get("volumes"));
    for (i, v) in volumes.iter().enumerate() {
        for (plugin, msg) in DEPRECATED_VOLUMES {
            if v.get(*plugin).is_some_and(|p| !p.is_null()) {
                let name = if *plugin == "storageos" {
                    "storageOS"
                } else {
                    plugin
                };
                w.push(format!(
                    "{}: {msg}",
                    spec_path.child("volumes").index(i).child(name)
                ));
            }
        }
        if let Some(spec) = v.pointer("/ephemeral/volumeClaimTemplate/spec") {
            let path = spec_path
                .child("volumes")
                .index(i)
                .child("ephemeral")
                .child("volumeClaimTemplate")
                .child("spec");
            w.extend(claim_spec_warnings(spec, &path));
        }
    }
    w.extend(projected_token_paths(volumes, &spec_path));

    // Duplicates that hide one another.
    let mut seen = BTreeSet::new();
    for (i, a) in items(spec.get("hostAliases")).iter().enumerate() {
        let ip = str_at(a, "/ip");
        if !seen.insert(ip) {
            w.push(format!(
                "{}: duplicate ip {ip:?}",
                spec_path.child("hostAliases").index(i).child("ip")
            ));
        }
    }
    let pull = items(spec.get("imagePullSecrets"));
    let mut seen = BTreeSet::new();
    for (i, s) in pull.iter().enumerate() {
        let name = str_at(s, "/name");
        if pull.len() > 1 && !seen.insert(name) {
            w.push(format!(
                "{}: duplicate name {name:?}",
                spec_path.child("imagePullSecrets").index(i).child("name")
            ));
        }
    }
    for (i, s) in pull.iter().enumerate() {
        if str_at(s, "/name").is_empty() {
            w.push(format!(
                "{}: invalid empty name \"\"",
                spec_path.child("imagePullSecrets").index(i).child("name")
            ));
        }
    }

    for res in ["memory", "ephemeral-storage"] {
        if let Some(msg) = fractional(spec.pointer(&format!("/overhead/{res}"))) {
            w.push(format!("{}: {msg}", spec_path.child("overhead").key(res)));
        }
    }

    let pod_seccomp = spec.pointer("/securityContext/seccompProfile").is_some();
    if !pod_seccomp && has_annotation(SECCOMP_POD) {
        w.push(format!(
            "{}: non-functional in v1.27+; use the \"seccompProfile\" field instead",
            annotation_path(SECCOMP_POD)
        ));
    }
    let pod_apparmor = spec.pointer("/securityContext/appArmorProfile").is_some();

    let containers = containers_with_paths(spec, &spec_path);
    for (c, path) in &containers {
        let name = str_at(c, "/name");
        let own = |field: &str| {
            c.get("securityContext")
                .and_then(|s| s.get(field))
                .is_some_and(|f| !f.is_null())
        };
        let key = format!("{SECCOMP_CONTAINER}{name}");
        if !own("seccompProfile") && has_annotation(&key) {
            w.push(format!(
                "{}: non-functional in v1.27+; use the \"seccompProfile\" field instead",
                annotation_path(&key)
            ));
        }
        // A pod's own AppArmor annotations are answered elsewhere upstream
        // (it copies them into the fields); a template's are warned about.
        let key = format!("{APPARMOR_CONTAINER}{name}");
        if prefix.is_some() && !pod_apparmor && !own("appArmorProfile") && has_annotation(&key) {
            w.push(format!(
                "{}: deprecated since v1.30; use the \"appArmorProfile\" field instead",
                annotation_path(&key)
            ));
        }
        for (list, res) in [
            ("limits", "memory"),
            ("requests", "memory"),
            ("limits", "ephemeral-storage"),
            ("requests", "ephemeral-storage"),
        ] {
            let q = c
                .get("resources")
                .and_then(|r| r.get(list))
                .and_then(|l| l.get(res));
            if let Some(msg) = fractional(q) {
                w.push(format!(
                    "{}: {msg}",
                    path.child("resources").child(list).key(res)
                ));
            }
        }
        w.extend(env_warnings(c, path));
    }
    w.extend(port_warnings(&containers));

    if spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|g| g < 0)
    {
        w.push(format!(
            "{}: must be >= 0; negative values are invalid and will be treated as 1",
            spec_path.child("terminationGracePeriodSeconds")
        ));
    }

    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(a) = spec.get("affinity").and_then(|a| a.get(kind)) else {
            continue;
        };
        let path = spec_path.child("affinity").child(kind);
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        for (i, t) in items(a.get(required)).iter().enumerate() {
            if t.get("labelSelector").is_none_or(Value::is_null) {
                w.push(format!(
                    "{}: a null labelSelector results in matching no pod",
                    path.child(required).index(i).child("labelSelector")
                ));
            }
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, t) in items(a.get(preferred)).iter().enumerate() {
            if t.pointer("/podAffinityTerm/labelSelector")
                .is_none_or(Value::is_null)
            {
                w.push(format!(
                    "{}: a null labelSelector results in matching no pod",
                    path.child(preferred)
                        .index(i)
                        .child("podAffinityTerm")
                        .child("labelSelector")
                ));
            }
        }
    }
    w
}

pub(crate) fn node_selector_term(term: &Value, path: &FieldPath) -> Vec<String> {
    let mut w = Vec::new();
    for (i, e) in items(term.get("matchExpressions")).iter().enumerate() {
        let key = str_at(e, "/key");
        if let Some(msg) = node_label_note(key) {
            w.push(format!(
                "{}: {key} is {msg}",
                path.child("matchExpressions").index(i).child("key")
            ));
        }
    }
    w
}

/// The note for a byte quantity with a fraction of a byte.
pub(crate) fn fractional(q: Option<&Value>) -> Option<String> {
    let q = Qty::from_json(q?)?;
    (q.milli % 1000 != 0).then(|| {
        format!(
            "fractional byte value {:?} is invalid, must be an integer",
            q.canonical()
        )
    })
}

/// Every container with its field path, in upstream's visiting order: init
/// containers, containers, ephemeral containers.
fn containers_with_paths<'a>(
    spec: &'a Value,
    spec_path: &FieldPath,
) -> Vec<(&'a Value, FieldPath)> {
    let mut out = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in items(spec.get(list)).iter().enumerate() {
            out.push((c, spec_path.child(list).index(i)));
        }
    }
    out
}

/// An env var defined twice, where the second hides the first (rather than
/// building on it with `$(NAME)`).
fn env_warnings(c: &Value, path: &FieldPath) -> Vec<String> {
    let env = items(c.get("env"));
    let mut w = Vec::new();
    if env.len() < 2 {
        return w;
    }
    let mut seen = BTreeSet::new();
    for (i, e) in env.iter().enumerate() {
        let name = str_at(e, "/name");
        if seen.insert(name) {
            continue;
        }
        let reference = format!("$({name})");
        let value = str_at(e, "/value");
        let hides = e.get("valueFrom").is_some_and(|v| !v.is_null())
            || value == reference
            || !value.contains(&reference);
        if hides {
            w.push(format!(
                "{}: hides previous definition of {name:?}, which may be dropped when using apply",
                path.child("env").index(i)
            ));
        }
    }
    w
}

struct PortAt {
    path: FieldPath,
    host_ip: String,
    host_port: i64,
}

/// Ports defined twice across the pod's containers, and host IPs without a
/// host port.
fn port_warnings(containers: &[(&Value, FieldPath)]) -> Vec<String> {
    let mut w = Vec::new();
    let mut all: HashMap<String, Vec<PortAt>> = HashMap::new();
    for (c, path) in containers {
        for (i, p) in items(c.get("ports")).iter().enumerate() {
            let here = path.child("ports").index(i);
            let host_ip = str_at(p, "/hostIP").to_owned();
            let host_port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let container_port = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            let protocol = str_at(p, "/protocol");
            if !host_ip.is_empty() && host_port == 0 {
                w.push(format!(
                    "{here}: hostIP set without hostPort: {{Name:{} HostPort:{host_port} ContainerPort:{container_port} Protocol:{protocol} HostIP:{host_ip}}}",
                    str_at(p, "/name")
                ));
            }
            let others = all
                .entry(format!("{container_port}/{protocol}"))
                .or_default();
            for other in others.iter() {
                if host_ip == other.host_ip && host_port == other.host_port {
                    w.push(format!(
                        "{here}: duplicate port definition with {}",
                        other.path
                    ));
                } else if host_port == 0 || other.host_port == 0 {
                    w.push(format!(
                        "{here}: overlapping port definition with {}",
                        other.path
                    ));
                } else if host_port == other.host_port
                    && (host_ip.is_empty() != other.host_ip.is_empty())
                {
                    w.push(format!(
                        "{here}: dangerously ambiguous port definition with {}",
                        other.path
                    ));
                }
            }
            others.push(PortAt {
                path: here,
                host_ip,
                host_port,
            });
        }
    }
    w
}

/// A claim spec's warnings (upstream's `GetWarningsForPersistentVolumeClaimSpec`):
/// a storage request or limit with a fraction of a byte.
pub(crate) fn claim_spec_warnings(spec: &Value, path: &FieldPath) -> Vec<String> {
    let mut w = Vec::new();
    for list in ["requests", "limits"] {
        let q = spec.pointer(&format!("/resources/{list}/storage"));
        if let Some(msg) = fractional(q) {
            w.push(format!(
                "{}: {msg}",
                path.child("resources").child(list).key("storage")
            ));
        }
    }
    w
}

/// Projected files that share a path with a projected service account token.
fn projected_token_paths(volumes: &[Value], spec_path: &FieldPath) -> Vec<String> {
    let sources = |v: &Value| items(v.pointer("/projected/sources")).to_vec();
    let tokens: BTreeSet<String> = volumes
        .iter()
        .flat_map(sources)
        .filter_map(|s| {
            s.pointer("/serviceAccountToken/path")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    let mut w = Vec::new();
    if tokens.is_empty() {
        return w;
    }
    for (i, v) in volumes.iter().enumerate() {
        let path = spec_path
            .child("volumes")
            .index(i)
            .child("projected")
            .child("sources");
        for s in items(v.pointer("/projected/sources")) {
            for (source, name) in [
                ("configMap", "configMap"),
                ("secret", "secrets"),
                ("downwardAPI", "downwardAPI"),
            ] {
                for (j, item) in items(s.get(source).and_then(|x| x.get("items")))
                    .iter()
                    .enumerate()
                {
                    let p = str_at(item, "/path");
                    if tokens.contains(p) {
                        w.push(format!(
                            "{}: has duplicated path with ServiceAccountToken {p:?}",
                            path.child(name).index(j)
                        ));
                    }
                }
            }
            if let Some(p) = s
                .pointer("/clusterTrustBundle/path")
                .and_then(Value::as_str)
            {
                if tokens.contains(p) {
                    w.push(format!(
                        "{}: has duplicated path with ServiceAccountToken {p:?}",
                        path.child("ClusterTrustBundle")
                    ));
                }
            }
        }
    }
    w
}

#[cfg(test)]
#[path = "pod_warnings_tests.rs"]
mod tests;
