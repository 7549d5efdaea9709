//! Nodes: `allocatable` defaults to `capacity`, taint validation, pod CIDRs that may
//! only go from unset to set, the `spec.unschedulable` field selector and the
//! `NAME STATUS ROLES AGE VERSION` table (roles from `node-role.kubernetes.io/*`).
//!
//! Where to look next: `registry.rs` (nodes are cluster-scoped, stored under `/minions`).

use kapi_machinery::validation::{is_qualified_name, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::podspec_validation::validate_enum;
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{arr_at, bool_at, child_obj, obj_at, set_default, str_at};

pub struct NodeStrategy;

/// v1's `podCIDR` and `podCIDRs` are one internal field: a lone `podCIDR` becomes
/// the list, and `podCIDR` always reads back as the list's first entry.
fn mirror_pod_cidrs(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    let single = str_at(spec, "/podCIDR").to_string();
    if arr_at(spec, "/podCIDRs").is_empty() && !single.is_empty() {
        spec["podCIDRs"] = json!([single]);
    }
    if let Some(first) = arr_at(spec, "/podCIDRs").first().cloned() {
        spec["podCIDR"] = first;
    }
}

/// `NodeSystemInfo`'s string fields, each written even when empty.
const NODE_INFO_FIELDS: [&str; 10] = [
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
];

impl Strategy for NodeStrategy {
    fn default(&self, obj: &mut Value) {
        mirror_pod_cidrs(obj);
        let capacity = obj.pointer("/status/capacity").cloned();
        if let (Some(capacity), Some(status)) = (capacity, child_obj(obj, "status")) {
            set_default(status, "allocatable", capacity);
        }
        // Non-pointer structs and fields without omitempty: Go always writes them.
        child_obj(obj, "spec");
        if let Some(status) = child_obj(obj, "status") {
            if let Some(daemon) = child_obj(status, "daemonEndpoints") {
                if let Some(kubelet) = child_obj(daemon, "kubeletEndpoint") {
                    set_default(kubelet, "Port", json!(0));
                }
            }
            if let Some(info) = child_obj(status, "nodeInfo") {
                for field in NODE_INFO_FIELDS {
                    set_default(info, field, json!(""));
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let path = FieldPath::new("spec").child("taints");
        for (i, taint) in arr_at(obj, "/spec/taints").iter().enumerate() {
            let key = str_at(taint, "/key");
            for msg in is_qualified_name(key) {
                errs.push(FieldError::invalid(&path.index(i).child("key"), key, msg));
            }
            let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
            errs.extend(validate_enum(
                taint.get("effect"),
                &effects,
                &path.index(i).child("effect"),
            ));
        }
        let cidrs = FieldPath::new("spec").child("podCIDRs");
        for (i, cidr) in arr_at(obj, "/spec/podCIDRs").iter().enumerate() {
            let cidr = cidr.as_str().unwrap_or("");
            if crate::networking::networkpolicy::parse_cidr(cidr).is_none() {
                errs.push(FieldError::invalid(
                    &cidrs.index(i),
                    cidr,
                    crate::networking::networkpolicy::CIDR_MSG,
                ));
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        let old_cidrs = arr_at(old, "/spec/podCIDRs");
        if !old_cidrs.is_empty() && old_cidrs != arr_at(new, "/spec/podCIDRs") {
            let msg = "node updates may not change podCIDR except from \"\" to valid";
            errs.push(FieldError::forbidden(
                &FieldPath::new("spec").child("podCIDRs"),
                msg,
            ));
        }
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "spec.unschedulable").then(|| bool_at(obj, "/spec/unschedulable").to_string())
    }

    fn columns(&self) -> Vec<Column> {
        let addresses = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses";
        vec![
            name_column(),
            string_column("Status", "The status of the node"),
            string_column("Roles", "The roles of the node"),
            age_column(),
            string_column("Version", "Kubelet Version reported by the node."),
            string_column("Internal-IP", addresses).wide(),
            string_column("External-IP", addresses).wide(),
            string_column("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).").wide(),
            string_column("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).").wide(),
            string_column("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let info = |k: &str| match str_at(obj, &format!("/status/nodeInfo/{k}")) {
            "" => "<unknown>".to_string(),
            v => v.to_string(),
        };
        vec![
            name_cell(obj),
            json!(node_status(obj)),
            json!(node_roles(obj)),
            age_cell(obj),
            json!(str_at(obj, "/status/nodeInfo/kubeletVersion")),
            json!(address(obj, "InternalIP")),
            json!(address(obj, "ExternalIP")),
            json!(info("osImage")),
            json!(info("kernelVersion")),
            json!(info("containerRuntimeVersion")),
        ]
    }
}

fn node_status(obj: &Value) -> String {
    let ready = arr_at(obj, "/status/conditions")
        .iter()
        .rev()
        .find(|c| str_at(c, "/type") == "Ready");
    let mut status = vec![match ready {
        Some(c) if str_at(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if bool_at(obj, "/spec/unschedulable") {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

fn node_roles(obj: &Value) -> String {
    let mut roles: Vec<&str> = obj_at(obj, "/metadata/labels")
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            Some(_) => None,
            None if k == "kubernetes.io/role" => v.as_str().filter(|r| !r.is_empty()),
            None => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    }
}

fn address(obj: &Value, type_: &str) -> String {
    arr_at(obj, "/status/addresses")
        .iter()
        .find(|a| str_at(a, "/type") == type_)
        .map_or("<none>".to_string(), |a| str_at(a, "/address").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_cidrs_mirror_validate_and_stay() {
        let mut n = json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "bad"}});
        NodeStrategy.default(&mut n);
        assert_eq!(n["spec"]["podCIDRs"], json!(["bad"]));
        let errs: Vec<String> = NodeStrategy
            .validate(&n)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, ["spec.podCIDRs[0]: Invalid value: \"bad\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]);
        let mut old = json!({"spec": {"podCIDR": "10.1.0.0/24"}});
        NodeStrategy.default(&mut old);
        let mut new = json!({"spec": {"podCIDRs": ["10.2.0.0/24"]}});
        NodeStrategy.default(&mut new);
        assert_eq!(new["spec"]["podCIDR"], "10.2.0.0/24");
        let errs: Vec<String> = NodeStrategy
            .validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, ["spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid"]);
    }

    fn node() -> Value {
        json!({
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master"}},
            "spec": {"unschedulable": true},
            "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian"}}
        })
    }

    #[test]
    fn defaults_allocatable() {
        let mut n = node();
        NodeStrategy.default(&mut n);
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "4"}));
        // What Go writes of an empty status.
        let mut bare = json!({"metadata": {"name": "n"}});
        NodeStrategy.default(&mut bare);
        assert_eq!(bare["spec"], json!({}));
        assert_eq!(
            bare["status"]["daemonEndpoints"],
            json!({"kubeletEndpoint": {"Port": 0}})
        );
        assert_eq!(bare["status"]["nodeInfo"]["kubeletVersion"], "");
        assert_eq!(bare["status"]["nodeInfo"].as_object().unwrap().len(), 10);
    }

    #[test]
    fn table_cells() {
        let cells = NodeStrategy.cells(&node());
        assert_eq!(cells[1], "Ready,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane,master");
        assert_eq!(cells[4], "v1.33.0");
        assert_eq!(cells[5], "10.0.0.5");
        assert_eq!(cells[6], "<none>");
        assert_eq!(cells[7], "Debian");
        assert_eq!(cells[8], "<unknown>");
        assert_eq!(NodeStrategy.cells(&json!({}))[1], "Unknown");
    }

    #[test]
    fn field_value_and_validation() {
        assert_eq!(
            NodeStrategy
                .field_value(&node(), "spec.unschedulable")
                .unwrap(),
            "true"
        );
        assert_eq!(
            NodeStrategy
                .field_value(&json!({}), "spec.unschedulable")
                .unwrap(),
            "false"
        );
        let bad = json!({"spec": {"taints": [{"key": "a", "effect": "Sometimes"}]}});
        let errs: Vec<String> = NodeStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""]);
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"]}});
        let new = json!({"spec": {"podCIDRs": ["10.0.1.0/24"]}});
        assert_eq!(NodeStrategy.validate_update(&new, &old).len(), 1);
    }
}
