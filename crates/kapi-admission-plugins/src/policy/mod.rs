//! The ValidatingAdmissionPolicy plugin, as upstream's `policy/validating`
//! dispatcher: every policy (in name order) whose `matchConstraints` match the
//! request runs once per binding (in name order) that names it and whose
//! `matchResources` match, once per param the binding's `paramRef` selects
//! (`eval.rs`). A binding's `validationActions` decide what a failed validation
//! does: `Deny` fails the request, `Warn` adds a `Warning` header, `Audit` an
//! audit annotation. The first denial is the answer: `<resource> "<name>" is
//! forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request:
//! <message>`, with the validation's reason and its code (422 for Invalid).
//! A policy or binding that cannot be applied (unknown paramKind, missing param
//! with `parameterNotFoundAction: Deny`) is a denial under `failurePolicy: Fail`.

pub mod eval;

use kapi_machinery::labels;
use kapi_machinery::status::{ApiError, Cause, GroupResource, Reason};
use kapi_registry::store::options::ListOptions;
use kapi_registry::store::KeptList;
use serde_json::{json, Value};

use crate::webhooks::cel::{self, to_cel, Activation};
use crate::webhooks::{review, rules, Attrs, Outcome};
use crate::Context;

const GROUP: &str = "admissionregistration.k8s.io";

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A denial with who made it.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

impl Context {
    /// Every object of `resource` (of this API group), by name: a consistent
    /// read, shared through `kept` while none changes.
    pub(crate) async fn list_sorted(
        &self,
        resource: &str,
        kept: &KeptList,
    ) -> Result<Vec<Value>, ApiError> {
        let Some(entry) = self.apis.lookup(GROUP, "v1", resource) else {
            return Ok(Vec::new());
        };
        let mut items = entry.store.list_kept(None, kept).await?.to_vec();
        items.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        Ok(items)
    }

    /// Upstream's policy matcher on a `MatchResources`: the resource it matched
    /// at, or `None`.
    async fn match_resources(
        &self,
        m: &Value,
        a: &Attrs,
    ) -> Result<Option<(String, String, String)>, ApiError> {
        if !self
            .namespace_selector_matches(m.get("namespaceSelector"), a)
            .await?
            || !rules::object_selector_matches(m.get("objectSelector"), a)?
        {
            return Ok(None);
        }
        let equivalent = m.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
        let named = |key: &str| -> Vec<Value> {
            m.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let names_ok = |r: &Value| {
            let names = r.get("resourceNames").and_then(Value::as_array);
            names.is_none_or(|n| n.is_empty() || n.iter().any(|x| x == a.name.as_str()))
        };
        let matching =
            |rules_: Vec<Value>| -> Vec<Value> { rules_.into_iter().filter(names_ok).collect() };
        if self
            .matching_resource(&matching(named("excludeResourceRules")), equivalent, a)
            .is_some()
        {
            return Ok(None);
        }
        let include = named("resourceRules");
        if include.is_empty() {
            return Ok(Some(a.gvr.clone()));
        }
        Ok(self.matching_resource(&matching(include), equivalent, a))
    }

    /// The params a binding selects: `[None]` without a paramKind or paramRef.
    async fn params(
        &self,
        spec: &Value,
        binding: &Value,
        a: &Attrs,
    ) -> Result<Vec<Option<Value>>, String> {
        let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) else {
            return Ok(vec![None]);
        };
        let Some(r) = binding.pointer("/spec/paramRef").filter(|r| !r.is_null()) else {
            return Ok(vec![None]);
        };
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let entry = self.param_entry(kind)?;
        let ns = if entry.def.namespaced {
            match (s(r, "namespace"), a.namespace.as_str()) {
                (n, _) if !n.is_empty() => Some(n),
                (_, n) if !n.is_empty() => Some(n.to_string()),
                _ => return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()),
            }
        } else if !s(r, "namespace").is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        } else {
            None
        };
        let name = s(r, "name");
        let found: Vec<Value> = if !name.is_empty() {
            match entry.store.get(ns.as_deref(), &name, None).await {
                Ok(p) => vec![p],
                Err(e) if e.is_not_found() => Vec::new(),
                Err(e) => return Err(e.message),
            }
        } else {
            let sel = r.get("selector").cloned().unwrap_or(json!({}));
            let label =
                labels::from_label_selector_json(&sel).map_err(|e| e.message().to_string())?;
            let opts = ListOptions {
                label,
                ..ListOptions::default()
            };
            entry
                .store
                .list(ns.as_deref(), &opts)
                .await
                .map_err(|e| e.message)?
                .items
        };
        if found.is_empty() && s(r, "parameterNotFoundAction") == "Deny" {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        Ok(found.into_iter().map(Some).collect())
    }

    /// The resource of a policy's `paramKind`.
    fn param_entry(
        &self,
        kind: &Value,
    ) -> Result<std::sync::Arc<kapi_registry::apis::Entry>, String> {
        let s = |k: &str| {
            kind.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (api_version, kind_name) = (s("apiVersion"), s("kind"));
        self.apis
            .all()
            .into_iter()
            .find(|e| e.def.api_version() == api_version && e.def.kind == kind_name)
            .ok_or_else(|| {
                format!("failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'")
            })
    }

    /// Run the ValidatingAdmissionPolicies `policies` (every one, by name:
    /// [`Context::list_sorted`]) on `a`.
    pub(crate) async fn run_validating_policies(
        &self,
        a: &Attrs,
        policies: Vec<Value>,
        bindings: &KeptList,
        out: &mut Outcome,
    ) -> Result<(), ApiError> {
        if rules::exempt(a) || policies.is_empty() {
            return Ok(());
        }
        let bindings = self
            .list_sorted("validatingadmissionpolicybindings", bindings)
            .await?;
        let mut denied: Vec<Denied> = Vec::new();
        for p in &policies {
            let pname = name_of(p);
            let mine: Vec<&Value> = bindings
                .iter()
                .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(pname))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let spec = p.get("spec").cloned().unwrap_or(json!({}));
            let fail = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
            let config_error = |denied: &mut Vec<Denied>, binding: Option<&str>, e: String| {
                if fail {
                    let what = if binding.is_some() {
                        "binding"
                    } else {
                        "policy"
                    };
                    denied.push(Denied {
                        policy: pname.to_string(),
                        binding: binding.map(str::to_string),
                        message: format!("failed to configure {what}: {e}"),
                        reason: String::new(),
                    });
                }
            };
            let constraints = spec.get("matchConstraints").cloned().unwrap_or(json!({}));
            let Some(gvr) = self.match_resources(&constraints, a).await? else {
                continue;
            };
            if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
                if let Err(e) = self.param_entry(kind) {
                    config_error(&mut denied, None, e);
                    continue;
                }
            }
            let v = self.versioned(a, &gvr);
            for b in mine {
                let bname = name_of(b);
                if let Some(m) = b.pointer("/spec/matchResources").filter(|m| m.is_object()) {
                    if self.match_resources(m, a).await?.is_none() {
                        continue;
                    }
                }
                let params = match self.params(&spec, b, a).await {
                    Ok(p) => p,
                    Err(e) => {
                        config_error(&mut denied, Some(bname), e);
                        continue;
                    }
                };
                let ns_object = self.policy_namespace(a).await?;
                let actions: Vec<&str> = b
                    .pointer("/spec/validationActions")
                    .and_then(Value::as_array)
                    .map(|x| x.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let blocking = cel::mentions_authorizer(&spec);
                for param in params {
                    let mut act = activation(&v, param.as_ref(), ns_object.as_ref());
                    if blocking {
                        self.bind_authorizer(&mut act, &v);
                    }
                    let spec = spec.clone();
                    let result = cel::run(blocking, move || eval::evaluate(&spec, act)).await;
                    for (k, val) in result.audit {
                        out.annotations.push((format!("{pname}/{k}"), val));
                    }
                    for d in result.denials {
                        for action in &actions {
                            match *action {
                                "Deny" => denied.push(Denied {
                                    policy: pname.to_string(),
                                    binding: Some(bname.to_string()),
                                    message: d.message.clone(),
                                    reason: d.reason.clone(),
                                }),
                                "Warn" => out.warnings.push(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {}",
                                    d.message
                                )),
                                "Audit" => out.annotations.push((
                                    "validation.policy.admission.k8s.io/validation_failure".into(),
                                    json!([{"message": d.message, "policy": pname, "binding": bname, "expressionIndex": d.index, "validationActions": actions}]).to_string(),
                                )),
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        match denied.into_iter().next() {
            None => Ok(()),
            Some(d) => Err(denial(a, d)),
        }
    }

    /// `namespaceObject`: the request's namespace (none for cluster-scoped
    /// requests and for namespaces themselves).
    async fn policy_namespace(&self, a: &Attrs) -> Result<Option<Value>, ApiError> {
        let is_namespace = a.gvk.0.is_empty() && a.gvk.2 == "Namespace";
        if a.namespace.is_empty() || is_namespace {
            return Ok(None);
        }
        self.namespace_object(&a.namespace).await.map(Some)
    }
}

fn activation(v: &Attrs, param: Option<&Value>, ns: Option<&Value>) -> Activation {
    let null = || kube_cel::cel::Value::Null;
    let mut act = Activation::default();
    act.set("object", v.object.as_ref().map_or_else(null, to_cel));
    act.set("oldObject", v.old_object.as_ref().map_or_else(null, to_cel));
    let mut request = review::request("", v, v);
    if let Some(m) = request.as_object_mut() {
        for k in ["uid", "object", "oldObject"] {
            m.remove(k);
        }
    }
    act.set("request", to_cel(&request));
    act.set("params", param.map_or_else(null, to_cel));
    act.set("namespaceObject", ns.map_or_else(null, to_cel));
    act
}

/// Upstream's `admission.NewForbidden` with the decision's reason and code.
fn denial(a: &Attrs, d: Denied) -> ApiError {
    let message = match &d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            d.policy, d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.message
        ),
    };
    // As `admission.NewForbidden`: the resource without its subresource, the
    // request's name, else the object's.
    let resource = a.gvr.2.clone();
    let name = Some(a.name.clone())
        .filter(|n| !n.is_empty())
        .or_else(|| {
            a.object.as_ref().and_then(|o| {
                let n = o
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let g = o
                    .pointer("/metadata/generateName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                [n, g]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "Unknown".to_string());
    let mut err = ApiError::forbidden(GroupResource::new(&a.gvr.0, &resource), &name, &message);
    let (reason, code) = match d.reason.as_str() {
        "Forbidden" => (Reason::Forbidden, 403),
        "Unauthorized" => (Reason::Unauthorized, 401),
        "RequestEntityTooLarge" => (Reason::RequestEntityTooLarge, 413),
        _ => (Reason::Invalid, 422),
    };
    err.reason = reason;
    err.code = code;
    if let Some(det) = err.details.as_mut() {
        det.causes.push(Cause {
            message,
            ..Cause::default()
        });
    }
    err
}
