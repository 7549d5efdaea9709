//! DefaultTolerationSeconds (upstream `plugin/pkg/admission/defaulttolerationseconds`):
//! a pod that does not tolerate the `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` NoExecute taints gets tolerations for them
//! of `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds` (300 each: evicted from a failed
//! node after five minutes).

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use serde_json::{json, Value};

use kapi_admission::{Attributes, Operation, Plugin};

/// Upstream's `--default-not-ready-toleration-seconds` / `--default-unreachable-toleration-seconds`.
pub const DEFAULT_SECONDS: i64 = 300;

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

pub struct DefaultTolerationSeconds {
    pub not_ready: i64,
    pub unreachable: i64,
}

/// Whether some toleration covers the NoExecute taint `key`.
fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let k = t.get("key").and_then(Value::as_str).unwrap_or("");
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
    })
}

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "pods")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !a.is("", "pods") {
            return Ok(());
        }
        let Some(spec) = a
            .object
            .as_mut()
            .and_then(|o| o.get_mut("spec"))
            .and_then(Value::as_object_mut)
        else {
            return Ok(());
        };
        let current: Vec<Value> = spec
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut add = Vec::new();
        for (key, seconds) in [(NOT_READY, self.not_ready), (UNREACHABLE, self.unreachable)] {
            if !tolerates(&current, key) {
                add.push(json!({
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": seconds,
                }));
            }
        }
        if !add.is_empty() {
            let mut all = current;
            all.extend(add);
            spec.insert("tolerations".into(), Value::Array(all));
        }
        Ok(())
    }
}
