//! The Pod Security Standards checks (upstream `k8s.io/pod-security-admission/policy`),
//! latest version: baseline, then restricted, each in upstream's order, with
//! upstream's reasons and details. A check returns `(reason, detail)`.

use serde_json::Value;

type Violation = (String, String);

/// Every container of the pod spec with its list name.
fn containers(spec: &Value) -> Vec<&Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|l| spec.get(*l).and_then(Value::as_array).into_iter().flatten())
        .collect()
}

fn cname(c: &Value) -> String {
    format!("{:?}", c.get("name").and_then(Value::as_str).unwrap_or(""))
}

/// `container "a"` / `containers "a", "b"`.
fn noun(names: &[String], one: &str, many: &str) -> String {
    if names.len() == 1 {
        format!("{one} {}", names[0])
    } else {
        format!("{many} {}", names.join(", "))
    }
}

/// Who set a forbidden pod-level or container-level field: "pod", "container
/// x", "pod and containers x, y"; `None` when nobody did.
fn pod_and_containers(pod: bool, containers: &[String]) -> Option<String> {
    match (pod, containers.is_empty()) {
        (false, true) => None,
        (true, true) => Some("pod".to_owned()),
        (true, false) => Some(format!(
            "pod and {}",
            noun(containers, "container", "containers")
        )),
        (false, false) => Some(noun(containers, "container", "containers")),
    }
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sc<'a>(c: &'a Value, field: &str) -> Option<&'a Value> {
    c.pointer(&format!("/securityContext/{field}"))
}

const BASELINE_CAPS: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];
const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn caps(c: &Value, list: &str) -> Vec<String> {
    sc(c, &format!("capabilities/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn baseline(spec: &Value, out: &mut Vec<Violation>) {
    let cs = containers(spec);
    // capabilities_baseline
    let (mut who, mut what) = (Vec::new(), Vec::new());
    for c in &cs {
        let bad: Vec<String> = caps(c, "add")
            .into_iter()
            .filter(|k| !BASELINE_CAPS.contains(&k.as_str()))
            .collect();
        if !bad.is_empty() {
            who.push(cname(c));
            for b in bad {
                if !what.contains(&b) {
                    what.push(b);
                }
            }
        }
    }
    if !who.is_empty() {
        let detail = format!(
            "{} must not include {} in securityContext.capabilities.add",
            noun(&who, "container", "containers"),
            quoted(&what)
        );
        out.push(("non-default capabilities".into(), detail));
    }
    // hostNamespaces
    let host: Vec<&str> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|f| spec.get(*f).and_then(Value::as_bool) == Some(true))
        .collect();
    if !host.is_empty() {
        let d: Vec<String> = host.iter().map(|h| format!("{h}=true")).collect();
        out.push(("host namespaces".into(), d.join(", ")));
    }
    // hostPathVolumes
    let volumes: Vec<&Value> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let host_paths: Vec<String> = volumes
        .iter()
        .filter(|v| v.get("hostPath").is_some())
        .map(|v| format!("{:?}", v.get("name").and_then(Value::as_str).unwrap_or("")))
        .collect();
    if !host_paths.is_empty() {
        out.push((
            "hostPath volumes".into(),
            noun(&host_paths, "volume", "volumes"),
        ));
    }
    // hostPorts
    let (mut who, mut ports) = (Vec::new(), Vec::new());
    for c in &cs {
        let ps: Vec<i64> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .collect();
        if !ps.is_empty() {
            who.push(cname(c));
            ports.extend(ps.iter().map(i64::to_string));
        }
    }
    if !who.is_empty() {
        let (verb, noun_p) = if who.len() == 1 && ports.len() == 1 {
            ("uses", "hostPort")
        } else if who.len() == 1 {
            ("uses", "hostPorts")
        } else {
            ("use", "hostPorts")
        };
        out.push((
            "hostPort".into(),
            format!(
                "{} {verb} {noun_p} {}",
                noun(&who, "container", "containers"),
                ports.join(", ")
            ),
        ));
    }
    // privileged
    let who: Vec<String> = cs
        .iter()
        .filter(|c| sc(c, "privileged").and_then(Value::as_bool) == Some(true))
        .map(|c| cname(c))
        .collect();
    if !who.is_empty() {
        out.push((
            "privileged".into(),
            format!(
                "{} must not set securityContext.privileged=true",
                noun(&who, "container", "containers")
            ),
        ));
    }
    // procMount
    let who: Vec<String> = cs
        .iter()
        .filter(|c| {
            sc(c, "procMount")
                .and_then(Value::as_str)
                .is_some_and(|p| p != "Default")
        })
        .map(|c| cname(c))
        .collect();
    if !who.is_empty() {
        out.push((
            "procMount".into(),
            format!(
                "{} must not set securityContext.procMount to \"Unmasked\"",
                noun(&who, "container", "containers")
            ),
        ));
    }
    // seLinuxOptions
    let bad_selinux = |v: Option<&Value>| {
        v.is_some_and(|o| {
            let t = o.get("type").and_then(Value::as_str).unwrap_or("");
            !SELINUX_TYPES.contains(&t)
                || o.get("user")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
                || o.get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
        })
    };
    let pod_bad = bad_selinux(spec.pointer("/securityContext/seLinuxOptions"));
    let who: Vec<String> = cs
        .iter()
        .filter(|c| bad_selinux(sc(c, "seLinuxOptions")))
        .map(|c| cname(c))
        .collect();
    if let Some(subject) = pod_and_containers(pod_bad, &who) {
        out.push((
            "seLinuxOptions".into(),
            format!("{subject} set forbidden securityContext.seLinuxOptions"),
        ));
    }
    // seccompProfile_baseline
    seccomp(spec, &cs, false, out);
    // sysctls
    let bad: Vec<String> = spec
        .pointer("/securityContext/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !SAFE_SYSCTLS.contains(n))
        .map(str::to_owned)
        .collect();
    if !bad.is_empty() {
        out.push(("forbidden sysctls".into(), bad.join(", ")));
    }
    // windowsHostProcess
    let hp = |v: Option<&Value>| v.and_then(Value::as_bool) == Some(true);
    let pod_hp = hp(spec.pointer("/securityContext/windowsOptions/hostProcess"));
    let who: Vec<String> = cs
        .iter()
        .filter(|c| hp(sc(c, "windowsOptions/hostProcess")))
        .map(|c| cname(c))
        .collect();
    if let Some(subject) = pod_and_containers(pod_hp, &who) {
        out.push((
            "hostProcess".into(),
            format!("{subject} must not set securityContext.windowsOptions.hostProcess=true"),
        ));
    }
}

fn seccomp(spec: &Value, cs: &[&Value], restricted: bool, out: &mut Vec<Violation>) {
    let kind = |v: Option<&Value>| {
        v.and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let pod = kind(spec.pointer("/securityContext/seccompProfile"));
    let allowed = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut details = Vec::new();
    if let Some(t) = &pod {
        if t == "Unconfined" || (restricted && !allowed(t)) {
            details.push(format!(
                "pod must not set securityContext.seccompProfile.type to {t:?}"
            ));
        }
    }
    let mut bad = Vec::new();
    let mut unset = Vec::new();
    for c in cs {
        match kind(sc(c, "seccompProfile")) {
            Some(t) if t == "Unconfined" || (restricted && !allowed(&t)) => bad.push((cname(c), t)),
            Some(_) => {}
            None => unset.push(cname(c)),
        }
    }
    if !bad.is_empty() {
        let names: Vec<String> = bad.iter().map(|(n, _)| n.clone()).collect();
        let types: Vec<String> = bad.iter().map(|(_, t)| t.clone()).collect();
        details.push(format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            noun(&names, "container", "containers"),
            quoted(&types)
        ));
    }
    let pod_ok = pod.as_deref().is_some_and(allowed);
    if restricted && !pod_ok && !unset.is_empty() {
        let subject = if pod.is_none() {
            noun(&unset, "pod or container", "pod or containers")
        } else {
            noun(&unset, "container", "containers")
        };
        details.push(format!("{subject} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\""));
    }
    if !details.is_empty() {
        out.push(("seccompProfile".into(), details.join("; ")));
    }
}

fn restricted(spec: &Value, out: &mut Vec<Violation>) {
    let cs = containers(spec);
    // allowPrivilegeEscalation
    let who: Vec<String> = cs
        .iter()
        .filter(|c| sc(c, "allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false))
        .map(|c| cname(c))
        .collect();
    if !who.is_empty() {
        out.push((
            "allowPrivilegeEscalation != false".into(),
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                noun(&who, "container", "containers")
            ),
        ));
    }
    // capabilities_restricted
    let mut details = Vec::new();
    let no_drop: Vec<String> = cs
        .iter()
        .filter(|c| !caps(c, "drop").iter().any(|d| d == "ALL"))
        .map(|c| cname(c))
        .collect();
    if !no_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            noun(&no_drop, "container", "containers")
        ));
    }
    let (mut who, mut what) = (Vec::new(), Vec::new());
    for c in &cs {
        let bad: Vec<String> = caps(c, "add")
            .into_iter()
            .filter(|k| k != "NET_BIND_SERVICE")
            .collect();
        if !bad.is_empty() {
            who.push(cname(c));
            for b in bad {
                if !what.contains(&b) {
                    what.push(b);
                }
            }
        }
    }
    if !who.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            noun(&who, "container", "containers"),
            quoted(&what)
        ));
    }
    if !details.is_empty() {
        out.push(("unrestricted capabilities".into(), details.join("; ")));
    }
    // restrictedVolumes
    let (mut names, mut types) = (Vec::new(), Vec::new());
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(obj) = v.as_object() else { continue };
        if let Some(t) = obj
            .keys()
            .find(|k| *k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()))
        {
            names.push(format!(
                "{:?}",
                obj.get("name").and_then(Value::as_str).unwrap_or("")
            ));
            if !types.contains(t) {
                types.push(t.clone());
            }
        }
    }
    if !names.is_empty() {
        let d = if names.len() == 1 {
            format!(
                "volume {} uses restricted volume type {}",
                names[0],
                quoted(&types)
            )
        } else {
            format!(
                "volumes {} use restricted volume type{} {}",
                names.join(", "),
                if types.len() > 1 { "s" } else { "" },
                quoted(&types)
            )
        };
        out.push(("restricted volume types".into(), d));
    }
    // runAsNonRoot
    let pod = spec
        .pointer("/securityContext/runAsNonRoot")
        .and_then(Value::as_bool);
    let mut details = Vec::new();
    if pod == Some(false) {
        details.push("pod must not set securityContext.runAsNonRoot=false".to_owned());
    }
    let explicit_false: Vec<String> = cs
        .iter()
        .filter(|c| sc(c, "runAsNonRoot").and_then(Value::as_bool) == Some(false))
        .map(|c| cname(c))
        .collect();
    if !explicit_false.is_empty() {
        details.push(format!(
            "{} must not set securityContext.runAsNonRoot=false",
            noun(&explicit_false, "container", "containers")
        ));
    }
    if pod != Some(true) {
        let unset: Vec<String> = cs
            .iter()
            .filter(|c| sc(c, "runAsNonRoot").is_none_or(Value::is_null))
            .map(|c| cname(c))
            .collect();
        if !unset.is_empty() {
            let subject = if pod.is_none() {
                noun(&unset, "pod or container", "pod or containers")
            } else {
                noun(&unset, "container", "containers")
            };
            details.push(format!(
                "{subject} must set securityContext.runAsNonRoot=true"
            ));
        }
    }
    if !details.is_empty() {
        out.push(("runAsNonRoot != true".into(), details.join("; ")));
    }
    // runAsUser
    let mut details = Vec::new();
    if spec
        .pointer("/securityContext/runAsUser")
        .and_then(Value::as_i64)
        == Some(0)
    {
        details.push("pod must not set runAsUser=0".to_owned());
    }
    let who: Vec<String> = cs
        .iter()
        .filter(|c| sc(c, "runAsUser").and_then(Value::as_i64) == Some(0))
        .map(|c| cname(c))
        .collect();
    if !who.is_empty() {
        details.push(format!(
            "{} must not set runAsUser=0",
            noun(&who, "container", "containers")
        ));
    }
    if !details.is_empty() {
        out.push(("runAsUser=0".into(), details.join("; ")));
    }
    // seccompProfile_restricted
    seccomp(spec, &cs, true, out);
}

/// The violations of `spec` (a pod spec) at `level`.
pub fn check(level: &str, spec: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    match level {
        "baseline" => baseline(spec, &mut out),
        "restricted" => {
            baseline(spec, &mut out);
            // Restricted replaces the baseline seccomp, capability and hostPath checks.
            out.retain(|(r, _)| {
                !matches!(
                    r.as_str(),
                    "seccompProfile" | "non-default capabilities" | "hostPath volumes"
                )
            });
            restricted(spec, &mut out);
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(level: &str, spec: Value, name: &str) -> Option<String> {
        check(level, &spec)
            .into_iter()
            .find(|(r, _)| r == name)
            .map(|(_, m)| m)
    }

    #[test]
    fn pod_and_container_settings_name_who_set_them() {
        let selinux = json!({"type": "spc_t"});
        let c = |name: &str, sc: Value| json!({"name": name, "securityContext": sc});
        let pod_only = json!({"securityContext": {"seLinuxOptions": selinux},
                              "containers": [c("a", json!({}))]});
        assert_eq!(
            reason("baseline", pod_only, "seLinuxOptions").as_deref(),
            Some("pod set forbidden securityContext.seLinuxOptions")
        );
        let both = json!({"securityContext": {"seLinuxOptions": selinux},
                          "containers": [c("a", json!({"seLinuxOptions": selinux})),
                                         c("b", json!({"seLinuxOptions": selinux}))]});
        assert_eq!(
            reason("baseline", both, "seLinuxOptions").as_deref(),
            Some("pod and containers \"a\", \"b\" set forbidden securityContext.seLinuxOptions")
        );
        let host = json!({"windowsOptions": {"hostProcess": true}});
        let one = json!({"containers": [c("a", host.clone()), c("b", json!({}))]});
        assert_eq!(
            reason("baseline", one, "hostProcess").as_deref(),
            Some("container \"a\" must not set securityContext.windowsOptions.hostProcess=true")
        );
        let none = json!({"containers": [c("a", json!({}))]});
        assert_eq!(reason("baseline", none.clone(), "seLinuxOptions"), None);
        assert_eq!(reason("baseline", none, "hostProcess"), None);
    }
}
