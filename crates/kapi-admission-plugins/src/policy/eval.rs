//! Evaluating one ValidatingAdmissionPolicy for one binding and one param, as
//! upstream's `validating/validator.go`: `matchConditions` first (a false one
//! skips the policy; an error is a failure under `failurePolicy: Fail`), then
//! `variables` in order (each sees the ones before it as `variables.<name>`),
//! then every validation. A false validation is a denial with its
//! `messageExpression`'s result, else its `message`, else `failed expression:
//! <expression>`, and its `reason` (default Invalid). An expression that fails to
//! evaluate is a denial under `Fail` (`expression '<e>' resulted in error: ...`)
//! and nothing under `Ignore`. `auditAnnotations` are evaluated for the audit log.

use kube_cel::cel::Value as Cel;
use serde_json::Value;

use crate::webhooks::cel::{compile, Activation, Env, MatchResult};
use crate::webhooks::cel_vars::Variables;

/// A denial of one validation (or of a failing expression).
#[derive(Debug, Clone)]
pub struct Denial {
    pub message: String,
    /// Upstream's `StatusReason`; empty for evaluation errors (Invalid).
    pub reason: String,
    /// The validation's index, for the audit annotation.
    pub index: usize,
}

/// What one evaluation produced.
#[derive(Debug, Default)]
pub struct Evaluation {
    pub denials: Vec<Denial>,
    pub audit: Vec<(String, String)>,
}

fn items(spec: &Value, key: &str) -> Vec<Value> {
    spec.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Evaluate policy `spec` with `act` holding object, oldObject, request,
/// params and namespaceObject.
pub fn evaluate(spec: &Value, mut act: Activation) -> Evaluation {
    let fail = str_of(spec, "failurePolicy") != "Ignore";
    let params = spec.get("paramKind").is_some_and(|p| !p.is_null());
    let env = Env::Policy { params };
    let mut out = Evaluation::default();
    let on_error = |out: &mut Evaluation, message: String, index: usize| {
        if fail {
            out.denials.push(Denial {
                message,
                reason: String::new(),
                index,
            });
        }
    };
    // Variables are evaluated when an expression first refers to them (they
    // may be used by the match conditions, too).
    let defs = items(spec, "variables")
        .iter()
        .map(|v| {
            (
                str_of(v, "name").to_string(),
                str_of(v, "expression").to_string(),
            )
        })
        .collect();
    act.set_variables(Variables::new(defs, env, act.clone()));
    let conditions = items(spec, "matchConditions");
    if !conditions.is_empty() {
        match crate::webhooks::cel::match_conditions(&conditions, env, &act) {
            MatchResult::Match => {}
            MatchResult::NoMatch => return out,
            MatchResult::Error(e) => {
                on_error(&mut out, e, 0);
                return out;
            }
        }
    }
    for (i, v) in items(spec, "validations").iter().enumerate() {
        let expr = str_of(v, "expression");
        let result = compile(expr, env).and_then(|p| act.eval(&p));
        match result {
            Ok(Cel::Bool(true)) => {}
            Err(e) => on_error(
                &mut out,
                format!("expression '{expr}' resulted in error: {e}"),
                i,
            ),
            Ok(_) => {
                let reason = match str_of(v, "reason") {
                    "" => "Invalid",
                    r => r,
                };
                out.denials.push(Denial {
                    message: message(v, expr, &act, params),
                    reason: reason.to_string(),
                    index: i,
                });
            }
        }
    }
    for a in items(spec, "auditAnnotations") {
        let key = str_of(&a, "key");
        match compile(str_of(&a, "valueExpression"), env).and_then(|p| act.eval(&p)) {
            Ok(Cel::String(s)) => out.audit.push((key.to_string(), s.to_string())),
            Ok(Cel::Null) => {}
            Ok(_) => on_error(
                &mut out,
                format!(
                    "valueExpression '{}' resulted in error: must evaluate to a string",
                    str_of(&a, "valueExpression")
                ),
                0,
            ),
            Err(e) => on_error(
                &mut out,
                format!(
                    "valueExpression '{}' resulted in error: {e}",
                    str_of(&a, "valueExpression")
                ),
                0,
            ),
        }
    }
    out
}

/// The message of a failed validation.
fn message(v: &Value, expr: &str, act: &Activation, params: bool) -> String {
    let me = str_of(v, "messageExpression");
    if !me.trim().is_empty() {
        let evaluated = compile(me, Env::Message { params }).and_then(|p| act.eval(&p));
        if let Ok(Cel::String(s)) = evaluated {
            let s = s.trim();
            if !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024 {
                return s.to_string();
            }
        }
    }
    match str_of(v, "message").trim() {
        "" => format!("failed expression: {}", expr.trim()),
        m => m.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::cel::to_cel;
    use serde_json::json;

    fn act(obj: Value) -> Activation {
        let mut a = Activation::default();
        a.set("object", to_cel(&obj));
        a.set("params", Cel::Null);
        a
    }

    #[test]
    fn validations_messages_and_failure_policy() {
        let spec = json!({
            "failurePolicy": "Fail",
            "variables": [{"name": "r", "expression": "object.spec.replicas"}],
            "validations": [
                {"expression": "variables.r <= 5"},
                {"expression": "variables.r <= 4", "message": "too many", "reason": "Forbidden"},
                {"expression": "variables.r <= 3", "messageExpression": "'got ' + string(variables.r)"},
                {"expression": "object.nope == 1"},
            ]
        });
        let e = evaluate(&spec, act(json!({"spec": {"replicas": 5}})));
        let msgs: Vec<_> = e.denials.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "too many",
                "got 5",
                "expression 'object.nope == 1' resulted in error: no such key: nope"
            ]
        );
        assert_eq!(e.denials[0].reason, "Forbidden");
        assert_eq!(e.denials[1].reason, "Invalid");
        let mut ignore = spec.clone();
        ignore["failurePolicy"] = json!("Ignore");
        assert_eq!(
            evaluate(&ignore, act(json!({"spec": {"replicas": 5}})))
                .denials
                .len(),
            2
        );
        let e = evaluate(&spec, act(json!({"spec": {"replicas": 6}})));
        assert_eq!(e.denials[0].message, "failed expression: variables.r <= 5");
    }

    #[test]
    fn match_conditions_skip_the_policy() {
        let spec = json!({
            "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 10"}],
            "validations": [{"expression": "false"}]
        });
        assert!(evaluate(&spec, act(json!({"spec": {"replicas": 5}})))
            .denials
            .is_empty());
        assert_eq!(
            evaluate(&spec, act(json!({"spec": {"replicas": 50}})))
                .denials
                .len(),
            1
        );
    }
}
