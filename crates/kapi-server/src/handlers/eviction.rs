//! `POST pods/{name}/eviction`: a policy/v1 Eviction deletes the pod unless a
//! PodDisruptionBudget forbids it, as upstream's `EvictionREST`: a pod that is not
//! running (or already deleting) goes at once; otherwise its one matching budget
//! must have seen its latest generation and allow a disruption, which the eviction
//! spends (`status.disruptionsAllowed` − 1, the pod in `status.disruptedPods`)
//! before the pod is deleted. A budget at zero answers 429 TooManyRequests with a
//! `DisruptionBudget` cause; more than one matching budget answers 500.
//!
//! The Eviction goes through admission as a create of `pods/eviction`
//! (kind `policy/v1 Eviction`, named as the pod): the mutating phase first,
//! the validating phase once the names matched, before any budget is looked
//! at; the pod's delete itself is not admitted again, as upstream.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::labels::from_label_selector_json;
use kapi_machinery::status::{ApiError, Cause, Details, Reason};
use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, ListOptions, Preconditions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};

use super::admit::RequestAdmission;
use super::ctx::{dry_run, Ctx};
use kapi_http::body::read_body;
use kapi_http::negotiate;

const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn too_many_requests(cause: String) -> ApiError {
    ApiError {
        details: Some(Details {
            causes: vec![Cause {
                reason: "DisruptionBudget".into(),
                message: cause,
                field: String::new(),
            }],
            retry_after_seconds: Some(0),
            ..Details::default()
        }),
        ..ApiError::new(429, Reason::TooManyRequests, VIOLATION)
    }
}

/// Whether the pod may go without consulting budgets (upstream `canIgnorePDB`).
fn ignores_budgets(pod: &Value) -> bool {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    matches!(phase, "Succeeded" | "Failed" | "Pending" | "") || meta::is_deleting(pod)
}

/// The budgets of the pod's namespace whose selector matches the pod.
async fn matching_budgets(ctx: &Ctx, pod: &Value) -> Result<Vec<Value>, ApiError> {
    let Some(entry) = ctx.srv.apis.lookup("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Vec::new());
    };
    let list = entry
        .store
        .list(ctx.namespace(), &ListOptions::default())
        .await?;
    let labels = pod
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    let labels = labels.as_object().cloned().unwrap_or_default();
    Ok(list
        .items
        .into_iter()
        .filter(|pdb| {
            let selector = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
            from_label_selector_json(selector).is_ok_and(|s| s.matches(&labels))
        })
        .collect())
}

/// Spends one disruption of `pdb` for `pod_name`, or explains why not.
async fn spend(ctx: &Ctx, pdb: &Value, pod_name: &str, dry: bool) -> Result<(), ApiError> {
    let entry = ctx
        .srv
        .apis
        .lookup("policy", "v1", "poddisruptionbudgets")
        .expect("found before");
    let name = meta::name(pdb).to_owned();
    let observed = pdb
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let generation = pdb
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if observed < generation {
        return Err(too_many_requests(format!(
            "The disruption budget {name} is still being processed by the server."
        )));
    }
    let allowed = pdb
        .pointer("/status/disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if allowed < 0 {
        return Err(ApiError::new(
            403,
            Reason::Forbidden,
            format!("poddisruptionbudget.policy \"{name}\" is forbidden: pdb disruptions allowed is negative"),
        ));
    }
    if allowed == 0 {
        let num = |p: &str| pdb.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        return Err(too_many_requests(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            num("/status/desiredHealthy"),
            num("/status/currentHealthy")
        )));
    }
    if dry {
        return Ok(());
    }
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    };
    let rv = meta::resource_version(pdb).map(str::to_owned);
    entry
        .store
        .update_with(
            ctx.namespace(),
            &name,
            UpdateTarget::Status,
            &opts,
            false,
            |current| {
                let current = current.expect("updates never create here");
                if meta::resource_version(current).map(str::to_owned) != rv {
                    return Err(ApiError::optimistic_lock_conflict(
                        entry.def.group_resource(),
                        &name,
                    ));
                }
                let mut next = current.clone();
                let status = next
                    .as_object_mut()
                    .expect("objects")
                    .entry("status")
                    .or_insert(json!({}));
                status["disruptionsAllowed"] = json!(allowed - 1);
                let disrupted = status
                    .as_object_mut()
                    .expect("status is an object")
                    .entry("disruptedPods")
                    .or_insert(json!({}));
                disrupted[pod_name] = json!(meta::now_rfc3339());
                Ok(next)
            },
        )
        .await?;
    Ok(())
}

pub async fn evict(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(body).await?;
    let mut eviction = negotiate::decode_body(ctx.content_type(), &bytes)?;
    let opts = ctx.write_options()?;
    let adm = RequestAdmission::subresource_create(ctx, &mut eviction, &opts).await?;
    let body_name = eviction
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if body_name != ctx.name() {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    adm.validate_create(&eviction).await?;
    let dry = dry_run(&ctx.query)?
        || eviction
            .pointer("/deleteOptions/dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
    let store = &ctx.entry.store;
    let pod = store.get(ctx.namespace(), ctx.name(), None).await?;
    if !ignores_budgets(&pod) {
        let budgets = matching_budgets(ctx, &pod).await?;
        if budgets.len() > 1 {
            return Err(ApiError::new(
                500,
                Reason::InternalError,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
        if let Some(pdb) = budgets.first() {
            spend(ctx, pdb, ctx.name(), dry).await?;
        }
    }
    let options = eviction
        .get("deleteOptions")
        .cloned()
        .unwrap_or(Value::Null);
    let pre = |k: &str| {
        options
            .pointer(&format!("/preconditions/{k}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let delete = DeleteOptions {
        dry_run: dry,
        grace_period: options.get("gracePeriodSeconds").and_then(Value::as_i64),
        propagation: None,
        preconditions: Preconditions {
            uid: pre("uid"),
            resource_version: pre("resourceVersion"),
        },
        ..DeleteOptions::default()
    };
    store.delete(ctx.namespace(), ctx.name(), &delete).await?;
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(negotiate::respond(
        StatusCode::CREATED,
        &status,
        ctx.accept.format,
    ))
}
