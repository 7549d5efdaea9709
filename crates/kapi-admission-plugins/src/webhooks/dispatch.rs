//! The two webhook dispatchers, as upstream's `webhook/mutating` and
//! `webhook/validating`: configurations in name order, webhooks in their order;
//! for each, the selectors and rules (`rules.rs`), then `matchConditions`, then
//! the dry-run check (only `sideEffects: None`/`NoneOnDryRun` webhooks see
//! dry-run requests; others fail the request with 400), then the call.
//!
//! Mutating webhooks run one after another, each seeing the previous one's
//! patch; a webhook with `reinvocationPolicy: IfNeeded` runs once more when a
//! later webhook changed the object after it ran. Validating webhooks run
//! concurrently; the first error in configuration order wins. A webhook that
//! cannot be called (unreachable, timeout, bad response, failing match
//! condition) fails the request with 500 `failed calling webhook "x": ...` under
//! `failurePolicy: Fail`, and is skipped (with an audit annotation) under
//! `Ignore`. A denial is `admission webhook "x" denied the request: <message>`
//! with the webhook's code (400 at least) and reason.

use std::time::Duration;

use kapi_machinery::status::{ApiError, Details, Reason};
use kapi_registry::store::KeptList;
use serde_json::{json, Value};

use super::cel::{self, to_cel, Activation, Env, MatchResult};
use super::review::{self, Reply};
use super::{rules, Attrs, Outcome};
use crate::Context;
use kapi_client::webhook;

const GROUP: &str = "admissionregistration.k8s.io";

/// One webhook of one configuration.
pub(crate) struct Hook {
    config: String,
    spec: Value,
}

impl Hook {
    fn name(&self) -> &str {
        self.spec.get("name").and_then(Value::as_str).unwrap_or("")
    }

    fn str(&self, key: &str, default: &'static str) -> String {
        self.spec
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    }

    fn array(&self, key: &str) -> Vec<Value> {
        self.spec
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

/// Why a webhook was not called successfully.
enum CallError {
    /// Subject to the failure policy.
    Calling(String),
    /// Returned as is (denials, dry-run refusals, namespace lookups).
    Final(ApiError),
}

impl Context {
    /// The webhooks of every configuration of `resource`, by configuration
    /// name. The plugins ask first, so a request meets no per-request work
    /// when there are none.
    pub(crate) async fn hooks(
        &self,
        resource: &str,
        kept: &KeptList,
    ) -> Result<Vec<Hook>, ApiError> {
        let Some(entry) = self.apis.lookup(GROUP, "v1", resource) else {
            return Ok(Vec::new());
        };
        let configs = entry.store.list_kept(None, kept).await?;
        let name = |c: &Value| {
            c.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut configs: Vec<&Value> = configs.iter().collect();
        configs.sort_by_key(|c| name(c));
        let mut hooks = Vec::new();
        for c in configs {
            let config = name(c);
            for spec in c
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                hooks.push(Hook {
                    config: config.clone(),
                    spec: spec.clone(),
                });
            }
        }
        Ok(hooks)
    }

    /// The attributes at the version the webhook matched, or `None` when it
    /// does not apply to the request.
    async fn invocation(&self, h: &Hook, a: &Attrs) -> Result<Option<Attrs>, ApiError> {
        let ns = self
            .namespace_selector_matches(h.spec.get("namespaceSelector"), a)
            .await?;
        if !ns || !rules::object_selector_matches(h.spec.get("objectSelector"), a)? {
            return Ok(None);
        }
        let equivalent = h.str("matchPolicy", "Equivalent") == "Equivalent";
        let Some(gvr) = self.matching_resource(&h.array("rules"), equivalent, a) else {
            return Ok(None);
        };
        Ok(Some(self.versioned(a, &gvr)))
    }

    /// `a` converted to resource `gvr` (another version of its resource).
    pub(crate) fn versioned(&self, a: &Attrs, gvr: &(String, String, String)) -> Attrs {
        if gvr == &a.gvr {
            return a.clone();
        }
        // A subresource of its own kind (Scale, Eviction, ...) keeps its kind
        // and objects at every version of the resource.
        let own_kind = self
            .apis
            .lookup(&a.gvr.0, &a.gvr.1, &a.gvr.2)
            .is_none_or(|e| e.def.group == a.gvk.0 && e.def.kind == a.gvk.2);
        if !own_kind {
            return Attrs {
                gvr: gvr.clone(),
                ..a.clone()
            };
        }
        let Some(entry) = self.apis.lookup(&gvr.0, &gvr.1, &gvr.2) else {
            return a.clone();
        };
        let api_version = entry.def.api_version();
        let convert = |o: &Option<Value>| {
            o.clone().map(|o| match &entry.def.conversion {
                Some(c) => c.convert(o, &api_version),
                None => o,
            })
        };
        Attrs {
            gvr: gvr.clone(),
            gvk: (gvr.0.clone(), gvr.1.clone(), entry.def.kind.clone()),
            object: convert(&a.object),
            old_object: convert(&a.old_object),
            ..a.clone()
        }
    }

    /// Match conditions, dry-run check, call; the reply on success.
    async fn call_hook(
        &self,
        h: &Hook,
        v: &Attrs,
        a: &Attrs,
        mutating: bool,
    ) -> Result<Option<Reply>, CallError> {
        let conditions = h.array("matchConditions");
        if !conditions.is_empty() {
            let blocking = cel::mentions_authorizer(&Value::Array(conditions.clone()));
            let mut act = activation(v);
            if blocking {
                self.bind_authorizer(&mut act, v);
            }
            let matched = cel::run(blocking, move || {
                cel::match_conditions(&conditions, Env::WebhookMatch, &act)
            })
            .await;
            match matched {
                MatchResult::Match => {}
                MatchResult::NoMatch => return Ok(None),
                MatchResult::Error(e) => {
                    return Err(CallError::Calling(format!(
                        "failed to evaluate match condition: {e}"
                    )))
                }
            }
        }
        if a.dry_run && !["None", "NoneOnDryRun"].contains(&h.str("sideEffects", "").as_str()) {
            return Err(CallError::Final(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                h.name()
            ))));
        }
        let cc = h.spec.get("clientConfig").cloned().unwrap_or(Value::Null);
        let target = webhook::target(&self.apis, self.routing, &self.egress, &cc)
            .await
            .map_err(|e| CallError::Calling(format!("failed to call webhook: {e}")))?;
        let uid = super::new_uid();
        let body = review::review(review::request(&uid, v, a));
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let timeout = h
            .spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10);
        let ca = cc.get("caBundle").and_then(Value::as_str).unwrap_or("");
        let resp = webhook::post(&target, ca, body, Duration::from_secs(timeout))
            .await
            .map_err(|e| CallError::Calling(format!("failed to call webhook: {e}")))?;
        let reply = review::parse(&resp, &uid, mutating).map_err(CallError::Calling)?;
        if !reply.allowed {
            return Err(CallError::Final(denial(h.name(), reply.status.as_ref())));
        }
        Ok(Some(reply))
    }

    /// Run the mutating webhooks `hooks` (of `mutatingwebhookconfigurations`)
    /// on `a`, patching `a.object`.
    pub(crate) async fn run_mutating_webhooks(
        &self,
        a: &mut Attrs,
        hooks: Vec<Hook>,
        out: &mut Outcome,
    ) -> Result<(), ApiError> {
        if rules::exempt(a) {
            return Ok(());
        }
        let mut invoked_reinvocable: Vec<usize> = Vec::new();
        let mut reinvoke: Vec<usize> = Vec::new();
        for (i, h) in hooks.iter().enumerate() {
            let Some(changed) = self.mutate_once(h, i, 0, a, out).await? else {
                continue;
            };
            if changed {
                for j in &invoked_reinvocable {
                    if !reinvoke.contains(j) {
                        reinvoke.push(*j);
                    }
                }
            }
            if h.str("reinvocationPolicy", "Never") == "IfNeeded" {
                invoked_reinvocable.push(i);
            }
        }
        reinvoke.sort_unstable();
        for i in reinvoke {
            self.mutate_once(&hooks[i], i, 1, a, out).await?;
        }
        Ok(())
    }

    /// One mutating webhook: `None` when not called, else whether it changed
    /// the object.
    async fn mutate_once(
        &self,
        h: &Hook,
        index: usize,
        round: usize,
        a: &mut Attrs,
        out: &mut Outcome,
    ) -> Result<Option<bool>, ApiError> {
        let Some(v) = self.invocation(h, a).await? else {
            return Ok(None);
        };
        let mutation = |changed: bool| {
            (
                format!("mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
                json!({"configuration": h.config, "webhook": h.name(), "mutated": changed})
                    .to_string(),
            )
        };
        let reply = match self.call_hook(h, &v, a, true).await {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(CallError::Final(e)) => {
                // Called and refused: upstream still records the call.
                out.annotations.push(mutation(false));
                return Err(e);
            }
            Err(e) => {
                let key = format!(
                    "failed-open.mutation.webhook.admission.k8s.io/round_{round}_index_{index}"
                );
                return failed(h, e, &key, out).map(|()| None);
            }
        };
        collect(h, &reply, out);
        let mut changed = false;
        if let Some(patch) = reply.patch.filter(|p| !p.0.is_empty()) {
            let Some(mut obj) = v.object.clone() else {
                return Err(ApiError::internal(format!(
                    "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                    h.name()
                )));
            };
            json_patch::patch(&mut obj, &patch).map_err(ApiError::internal)?;
            changed = v.object.as_ref() != Some(&obj);
            a.object = Some(self.back_to_request_version(obj, &v, a));
            // Shown at the Request level and above only (the audit handle
            // knows this prefix).
            out.annotations.push((
                format!("patch.webhook.admission.k8s.io/round_{round}_index_{index}"),
                json!({"configuration": h.config, "webhook": h.name(),
                    "patch": patch, "patchType": "JSONPatch"})
                .to_string(),
            ));
        }
        out.annotations.push(mutation(changed));
        Ok(Some(changed))
    }

    fn back_to_request_version(&self, obj: Value, v: &Attrs, a: &Attrs) -> Value {
        if v.gvr == a.gvr {
            return obj;
        }
        match self.apis.lookup(&a.gvr.0, &a.gvr.1, &a.gvr.2) {
            Some(e) => match &e.def.conversion {
                Some(c) => c.convert(obj, &e.def.api_version()),
                None => obj,
            },
            None => obj,
        }
    }

    /// Run the validating webhooks `hooks` (of
    /// `validatingwebhookconfigurations`) on `a` (concurrently).
    pub(crate) async fn run_validating_webhooks(
        &self,
        a: &Attrs,
        hooks: Vec<Hook>,
        out: &mut Outcome,
    ) -> Result<(), ApiError> {
        if rules::exempt(a) {
            return Ok(());
        }
        let calls = hooks.iter().enumerate().map(|(i, h)| async move {
            let Some(v) = self.invocation(h, a).await? else {
                return Ok(Outcome::default());
            };
            let mut o = Outcome::default();
            match self.call_hook(h, &v, a, false).await {
                Ok(Some(reply)) => collect(h, &reply, &mut o),
                Ok(None) => {}
                Err(e) => {
                    let key = format!(
                        "failed-open.validating.webhook.admission.k8s.io/round_0_index_{i}"
                    );
                    failed(h, e, &key, &mut o)?;
                }
            }
            Ok::<Outcome, ApiError>(o)
        });
        let results = futures::future::join_all(calls).await;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(o) => {
                    out.warnings.extend(o.warnings);
                    out.annotations.extend(o.annotations);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// CEL's view of a webhook request.
fn activation(v: &Attrs) -> Activation {
    let mut act = Activation::default();
    act.set(
        "object",
        v.object.as_ref().map_or(kube_cel::cel::Value::Null, to_cel),
    );
    act.set(
        "oldObject",
        v.old_object
            .as_ref()
            .map_or(kube_cel::cel::Value::Null, to_cel),
    );
    act.set("request", to_cel(&review::request("", v, v)));
    act
}

fn collect(h: &Hook, reply: &Reply, out: &mut Outcome) {
    out.warnings.extend(reply.warnings.iter().cloned());
    for (k, v) in &reply.audit_annotations {
        out.annotations
            .push((format!("{}/{k}", h.name()), v.clone()));
    }
}

/// A webhook that could not be called: the failure policy decides.
fn failed(h: &Hook, e: CallError, key: &str, out: &mut Outcome) -> Result<(), ApiError> {
    match e {
        CallError::Final(e) => Err(e),
        CallError::Calling(msg) => {
            let msg = format!("failed calling webhook {:?}: {msg}", h.name());
            if h.str("failurePolicy", "Fail") == "Ignore" {
                tracing::warn!("{msg}; failing open");
                out.annotations
                    .push((key.to_string(), h.name().to_string()));
                Ok(())
            } else {
                Err(ApiError::internal(msg))
            }
        }
    }
}

/// Upstream's `ToStatusErr`: the webhook's status, its code at least 400.
fn denial(name: &str, status: Option<&Value>) -> ApiError {
    let s = |k: &str| {
        status
            .and_then(|st| st.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let denied = format!("admission webhook {name:?} denied the request");
    let message = match (s("message"), s("reason")) {
        (m, _) if !m.is_empty() => format!("{denied}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied}: {r}"),
        _ => format!("{denied} without explanation"),
    };
    let code = status
        .and_then(|st| st.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut err = ApiError::new(code, Reason::parse(&s("reason")), message);
    err.details = status
        .and_then(|st| {
            ApiError::from_status(&json!({"kind": "Status", "details": st.get("details")}))
        })
        .and_then(|e| e.details)
        .filter(|d: &Details| *d != Details::default());
    err
}
