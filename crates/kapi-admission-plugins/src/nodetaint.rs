//! TaintNodesByCondition (upstream `plugin/pkg/admission/nodetaint`): a
//! created Node gets the `node.kubernetes.io/not-ready:NoSchedule` taint
//! unless it has a taint of that key and effect, so nothing is scheduled to
//! it before it reports ready (kube-controller-manager's node lifecycle
//! controller takes the taint off). Creates of the main resource only.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use serde_json::{json, Value};

use kapi_admission::{Attributes, Operation, Plugin};

const NOT_READY: &str = "node.kubernetes.io/not-ready";

pub struct TaintNodesByCondition;

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "nodes")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !a.is("", "nodes") {
            return Ok(());
        }
        if let Some(node) = a.object.as_mut() {
            add_not_ready_taint(node);
        }
        Ok(())
    }
}

fn add_not_ready_taint(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    if spec.is_null() {
        *spec = json!({});
    }
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if taints.is_null() {
        *taints = json!([]);
    }
    let Some(taints) = taints.as_array_mut() else {
        return;
    };
    // Upstream's `MatchTaint`: the same key and effect, whatever the value.
    let matches = |t: &Value| {
        t.get("key").and_then(Value::as_str) == Some(NOT_READY)
            && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
    };
    if !taints.iter().any(matches) {
        taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_node_is_not_ready_until_it_says_so() {
        let mut node = json!({"metadata": {"name": "n"}});
        add_not_ready_taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY, "effect": "NoSchedule"}])
        );
        // A taint of that key and effect (any value) is enough; others stay.
        let mut node = json!({"spec": {"taints": [
            {"key": "a", "effect": "NoExecute"},
            {"key": NOT_READY, "value": "x", "effect": "NoSchedule"}]}});
        let before = node.clone();
        add_not_ready_taint(&mut node);
        assert_eq!(node, before);
        let mut node = json!({"spec": {"taints": [{"key": NOT_READY, "effect": "NoExecute"}]}});
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 2);
    }
}
