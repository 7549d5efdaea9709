//! Warnings of kinds other than pods and their templates (upstream's
//! `GetWarningsFor*` of services, volumes, storage and runtime classes, and
//! the ingress strategy's): deprecated annotations and node labels, fields
//! the object's type ignores, IP addresses in a form a later release refuses,
//! fractional byte quantities.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use kapi_machinery::validation::FieldPath;
use serde_json::Value;

use super::pod_warnings::{claim_spec_warnings, items, node_label_note, node_selector_term};
use super::util::str_at;

const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const MOUNT_OPTIONS: &str = "volume.beta.kubernetes.io/mount-options";
const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const INGRESS_CLASS: &str = "kubernetes.io/ingress.class";

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/annotations")?.get(key)
}

/// The two warning methods of a strategy whose updates warn as its creates
/// do, on the new object (inside its `impl Strategy`): `$f` gives them.
macro_rules! warning_methods {
    ($f:path) => {
        fn warnings_on_create(&self, obj: &serde_json::Value) -> Vec<String> {
            $f(obj)
        }

        fn warnings_on_update(
            &self,
            new: &serde_json::Value,
            _old: &serde_json::Value,
        ) -> Vec<String> {
            $f(new)
        }
    };
}
pub(crate) use warning_methods;

/// An IPv4 address as Go's sloppy parser reads it: four decimal parts,
/// leading zeros allowed.
pub(crate) fn sloppy_v4(value: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u8> = value
        .split('.')
        .map(|p| {
            (!p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u16>().ok().filter(|n| *n <= 255).map(|n| n as u8))
                .flatten()
        })
        .collect::<Option<_>>()?;
    <[u8; 4]>::try_from(parts).ok().map(Ipv4Addr::from)
}

/// Upstream's `GetWarningsForIP`: an address a strict parser refuses (leading
/// zeros, an IPv4-mapped IPv6 address) or an IPv6 address not in RFC 5952
/// form is accepted with a warning naming its standard form.
pub fn ip_warnings(path: &FieldPath, value: &str) -> Vec<String> {
    let standard = match value.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => Err(v4.to_string()),
            None => Ok(v6.to_string()),
        },
        Ok(IpAddr::V4(_)) => Ok(value.to_owned()),
        Err(_) => match sloppy_v4(value) {
            Some(v4) => Err(v4.to_string()),
            None => return Vec::new(),
        },
    };
    match standard {
        Err(use_instead) => vec![format!(
            "{path}: non-standard IP address {value:?} will be considered invalid in a future Kubernetes release: use {use_instead:?}"
        )],
        Ok(canonical) if canonical != value => vec![format!(
            "{path}: IPv6 address {value:?} should be in RFC 5952 canonical format ({canonical:?})"
        )],
        Ok(_) => Vec::new(),
    }
}

/// Upstream's `GetWarningsForCIDR`: a CIDR with bits set beyond its prefix
/// (ambiguous: a subnet or one address?), one a strict parser refuses
/// (leading zeros), or an IPv6 one not in RFC 5952 form.
pub fn cidr_warnings(path: &FieldPath, value: &str) -> Vec<String> {
    let Some((ip_text, len_text)) = value.split_once('/') else {
        return Vec::new();
    };
    let Ok(len) = len_text.parse::<u8>() else {
        return Vec::new();
    };
    let (ip, strict) = match ip_text.parse::<IpAddr>() {
        Ok(ip) => (ip, true),
        Err(_) => match sloppy_v4(ip_text) {
            Some(v4) => (IpAddr::V4(v4), false),
            None => return Vec::new(),
        },
    };
    let bits: u8 = if ip.is_ipv4() { 32 } else { 128 };
    if len > bits {
        return Vec::new();
    }
    let network = match ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(u32::from(32 - len)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(u32::from(128 - len)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    };
    let mut w = Vec::new();
    if network != ip {
        w.push(format!(
            "{path}: CIDR value {value:?} is ambiguous in this context (should be \"{network}/{len}\" or \"{ip}/{bits}\"?)"
        ));
    }
    if !strict {
        w.push(format!(
            "{path}: non-standard CIDR value {value:?} will be considered invalid in a future Kubernetes release: use \"{network}/{len}\""
        ));
    }
    if w.is_empty() {
        if let IpAddr::V6(v6) = ip {
            let canonical = format!("{v6}/{len}");
            if canonical != value {
                w.push(format!(
                    "{path}: IPv6 CIDR value {value:?} should be in RFC 5952 canonical format ({canonical:?})"
                ));
            }
        }
    }
    w
}

/// A NetworkPolicy's warnings: its IP blocks' CIDRs, ingress then egress.
pub fn network_policy_warnings(np: &Value) -> Vec<String> {
    let mut w = Vec::new();
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(np.pointer(&format!("/spec/{rules}")))
            .iter()
            .enumerate()
        {
            for (j, peer) in items(rule.get(peers)).iter().enumerate() {
                let Some(block) = peer.get("ipBlock").filter(|b| b.is_object()) else {
                    continue;
                };
                let path = FieldPath::new("spec")
                    .child(rules)
                    .index(i)
                    .child(peers)
                    .index(j)
                    .child("ipBlock");
                if let Some(cidr) = block.get("cidr").and_then(Value::as_str) {
                    w.extend(cidr_warnings(&path.child("cidr"), cidr));
                }
                for (k, except) in items(block.get("except")).iter().enumerate() {
                    if let Some(cidr) = except.as_str() {
                        w.extend(cidr_warnings(&path.child("except").index(k), cidr));
                    }
                }
            }
        }
    }
    w
}

/// A Service's warnings, on create and on update.
pub fn service_warnings(svc: &Value) -> Vec<String> {
    let mut w = Vec::new();
    if annotation(svc, TOPOLOGY_HINTS).is_some() {
        w.push(format!(
            "annotation {TOPOLOGY_HINTS} is deprecated, please use service.kubernetes.io/topology-mode instead"
        ));
    }
    let spec = FieldPath::new("spec");
    let cluster_ip = str_at(svc, "/spec/clusterIP");
    if !cluster_ip.is_empty() && cluster_ip != "None" {
        for (i, ip) in items(svc.pointer("/spec/clusterIPs")).iter().enumerate() {
            if let Some(ip) = ip.as_str() {
                w.extend(ip_warnings(&spec.child("clusterIPs").index(i), ip));
            }
        }
    }
    let external_ips = items(svc.pointer("/spec/externalIPs"));
    for (i, ip) in external_ips.iter().enumerate() {
        if let Some(ip) = ip.as_str() {
            w.extend(ip_warnings(&spec.child("externalIPs").index(i), ip));
        }
    }
    let lb_ip = str_at(svc, "/spec/loadBalancerIP");
    if !lb_ip.is_empty() {
        w.extend(ip_warnings(&spec.child("loadBalancerIP"), lb_ip));
    }
    for (i, cidr) in items(svc.pointer("/spec/loadBalancerSourceRanges"))
        .iter()
        .enumerate()
    {
        if let Some(cidr) = cidr.as_str() {
            w.extend(cidr_warnings(
                &spec.child("loadBalancerSourceRanges").index(i),
                cidr,
            ));
        }
    }
    let external_name_type = str_at(svc, "/spec/type") == "ExternalName";
    if external_name_type && !external_ips.is_empty() {
        w.push("spec.externalIPs is ignored when spec.type is \"ExternalName\"".into());
    }
    if !external_name_type && !str_at(svc, "/spec/externalName").is_empty() {
        w.push("spec.externalName is ignored when spec.type is not \"ExternalName\"".into());
    }
    w
}

fn storage_class_annotation(obj: &Value, w: &mut Vec<String>) {
    if annotation(obj, BETA_STORAGE_CLASS).is_some() {
        w.push(format!(
            "metadata.annotations[{BETA_STORAGE_CLASS}]: deprecated since v1.8; use \"storageClassName\" attribute instead"
        ));
    }
}

/// A PersistentVolumeClaim's warnings, on create and on update.
pub fn claim_warnings(pvc: &Value) -> Vec<String> {
    let mut w = Vec::new();
    storage_class_annotation(pvc, &mut w);
    if let Some(spec) = pvc.get("spec") {
        w.extend(claim_spec_warnings(spec, &FieldPath::new("spec")));
    }
    w
}

/// Volume plugins of a PersistentVolume deprecated or removed.
const DEPRECATED_PV_SOURCES: &[(&str, &str, &str)] = &[
    (
        "cephfs",
        "cephfs",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    (
        "scaleIO",
        "scaleIO",
        "deprecated in v1.16, non-functional in v1.22+",
    ),
    (
        "storageos",
        "storageOS",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "glusterfs",
        "glusterfs",
        "deprecated in v1.25, non-functional in v1.26+",
    ),
    (
        "rbd",
        "rbd",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
];

/// A PersistentVolume's warnings, on create and on update.
pub fn volume_warnings(pv: &Value) -> Vec<String> {
    let mut w = Vec::new();
    storage_class_annotation(pv, &mut w);
    if annotation(pv, MOUNT_OPTIONS).is_some() {
        w.push(format!(
            "metadata.annotations[{MOUNT_OPTIONS}]: deprecated since v1.31; use \"mountOptions\" attribute instead"
        ));
    }
    let Some(spec) = pv.get("spec") else {
        return w;
    };
    if spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        == Some("Recycle")
    {
        w.push("spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.".into());
    }
    let terms_path = FieldPath::new("spec")
        .child("nodeAffinity")
        .child("required")
        .child("nodeSelectorTerms");
    let terms = spec.pointer("/nodeAffinity/required/nodeSelectorTerms");
    for (i, term) in items(terms).iter().enumerate() {
        w.extend(node_selector_term(term, &terms_path.index(i)));
    }
    for (field, name, msg) in DEPRECATED_PV_SOURCES {
        if spec.get(*field).is_some_and(|s| !s.is_null()) {
            w.push(format!("spec.{name}: {msg}"));
        }
    }
    w
}

/// A StorageClass's warnings: deprecated node labels in its topologies.
pub fn storage_class_warnings(sc: &Value) -> Vec<String> {
    let mut w = Vec::new();
    for (i, t) in items(sc.get("allowedTopologies")).iter().enumerate() {
        for (j, e) in items(t.get("matchLabelExpressions")).iter().enumerate() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            if let Some(msg) = node_label_note(key) {
                let path = FieldPath::new("allowedTopologies")
                    .index(i)
                    .child("matchLabelExpressions")
                    .index(j)
                    .child("key");
                w.push(format!("{path}: {msg}"));
            }
        }
    }
    w
}

/// A RuntimeClass's warnings: deprecated node labels in its node selector.
pub fn runtime_class_warnings(rc: &Value) -> Vec<String> {
    rc.pointer("/scheduling/nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(|k| node_label_note(k))
        .map(|msg| format!("scheduling.nodeSelector: {msg}"))
        .collect()
}

/// An Ingress's warning on create: the class annotation it replaced.
pub fn ingress_warnings(ing: &Value) -> Vec<String> {
    annotation(ing, INGRESS_CLASS)
        .map(|_| {
            format!("annotation {INGRESS_CLASS:?} is deprecated, please use 'spec.ingressClassName' instead")
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(value: &str) -> Vec<String> {
        ip_warnings(&FieldPath::new("spec").child("loadBalancerIP"), value)
    }

    #[test]
    fn addresses_in_a_form_a_strict_parser_refuses_are_named_in_standard_form() {
        assert!(ip("1.2.3.4").is_empty());
        assert!(ip("2001:db8::1").is_empty());
        assert_eq!(
            ip("010.002.3.4"),
            ["spec.loadBalancerIP: non-standard IP address \"010.002.3.4\" will be considered invalid in a future Kubernetes release: use \"10.2.3.4\""]
        );
        assert_eq!(
            ip("::ffff:1.2.3.4"),
            ["spec.loadBalancerIP: non-standard IP address \"::ffff:1.2.3.4\" will be considered invalid in a future Kubernetes release: use \"1.2.3.4\""]
        );
        assert_eq!(
            ip("2001:DB8:0:0:0:0:0:1"),
            ["spec.loadBalancerIP: IPv6 address \"2001:DB8:0:0:0:0:0:1\" should be in RFC 5952 canonical format (\"2001:db8::1\")"]
        );
        assert!(ip("not an address").is_empty());
    }

    fn cidr(value: &str) -> Vec<String> {
        cidr_warnings(&FieldPath::new("cidr"), value)
    }

    #[test]
    fn cidrs_with_host_bits_or_in_a_non_standard_form_are_named() {
        assert!(cidr("10.0.0.0/8").is_empty());
        assert!(cidr("2001:db8::/32").is_empty());
        assert_eq!(
            cidr("10.0.0.1/8"),
            ["cidr: CIDR value \"10.0.0.1/8\" is ambiguous in this context (should be \"10.0.0.0/8\" or \"10.0.0.1/32\"?)"]
        );
        assert_eq!(
            cidr("010.0.0.0/8"),
            ["cidr: non-standard CIDR value \"010.0.0.0/8\" will be considered invalid in a future Kubernetes release: use \"10.0.0.0/8\""]
        );
        assert_eq!(
            cidr("2001:DB8::/32"),
            ["cidr: IPv6 CIDR value \"2001:DB8::/32\" should be in RFC 5952 canonical format (\"2001:db8::/32\")"]
        );
    }
}
