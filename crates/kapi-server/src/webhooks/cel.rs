//! Running the CEL expressions of admission: webhook `matchConditions` and the
//! expressions of ValidatingAdmissionPolicies. Expressions compile with
//! `kapi_resources::admissionregistration::cel::compile` (the check that rejects
//! bad expressions at create); values are the request's JSON as CEL sees an
//! unstructured object (integers are `int`, objects are maps keyed by strings).
//!
//! Evaluation is synchronous and runs in a thread-local context holding the
//! standard and Kubernetes CEL functions (registering them costs more than
//! evaluating a typical expression); each evaluation adds its variables in an
//! inner scope. `authorizer` is declared for compilation but not bound: an
//! expression using it fails at run time, and the failure policy decides.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

pub use kapi_resources::admissionregistration::cel::{compile, Env};

/// A JSON value as a CEL value.
pub fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => match n.as_u64() {
                Some(u) => Cel::UInt(u),
                None => Cel::Float(n.as_f64().unwrap_or(0.0)),
            },
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// A map of already-converted values (the `variables` of a policy).
pub fn cel_map(entries: impl IntoIterator<Item = (String, Cel)>) -> Cel {
    let map: HashMap<Key, Cel> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Cel::Map(CelMap { map: Arc::new(map) })
}

fn dyn_identity(v: Cel) -> kube_cel::cel::ResolveResult {
    Ok(v)
}

thread_local! {
    static BASE_CONTEXT: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx.add_function("dyn", dyn_identity);
        ctx
    };
}

/// The variables of one evaluation, by name.
#[derive(Default, Clone)]
pub struct Activation {
    vars: Vec<(&'static str, Cel)>,
}

impl Activation {
    pub fn set(&mut self, name: &'static str, value: Cel) {
        self.vars.retain(|(n, _)| *n != name);
        self.vars.push((name, value));
    }

    /// Evaluate `program`; errors are worded as cel-go's.
    pub fn eval(&self, program: &Program) -> Result<Cel, String> {
        BASE_CONTEXT.with(|base| {
            let mut ctx = base.new_inner_scope();
            for (n, v) in &self.vars {
                ctx.add_variable_from_value(*n, v.clone());
            }
            program.execute(&ctx).map_err(|e| go_error(&e))
        })
    }
}

/// cel-go's wording of an evaluation error.
fn go_error(e: &ExecutionError) -> String {
    use ExecutionError as E;
    match e {
        E::NoSuchOverload
        | E::UnsupportedBinaryOperator(..)
        | E::UnsupportedUnaryOperator(..)
        | E::ValuesNotComparable(..)
        | E::UnexpectedType { .. }
        | E::UnsupportedTargetType { .. }
        | E::NotSupportedAsMethod { .. } => "no such overload".to_string(),
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::DivisionByZero(_) => "division by zero".to_string(),
        E::RemainderByZero(_) => "modulus by zero".to_string(),
        E::Overflow(..) => "integer overflow".to_string(),
        E::FunctionError { message, .. } => message.clone(),
        other => {
            let t = other.to_string();
            let mut c = t.chars();
            c.next()
                .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    }
}

/// The outcome of a list of `matchConditions` (upstream's matcher): all true →
/// match; any false → no match, whatever errors others had; otherwise the errors.
pub enum MatchResult {
    Match,
    NoMatch,
    Error(String),
}

/// Evaluate `matchConditions` (`[{name, expression}]`) with `act`.
pub fn match_conditions(conditions: &[Value], env: Env, act: &Activation) -> MatchResult {
    let mut errors = Vec::new();
    for c in conditions {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let expr = c.get("expression").and_then(Value::as_str).unwrap_or("");
        let result = compile(expr, env).and_then(|p| act.eval(&p));
        match result {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return MatchResult::NoMatch,
            Ok(_) => errors.push(format!(
                "matchCondition '{name}' must evaluate to a bool: expression '{expr}'"
            )),
            Err(e) => errors.push(format!("expression '{expr}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => MatchResult::Match,
        1 => MatchResult::Error(errors.remove(0)),
        _ => MatchResult::Error(format!("[{}]", errors.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_evaluate_as_unstructured() {
        let mut act = Activation::default();
        act.set(
            "object",
            to_cel(&json!({"spec": {"replicas": 3, "x": [1, 2]}})),
        );
        let env = Env::Policy { params: false };
        let p = compile("object.spec.replicas > 2 && size(object.spec.x) == 2", env).unwrap();
        assert!(matches!(act.eval(&p), Ok(Cel::Bool(true))));
        let p = compile("has(object.metadata)", env).unwrap();
        assert!(matches!(act.eval(&p), Ok(Cel::Bool(false))));
        let p = compile("object.metadata.name == 'a'", env).unwrap();
        assert_eq!(act.eval(&p).unwrap_err(), "no such key: metadata");
    }

    #[test]
    fn match_conditions_false_wins_over_errors() {
        let mut act = Activation::default();
        act.set("object", to_cel(&json!({"a": 1})));
        let c = |e: &str| json!({"name": "n", "expression": e});
        let env = Env::WebhookMatch;
        assert!(matches!(
            match_conditions(&[c("object.a == 1")], env, &act),
            MatchResult::Match
        ));
        assert!(matches!(
            match_conditions(&[c("object.b == 1"), c("object.a == 2")], env, &act),
            MatchResult::NoMatch
        ));
        assert!(matches!(
            match_conditions(&[c("object.b == 1")], env, &act),
            MatchResult::Error(_)
        ));
    }
}
