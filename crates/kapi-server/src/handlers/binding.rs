//! `POST pods/{name}/binding` and the older `POST bindings`: a v1 Binding assigns
//! an unassigned pod to a node, as upstream's `BindingREST`. The pod must exist
//! (optionally with the Binding's uid and resourceVersion as preconditions), must
//! not be deleting, assigned already or held by scheduling gates; then
//! `spec.nodeName` is set, the Binding's annotations are merged into the pod's and
//! the `PodScheduled` condition becomes true. The answer is a `Success` Status
//! with code 201. A pod that cannot be bound answers 409 Conflict on
//! `pods/binding`.
//!
//! The Binding goes through admission as a create (kind `v1 Binding`,
//! resource `pods` subresource `binding`, or resource `bindings`): the
//! mutating phase on the body, the validating phase after the Binding's own
//! validation, before the pod is looked at, as upstream's `BindingREST`.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::meta;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Map, Value};

use super::admit::RequestAdmission;
use super::ctx::{dry_run, Ctx};
use kapi_http::body::read_body;
use kapi_http::negotiate;
use kapi_http::request::not_found;

/// `pods/{name}/binding`: the name comes from the URL and must match the body's.
pub async fn bind_subresource(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(body).await?;
    let mut binding = decode(ctx, &bytes)?;
    let opts = ctx.write_options()?;
    let adm = RequestAdmission::subresource_create(ctx, &mut binding, &opts).await?;
    if meta::name(&binding) != ctx.name() {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    bind(ctx, &binding, &adm).await
}

/// `bindings`: the pod is the one the Binding names.
pub async fn bind_legacy(ctx: &Ctx, mut binding: Value) -> Result<Response, ApiError> {
    let opts = ctx.write_options()?;
    let adm = RequestAdmission::subresource_create(ctx, &mut binding, &opts).await?;
    bind(ctx, &binding, &adm).await
}

/// The body as a Binding object: right kind, right namespace.
fn decode(ctx: &Ctx, bytes: &[u8]) -> Result<Value, ApiError> {
    let mut binding = negotiate::decode_body(ctx.content_type(), bytes)?;
    if !binding.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    match binding.get("kind").and_then(Value::as_str) {
        None | Some("Binding") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({other}) does not match the expected kind (Binding)"
            )))
        }
    }
    super::ctx::check_namespace(ctx, &mut binding)?;
    Ok(binding)
}

/// Upstream `ValidatePodBinding`.
fn validate(binding: &Value) -> Vec<FieldError> {
    let target = FieldPath::new("target");
    let mut errs = Vec::new();
    let kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldError::not_supported(
            &target.child("kind"),
            kind,
            &["Node", "<empty>"],
        ));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        errs.push(FieldError::required(&target.child("name"), ""));
    }
    errs
}

async fn bind(ctx: &Ctx, binding: &Value, adm: &RequestAdmission) -> Result<Response, ApiError> {
    let name = meta::name(binding).to_owned();
    let errs = validate(binding);
    if !errs.is_empty() {
        return Err(ApiError::invalid(("", "Binding"), &name, &errs));
    }
    adm.validate_create(binding).await?;
    let pods = ctx
        .srv
        .apis
        .lookup("", "v1", "pods")
        .ok_or_else(not_found)?;
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let uid = meta::uid(binding).map(str::to_owned);
    let rv = meta::resource_version(binding).map(str::to_owned);
    let mut opts = ctx.write_options()?;
    opts.dry_run = dry_run(&ctx.query)?;
    let conflict = |msg: String| ApiError::conflict(("", "pods/binding"), &name, msg);
    pods.store
        .update_with(
            ctx.namespace(),
            &name,
            UpdateTarget::Binding,
            &opts,
            false,
            |current| {
                let pod = current.expect("binding never creates");
                if let Some(uid) = uid.as_deref() {
                    if meta::uid(pod) != Some(uid) {
                        let msg = format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                            meta::uid(pod).unwrap_or("")
                        );
                        return Err(ApiError::conflict(("", "pods"), &name, msg));
                    }
                }
                if let Some(rv) = rv.as_deref() {
                    if meta::resource_version(pod) != Some(rv) {
                        return Err(ApiError::optimistic_lock_conflict(("", "pods"), &name));
                    }
                }
                assign(pod, &node, &annotations).map_err(conflict)
            },
        )
        .await?;
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(negotiate::respond(
        StatusCode::CREATED,
        &status,
        ctx.accept.format,
    ))
}

/// The pod bound to `node`, or why it cannot be.
fn assign(pod: &Value, node: &str, annotations: &Map<String, Value>) -> Result<Value, String> {
    let name = meta::name(pod);
    if meta::is_deleting(pod) {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let current = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !current.is_empty() {
        return Err(format!(
            "pod {name} is already assigned to node {}",
            kapi_machinery::validation::go_quote(current)
        ));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let mut out = pod.clone();
    out["spec"]["nodeName"] = node.into();
    if !annotations.is_empty() {
        let m = meta::meta_mut(&mut out);
        let target = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(target) = target.as_object_mut() {
            for (k, v) in annotations {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    set_scheduled(&mut out);
    Ok(out)
}

/// `PodScheduled=True`, keeping the transition time when it already was.
fn set_scheduled(pod: &mut Value) {
    let root = pod.as_object_mut().expect("objects");
    let status = root.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let existing = list.iter().position(|c| c["type"] == "PodScheduled");
    let since = existing
        .map(|i| &list[i])
        .filter(|c| c["status"] == "True")
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| meta::now_rfc3339().into());
    let condition = json!({"type": "PodScheduled", "status": "True",
                           "lastProbeTime": null, "lastTransitionTime": since});
    match existing {
        Some(i) => list[i] = condition,
        None => list.push(condition),
    }
}
