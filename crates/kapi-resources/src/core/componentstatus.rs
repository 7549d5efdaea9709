//! ComponentStatus (`kubectl get cs`, deprecated upstream since 1.19): a read-only
//! view the server computes by probing the control-plane components (the server
//! does the probing, `kapi-server/src/componentstatus.rs`); this is only its
//! table, upstream's NAME / STATUS / MESSAGE / ERROR.

use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::table::{name_cell, name_column};

pub struct ComponentStatusStrategy;

impl Strategy for ComponentStatusStrategy {
    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            Column::new("Status", "string", "Status of the component conditions"),
            Column::new("Message", "string", "Message of the component conditions"),
            Column::new("Error", "string", "Error of the component conditions"),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let healthy = obj
            .get("conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Healthy"));
        let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (status, message, error) = match healthy {
            Some(c) if c["status"] == "True" => ("Healthy", text(c, "message"), text(c, "error")),
            Some(c) => ("Unhealthy", text(c, "message"), text(c, "error")),
            None => ("Unknown", String::new(), String::new()),
        };
        vec![name_cell(obj), json!(status), json!(message), json!(error)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_follow_the_healthy_condition() {
        let s = ComponentStatusStrategy;
        let ok = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            s.cells(&ok),
            vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let down = json!({"metadata": {"name": "scheduler"},
            "conditions": [{"type": "Healthy", "status": "Unknown", "error": "refused"}]});
        assert_eq!(
            s.cells(&down)[1..],
            [json!("Unhealthy"), json!(""), json!("refused")]
        );
        assert_eq!(s.cells(&json!({}))[1], json!("Unknown"));
    }
}
