//! ServiceAccounts: create-on-update (as upstream) and the `NAME SECRETS AGE` table.
//!
//! Where to look next: `pod.rs` (pods default `serviceAccountName` to `default`).

use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::arr_at;

pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret"),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(arr_at(obj, "/secrets").len()),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_counts_secrets() {
        let sa = json!({"metadata": {"name": "default"}, "secrets": [{"name": "a"}]});
        assert_eq!(
            ServiceAccountStrategy.cells(&sa)[..2],
            [json!("default"), json!(1)]
        );
        assert!(ServiceAccountStrategy.allow_create_on_update());
    }
}
