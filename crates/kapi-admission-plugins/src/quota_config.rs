//! ResourceQuota's configuration (`ResourceQuotaConfiguration` of
//! `apiserver.config.k8s.io/v1`, or `resourcequota.admission.k8s.io`
//! v1beta1/v1alpha1, from the admission configuration file): limited
//! resources — consumption that needs a covering quota. For each entry, an
//! object of its resource (`apiGroup` + `resource`) whose usage names one of
//! `matchContains` (e.g. `cpu` matches `requests.cpu`), or which matches one
//! of `matchScopes` (e.g. `PriorityClass In [cluster-services]`), is only
//! admitted when a quota of the namespace covers that usage or scope name.
//!
//! Invariant: checked at start (a resource is required; `In`/`NotIn` need
//! values, `Exists`/`DoesNotExist` take none).

use serde_json::Value;

const KINDS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "resourcequota.admission.k8s.io/v1beta1",
    "resourcequota.admission.k8s.io/v1alpha1",
];

/// One `limitedResources` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedResource {
    pub api_group: String,
    pub resource: String,
    pub match_contains: Vec<String>,
    /// `(scopeName, operator, values)`.
    pub match_scopes: Vec<(String, String, Vec<String>)>,
}

/// The checked configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaConfig {
    pub limited: Vec<LimitedResource>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

impl QuotaConfig {
    /// Decode and check `v`.
    pub fn parse(v: &Value) -> Result<QuotaConfig, String> {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "ResourceQuotaConfiguration" || !KINDS.contains(&api_version) {
            return Err(format!(
                "expected ResourceQuotaConfiguration of apiserver.config.k8s.io/v1, got {kind:?} of {api_version:?}"
            ));
        }
        let mut out = QuotaConfig::default();
        let items = v.get("limitedResources").and_then(Value::as_array);
        for (i, item) in items.into_iter().flatten().enumerate() {
            let resource = item.get("resource").and_then(Value::as_str).unwrap_or("");
            if resource.is_empty() {
                return Err(format!("limitedResources[{i}].resource: Required value"));
            }
            let mut scopes = Vec::new();
            let exprs = item.get("matchScopes").and_then(Value::as_array);
            for (j, e) in exprs.into_iter().flatten().enumerate() {
                let name = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
                let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
                let values = strings(e.get("values"));
                let path = format!("limitedResources[{i}].matchScopes[{j}]");
                match op {
                    "In" | "NotIn" if values.is_empty() => {
                        return Err(format!("{path}.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
                    }
                    "Exists" | "DoesNotExist" if !values.is_empty() => {
                        return Err(format!("{path}.values: Invalid value: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
                    }
                    "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                    other => return Err(format!("{path}.operator: Invalid value: {other:?}: not a valid selector operator")),
                }
                scopes.push((name.to_owned(), op.to_owned(), values));
            }
            out.limited.push(LimitedResource {
                api_group: item
                    .get("apiGroup")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                resource: resource.to_owned(),
                match_contains: strings(item.get("matchContains")),
                match_scopes: scopes,
            });
        }
        Ok(out)
    }

    /// The entries for objects of `group`/`resource`.
    pub fn for_resource<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
    ) -> impl Iterator<Item = &'a LimitedResource> + 'a {
        self.limited
            .iter()
            .filter(move |l| l.api_group == group && l.resource == resource)
    }
}
