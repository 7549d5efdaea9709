//! The flow-control configuration kube-apiserver 1.33 creates at start-up: the
//! mandatory `exempt` and `catch-all` objects and the suggested ones, written
//! here as data (the values of upstream's
//! `apiserver/pkg/apis/flowcontrol/bootstrap/default.go`). Each carries the
//! `apf.kubernetes.io/autoupdate-spec: "true"` annotation, as upstream's.

use serde_json::{json, Value};

const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

fn meta(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTOUPDATE: "true"}})
}

/// A queuing limited level: name, nominal shares, lendable %, queues, hand size, queue length.
fn queued(name: &str, shares: i64, lendable: i64, queues: i64, hand: i64, length: i64) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": meta(name),
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares, "lendablePercent": lendable,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length}},
        }},
    })
}

/// Every bootstrap PriorityLevelConfiguration: mandatory first.
pub fn priority_levels() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": meta("exempt"),
            "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
        }),
        json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": meta("catch-all"),
            "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}},
        }),
        queued("system", 30, 33, 64, 6, 50),
        queued("node-high", 40, 25, 64, 6, 50),
        queued("leader-election", 10, 0, 16, 4, 50),
        queued("workload-high", 40, 50, 128, 6, 50),
        queued("workload-low", 100, 90, 128, 6, 50),
        queued("global-default", 20, 50, 128, 6, 50),
    ]
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

fn kube_system_sa(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}})
}

/// Resource and non-resource rules matching everything.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster: bool,
) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources, "namespaces": namespaces});
    if cluster {
        rule["clusterScope"] = true.into();
    }
    rule
}

fn schema(
    name: &str,
    level: &str,
    precedence: i64,
    method: Option<&str>,
    rules: Vec<Value>,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": rules,
    });
    if let Some(m) = method {
        spec["distinguisherMethod"] = json!({"type": m});
    }
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": meta(name), "spec": spec})
}

/// Every bootstrap FlowSchema: mandatory first.
pub fn flow_schemas() -> Vec<Value> {
    let all_users = || {
        vec![
            group("system:unauthenticated"),
            group("system:authenticated"),
        ]
    };
    let leases = |ns: &[&str]| {
        resource_rule(
            &["get", "create", "update"],
            &["coordination.k8s.io"],
            &["leases"],
            ns,
            false,
        )
    };
    let election = |ns: &[&str]| {
        resource_rule(
            &["get", "create", "update"],
            &[""],
            &["endpoints", "configmaps"],
            ns,
            false,
        )
    };
    vec![
        schema(
            "exempt",
            "exempt",
            1,
            None,
            vec![everything(vec![group("system:masters")])],
        ),
        schema(
            "catch-all",
            "catch-all",
            10000,
            Some("ByUser"),
            vec![everything(all_users())],
        ),
        schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            vec![everything(vec![group("system:nodes")])],
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            vec![json!({
                "subjects": [group("system:nodes")],
                "resourceRules": [
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                ],
            })],
        ),
        schema(
            "probes",
            "exempt",
            2,
            None,
            vec![json!({
                "subjects": all_users(),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            })],
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            vec![json!({
                "subjects": [user("system:kube-controller-manager"), user("system:kube-scheduler"), kube_system_sa("*")],
                // Leases only: the endpoints and configmaps rule left this schema
                // before 1.28 (it stays in workload-leader-election).
                "resourceRules": [leases(&["*"])],
            })],
        ),
        schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            vec![json!({
                "subjects": [user("system:kube-controller-manager"), kube_system_sa("endpoint-controller"),
                             kube_system_sa("endpointslicemirroring-controller")],
                "resourceRules": [resource_rule(&["get", "create", "update"], &[""], &["endpoints"], &["*"], false)],
            })],
        ),
        schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            vec![json!({
                "subjects": [kube_system_sa("*")],
                "resourceRules": [election(&["*"]), leases(&["*"])],
            })],
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            vec![everything(vec![user("system:kube-controller-manager")])],
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            vec![everything(vec![user("system:kube-scheduler")])],
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            vec![everything(vec![kube_system_sa("*")])],
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            vec![everything(vec![group("system:serviceaccounts")])],
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            vec![everything(all_users())],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_election_schemas_are_upstreams() {
        let rules = |name: &str| {
            let fs = flow_schemas()
                .into_iter()
                .find(|f| f["metadata"]["name"] == name)
                .unwrap();
            fs["spec"]["rules"][0]["resourceRules"].clone()
        };
        // The system components' leader election: leases only.
        assert_eq!(
            rules("system-leader-election"),
            json!([{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"], "namespaces": ["*"]}])
        );
        // Workloads still elect through endpoints and configmaps too.
        assert_eq!(
            rules("workload-leader-election").as_array().unwrap().len(),
            2
        );
    }
}
