//! Priority (upstream `plugin/pkg/admission/priority`): a new pod's
//! `priorityClassName` resolves to `spec.priority` and `spec.preemptionPolicy`
//! (no class: the `globalDefault` class, else priority 0 and
//! `PreemptLowerPriority`); a pod may not state a priority other than its
//! class's (403); an unknown class is refused (403); updates keep the priority
//! set at creation. Only one PriorityClass may be the global default.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::ListOptions;
use serde_json::{json, Value};

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

const GROUP: &str = "scheduling.k8s.io";

pub struct Priority {
    pub(crate) cx: Context,
}

async fn classes(cx: &Context) -> Result<Vec<Value>, ApiError> {
    let Some(entry) = cx.apis.lookup(GROUP, "v1", "priorityclasses") else {
        return Ok(Vec::new());
    };
    Ok(entry.store.list(None, &ListOptions::default()).await?.items)
}

/// The global default class; of several (a race), the lowest value, as upstream.
fn default_class(classes: &[Value]) -> Option<&Value> {
    classes
        .iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0))
}

impl Priority {
    async fn admit_pod(&self, cx: &Context, a: &mut Attributes) -> Result<(), ApiError> {
        let Some(mut pod) = a.object.take() else {
            return Ok(());
        };
        let result = self.resolve(cx, a, &mut pod).await;
        a.object = Some(pod);
        result
    }

    async fn resolve(&self, cx: &Context, a: &Attributes, pod: &mut Value) -> Result<(), ApiError> {
        let old_spec = a.old_object.as_ref().and_then(|o| o.get("spec")).cloned();
        if a.operation == Operation::Update {
            // Keep what creation set; validation refuses any other change.
            let (Some(spec), Some(old)) =
                (pod.get_mut("spec").and_then(Value::as_object_mut), old_spec)
            else {
                return Ok(());
            };
            for f in ["priority", "preemptionPolicy"] {
                if spec.get(f).is_none_or(Value::is_null) {
                    if let Some(v) = old.get(f) {
                        spec.insert(f.into(), v.clone());
                    }
                }
            }
            return Ok(());
        }
        let class_name = pod
            .pointer("/spec/priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let all = classes(cx).await?;
        let (name, priority, policy) = if class_name.is_empty() {
            match default_class(&all) {
                Some(c) => (
                    meta::name(c).to_owned(),
                    c.get("value").and_then(Value::as_i64).unwrap_or(0),
                    c.get("preemptionPolicy")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ),
                None => (String::new(), 0, Some("PreemptLowerPriority".to_owned())),
            }
        } else {
            let Some(c) = all.iter().find(|c| meta::name(c) == class_name) else {
                return Err(
                    a.forbidden(format!("no PriorityClass with name {class_name} was found"))
                );
            };
            (
                class_name.clone(),
                c.get("value").and_then(Value::as_i64).unwrap_or(0),
                c.get("preemptionPolicy")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )
        };
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
            if given != priority {
                return Err(a.forbidden(format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                )));
            }
        }
        if !name.is_empty() {
            spec.insert("priorityClassName".into(), json!(name));
        }
        spec.insert("priority".into(), json!(priority));
        if let Some(policy) = policy {
            if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
                if given != policy {
                    return Err(a.forbidden(format!(
                        "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
                    )));
                }
            }
            spec.insert("preemptionPolicy".into(), json!(policy));
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "pods") || a.is(GROUP, "priorityclasses")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if a.is("", "pods") && matches!(a.operation, Operation::Create | Operation::Update) {
            self.admit_pod(cx, a).await?;
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !a.is(GROUP, "priorityclasses")
            || !matches!(a.operation, Operation::Create | Operation::Update)
        {
            return Ok(());
        }
        let Some(pc) = &a.object else {
            return Ok(());
        };
        if pc.get("globalDefault").and_then(Value::as_bool) != Some(true) {
            return Ok(());
        }
        let all = classes(cx).await?;
        if let Some(dpc) = default_class(&all) {
            let other = meta::name(dpc) != meta::name(pc);
            if a.operation == Operation::Create || other {
                return Err(a.forbidden(format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(dpc)
                )));
            }
        }
        Ok(())
    }
}
