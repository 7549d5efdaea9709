//! The `kubectl get pods` table: upstream `printPod` — READY `n/m`, the STATUS reason
//! (phase, init-container progress, waiting/terminated reasons, `Terminating`),
//! RESTARTS with the time of the last restart, and the wide columns.
//!
//! Invariant: cells are always produced for every column, wide ones included, as the
//! server-side printer does (`-o wide` only changes what kubectl shows).
//!
//! Where to look next: `pod.rs` (the strategy that returns these), `table.rs`.

use kapi_registry::Column;
use serde_json::Value;

use super::pod::pod_ip;
use super::table::{
    age_cell, age_column, human_duration, name_cell, name_column, now_unix, parse_rfc3339,
    string_column,
};
use super::util::{arr_at, i64_at, is_deleting, present, str_at};

pub fn columns() -> Vec<Column> {
    vec![
        name_column(),
        string_column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        string_column("Status", "The aggregate status of the containers in this pod."),
        string_column("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        age_column(),
        string_column("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.").wide(),
        string_column("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename").wide(),
        string_column("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.").wide(),
        string_column("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates").wide(),
    ]
}

/// Running totals while walking container statuses.
#[derive(Default)]
struct Tally {
    restarts: i64,
    last_restart: Option<i64>,
}

impl Tally {
    fn count(&mut self, status: &Value) {
        self.restarts += i64_at(status, "/restartCount").unwrap_or(0);
        let finished = status
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339);
        if finished > self.last_restart {
            self.last_restart = finished;
        }
    }
}

pub fn cells(pod: &Value) -> Vec<Value> {
    let (ready, total, reason, restarts) = status_summary(pod);
    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    vec![
        name_cell(pod),
        Value::from(format!("{ready}/{total}")),
        Value::from(reason),
        Value::from(restarts),
        age_cell(pod),
        Value::from(or_none(pod_ip(pod))),
        Value::from(or_none(str_at(pod, "/spec/nodeName"))),
        Value::from(or_none(str_at(pod, "/status/nominatedNodeName"))),
        Value::from(readiness_gates(pod)),
    ]
}

fn is_restartable(init: &Value) -> bool {
    str_at(init, "/restartPolicy") == "Always"
}

fn has_condition(pod: &Value, type_: &str) -> bool {
    arr_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == type_ && str_at(c, "/status") == "True")
}

/// READY counts, STATUS reason and RESTARTS text, as upstream `printPod`.
fn status_summary(pod: &Value) -> (usize, usize, String, String) {
    let phase = str_at(pod, "/status/phase");
    let mut reason = match str_at(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let gated = arr_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".to_string();
    }
    let inits = arr_at(pod, "/spec/initContainers");
    let total =
        arr_at(pod, "/spec/containers").len() + inits.iter().filter(|c| is_restartable(c)).count();
    let mut ready = 0;
    let (init_reason, all, sidecars) = walk_init_containers(pod, &mut ready);
    let initializing = init_reason.is_some();
    let mut tally = all;
    if let Some(r) = init_reason {
        reason = r;
    }
    if !initializing || has_condition(pod, "Initialized") {
        tally = sidecars;
        walk_containers(pod, &mut tally, &mut ready, &mut reason);
    }
    if is_deleting(pod) && str_at(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_string();
    } else if is_deleting(pod) && !matches!(phase, "Failed" | "Succeeded") {
        reason = "Terminating".to_string();
    }
    let restarts = match tally.last_restart {
        Some(t) if tally.restarts != 0 => {
            format!(
                "{} ({} ago)",
                tally.restarts,
                human_duration(now_unix() - t)
            )
        }
        _ => tally.restarts.to_string(),
    };
    (ready, total, reason, restarts)
}

/// Walks init container statuses until one is still initializing; returns its
/// STATUS reason (if any), the restarts of all init containers and of sidecars.
fn walk_init_containers(pod: &Value, ready: &mut usize) -> (Option<String>, Tally, Tally) {
    let inits = arr_at(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        inits
            .iter()
            .any(|c| str_at(c, "/name") == name && is_restartable(c))
    };
    let (mut all, mut sidecars) = (Tally::default(), Tally::default());
    for (i, cs) in arr_at(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        all.count(cs);
        let sidecar = restartable(str_at(cs, "/name"));
        if sidecar {
            sidecars.count(cs);
        }
        if let Some(r) = init_reason(cs, sidecar, i, inits.len(), ready) {
            return (Some(r), all, sidecars);
        }
    }
    (None, all, sidecars)
}

/// Walks regular container statuses (last first, as upstream) updating the reason.
fn walk_containers(pod: &Value, tally: &mut Tally, ready: &mut usize, reason: &mut String) {
    let mut has_running = false;
    for cs in arr_at(pod, "/status/containerStatuses").iter().rev() {
        tally.count(cs);
        if let Some(r) = container_reason(cs) {
            *reason = r;
        } else if cs["ready"].as_bool() == Some(true) && present(cs, "/state/running").is_some() {
            has_running = true;
            *ready += 1;
        }
    }
    if reason == "Completed" && has_running {
        let running = if has_condition(pod, "Ready") {
            "Running"
        } else {
            "NotReady"
        };
        *reason = running.to_string();
    }
}

/// The STATUS an init container status imposes, or `None` when it is done (or a started
/// sidecar, counted as ready when it is).
fn init_reason(cs: &Value, sidecar: bool, i: usize, n: usize, ready: &mut usize) -> Option<String> {
    let terminated = present(cs, "/state/terminated");
    if terminated.is_some() && i64_at(cs, "/state/terminated/exitCode").unwrap_or(0) == 0 {
        return None;
    }
    if sidecar && cs["started"].as_bool() == Some(true) {
        if cs["ready"].as_bool() == Some(true) {
            *ready += 1;
        }
        return None;
    }
    if let Some(t) = terminated {
        return Some(match str_at(t, "/reason") {
            "" => match i64_at(t, "/signal").unwrap_or(0) {
                0 => format!("Init:ExitCode:{}", i64_at(t, "/exitCode").unwrap_or(0)),
                s => format!("Init:Signal:{s}"),
            },
            r => format!("Init:{r}"),
        });
    }
    match str_at(cs, "/state/waiting/reason") {
        "" | "PodInitializing" => Some(format!("Init:{i}/{n}")),
        r => Some(format!("Init:{r}")),
    }
}

/// The STATUS a regular container status imposes, if any.
fn container_reason(cs: &Value) -> Option<String> {
    let waiting = str_at(cs, "/state/waiting/reason");
    if !waiting.is_empty() {
        return Some(waiting.to_string());
    }
    let t = present(cs, "/state/terminated")?;
    Some(match str_at(t, "/reason") {
        "" => match i64_at(t, "/signal").unwrap_or(0) {
            0 => format!("ExitCode:{}", i64_at(t, "/exitCode").unwrap_or(0)),
            s => format!("Signal:{s}"),
        },
        r => r.to_string(),
    })
}

fn readiness_gates(pod: &Value) -> String {
    let gates = arr_at(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let conditions = arr_at(pod, "/status/conditions");
    let true_count = gates
        .iter()
        .filter(|g| {
            let want = str_at(g, "/conditionType");
            conditions
                .iter()
                .find(|c| str_at(c, "/type") == want)
                .is_some_and(|c| str_at(c, "/status") == "True")
        })
        .count();
    format!("{true_count}/{}", gates.len())
}
