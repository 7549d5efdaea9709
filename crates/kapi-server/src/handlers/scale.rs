//! The `scale` subresource: an `autoscaling/v1` Scale view of an object's replicas.
//! GET builds the view; PUT and PATCH change the view and write `spec.replicas`
//! back through the store's update loop (a PATCH re-applies on conflict).
//! Admission sees the write as an UPDATE of `<resource>/scale` on
//! `autoscaling/v1` Scale objects ([`ScaleAdmission`]).

use std::sync::Mutex;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::labels;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::admission::WriteAdmission;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use kapi_registry::{meta, Subresource, Verb};
use serde_json::{json, Value};

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use kapi_http::body::read_body;
use kapi_http::negotiate;

fn scale_view(obj: &Value, sub: &Subresource) -> Value {
    let Subresource::Scale {
        spec_replicas,
        status_replicas,
        label_selector,
    } = sub
    else {
        return Value::Null;
    };
    let selector = Some(label_selector)
        .filter(|p| !p.is_empty())
        .and_then(|p| obj.pointer(p))
        .and_then(selector_string)
        .unwrap_or_default();
    let m = meta::meta(obj).cloned().unwrap_or_default();
    let pick = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer(spec_replicas).cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer(status_replicas).cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

/// A selector as a string: a `LabelSelector`, or a plain label map (a
/// ReplicationController's `spec.selector`, upstream `SelectorFromSet`).
fn selector_string(selector: &Value) -> Option<String> {
    // A custom resource's labelSelectorPath names a serialized selector.
    if let Value::String(s) = selector {
        return Some(s.clone());
    }
    let map = selector.as_object()?;
    let is_label_map = !map.is_empty()
        && !map.contains_key("matchLabels")
        && !map.contains_key("matchExpressions")
        && map.values().all(Value::is_string);
    if is_label_map {
        let pairs = map
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()));
        return Some(labels::LabelSelector::from_validated_set(pairs).to_string());
    }
    labels::from_label_selector_json(selector)
        .ok()
        .map(|s| s.to_string())
}

pub async fn scale(
    ctx: &Ctx,
    verb: Verb,
    sub: &Subresource,
    body: Body,
) -> Result<Response, ApiError> {
    let store = &ctx.entry.store;
    if verb == Verb::Get {
        let obj = store.get(ctx.namespace(), ctx.name(), None).await?;
        let view = scale_view(&obj, sub);
        return Ok(negotiate::respond(StatusCode::OK, &view, ctx.accept.format));
    }
    let bytes = read_body(body).await?;
    let input = if verb == Verb::Patch {
        negotiate::decode_json(&bytes)?
    } else {
        let mut scale = negotiate::decode_body(ctx.content_type(), &bytes)?;
        check_scale_identity(ctx, &mut scale)?;
        scale
    };
    let patch_kind = ctx.content_type().unwrap_or("").to_owned();
    let opts: WriteOptions = ctx.write_options()?;
    let Subresource::Scale { spec_replicas, .. } = sub else {
        return Err(kapi_http::request::not_found());
    };
    let inner = RequestAdmission::write(ctx, admission_options(verb), &opts);
    let adm = ScaleAdmission {
        inner: &inner,
        sub,
        wanted: Mutex::new(None),
    };
    let (out, _) = store
        .update_admitted(
            ctx.namespace(),
            ctx.name(),
            UpdateTarget::Main,
            &opts,
            false,
            |current| {
                let current = current.expect("scale never creates");
                let view = scale_view(current, sub);
                let wanted = if verb == Verb::Patch {
                    apply_scale_patch(&patch_kind, &view, &input)?
                } else {
                    input.clone()
                };
                if let Some(rv) = wanted
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                {
                    if !rv.is_empty() && Some(rv) != meta::resource_version(current) {
                        return Err(ApiError::optimistic_lock_conflict(
                            ctx.entry.def.group_resource(),
                            ctx.name(),
                        ));
                    }
                }
                let replicas = replicas_of(&wanted)?;
                let mut next = current.clone();
                set_pointer(&mut next, spec_replicas, json!(replicas));
                *adm.wanted.lock().expect("scale lock") = Some(wanted);
                Ok(next)
            },
            &adm,
        )
        .await?;
    let mut resp = negotiate::respond(StatusCode::OK, &scale_view(&out, sub), ctx.accept.format);
    super::fieldcheck::add_warnings(&mut resp, &inner.warnings());
    Ok(resp)
}

/// A PUT's Scale names the URL's object, in the URL's namespace (filled
/// when left out, as admission sees it).
fn check_scale_identity(ctx: &Ctx, scale: &mut Value) -> Result<(), ApiError> {
    if !scale.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    super::ctx::check_namespace(ctx, scale)?;
    let m = meta::meta_mut(scale);
    match m.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != ctx.name() => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({})",
            ctx.name()
        ))),
        _ => {
            m.insert("name".into(), ctx.name().into());
            Ok(())
        }
    }
}

/// The options kind admission sees: a PATCH's `PatchOptions`, a PUT's
/// `UpdateOptions`.
fn admission_options(verb: Verb) -> &'static str {
    if verb == Verb::Patch {
        "PatchOptions"
    } else {
        "UpdateOptions"
    }
}

/// `spec.replicas` of a Scale; absent is 0, as in Go's `int32` (`ScaleSpec`
/// writes it with `omitempty`, so a protobuf Scale of 0 reads without it).
fn replicas_of(scale: &Value) -> Result<i64, ApiError> {
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.replicas must be an integer")),
    }
}

/// The request's admission as a scale update sees it: the chain runs on
/// Scale objects (upstream `scaleUpdatedObjectInfo` and
/// `toScaleUpdateValidation`). The mutating phase gets the Scale the client
/// asked for and the current object's Scale; what it leaves in
/// `spec.replicas` (at least 0, else 422 on `Scale.autoscaling`) is written
/// to the object. The validating phase gets the
/// Scales of the finished and the current object. Both run inside the
/// store's compare-and-swap loop, again after a conflicting write.
struct ScaleAdmission<'a> {
    inner: &'a RequestAdmission,
    sub: &'a Subresource,
    /// The Scale of the current attempt, set by the update before admission.
    wanted: Mutex<Option<Value>>,
}

#[async_trait]
impl WriteAdmission for ScaleAdmission<'_> {
    async fn mutate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let wanted = self.wanted.lock().expect("scale lock").take();
        let mut scale = wanted.unwrap_or_else(|| scale_view(obj, self.sub));
        if let Some(m) = scale.as_object_mut() {
            m.insert("kind".into(), json!("Scale"));
            m.insert("apiVersion".into(), json!("autoscaling/v1"));
        }
        let old = old.map(|o| scale_view(o, self.sub));
        self.inner.mutate(&mut scale, old.as_ref()).await?;
        let replicas = replicas_of(&scale)?;
        if replicas < 0 {
            // Upstream `ValidateScale`, on the Scale as admission left it.
            let path = FieldPath::new("spec").child("replicas");
            let err =
                FieldError::invalid(&path, json!(replicas), "must be greater than or equal to 0");
            let gk = GroupKind::new("autoscaling", "Scale");
            return Err(ApiError::invalid(gk, meta::name(obj), &vec![err]));
        }
        if let Subresource::Scale { spec_replicas, .. } = self.sub {
            set_pointer(obj, spec_replicas, json!(replicas));
        }
        Ok(())
    }

    async fn validate(&self, obj: &mut Value, old: Option<&mut Value>) -> Result<(), ApiError> {
        let mut old = old.map(|o| scale_view(o, self.sub));
        self.inner
            .validate(&mut scale_view(obj, self.sub), old.as_mut())
            .await
    }

    fn warn(&self, text: String) {
        self.inner.warn(text);
    }
}

/// Set the value at JSON pointer `ptr`, creating the objects on the way (a
/// custom resource may not have its replicas field yet).
fn set_pointer(obj: &mut Value, ptr: &str, value: Value) {
    let mut here = obj;
    let parts: Vec<&str> = ptr.split('/').skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        if !here.is_object() {
            *here = json!({});
        }
        let map = here.as_object_mut().expect("made an object");
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return;
        }
        here = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
}

fn apply_scale_patch(content_type: &str, view: &Value, patch: &Value) -> Result<Value, ApiError> {
    let mut doc = view.clone();
    if content_type.starts_with("application/json-patch+json") {
        let ops: json_patch::Patch = serde_json::from_value(patch.clone())
            .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
        json_patch::patch(&mut doc, &ops).map_err(|e| ApiError::bad_request(e.to_string()))?;
    } else {
        json_patch::merge(&mut doc, patch);
    }
    Ok(doc)
}
