//! A ValidatingAdmissionPolicy's `variables`, evaluated lazily as upstream's
//! composition (`admission/plugin/cel/composition.go`): a variable is evaluated
//! the first time an expression refers to it (`variables.<name>`, an
//! identifier after `cel::compile`), at most once per evaluation of the policy
//! (one [`Variables`] per binding and param), and its result or error is kept
//! for the later references. A variable nobody refers to is never evaluated, so
//! its error fails nothing; a referenced one that fails makes the referring
//! expression fail with `composited variable "<name>" fails to evaluate: <error>`.
//!
//! The interpreter asks a `VariableResolver` for identifiers, which can only
//! answer a value or nothing; on a failure the resolver answers nothing and
//! [`Variables::explain`] turns the resulting "undeclared reference" back into
//! the variable's error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::cel::context::VariableResolver;
use kube_cel::cel::{ExecutionError, Value as Cel};

use super::cel::{compile, Activation, Env};

/// The evaluation state of one variable.
enum Slot {
    /// Being evaluated (a reference now is a cycle).
    Evaluating,
    Done(Result<Cel, String>),
}

/// The variables of one policy evaluation.
pub struct Variables {
    /// Name and expression, in declaration order.
    defs: Vec<(String, String)>,
    env: Env,
    /// What the variables' expressions see (everything but `variables`).
    base: Activation,
    state: Mutex<HashMap<String, Slot>>,
}

const PREFIX: &str = "variables.";

/// Upstream cannot get here (a variable only sees those declared before it).
fn cycle(name: &str) -> String {
    format!("composited variable {name:?} fails to evaluate: it refers to itself")
}

impl Variables {
    pub fn new(defs: Vec<(String, String)>, env: Env, base: Activation) -> Arc<Variables> {
        Arc::new(Variables {
            defs,
            env,
            base,
            state: Mutex::new(HashMap::new()),
        })
    }

    /// The declared names, as a CEL list.
    pub fn names(&self) -> Cel {
        let names = self
            .defs
            .iter()
            .map(|(n, _)| Cel::String(Arc::new(n.clone())))
            .collect();
        Cel::List(Arc::new(names))
    }

    /// The value of `name`, evaluated now if it has not been; `None` when no
    /// such variable is declared.
    fn value(&self, name: &str) -> Option<Result<Cel, String>> {
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            match state.get(name) {
                Some(Slot::Done(r)) => return Some(r.clone()),
                Some(Slot::Evaluating) => return Some(Err(cycle(name))),
                None => {}
            }
            if !self.defs.iter().any(|(n, _)| n == name) {
                return None;
            }
            state.insert(name.to_string(), Slot::Evaluating);
        }
        // The last declaration of a name wins, as upstream's map of variables.
        let expr = self
            .defs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.as_str())
            .unwrap_or("");
        let result = match compile(expr, self.env) {
            Err(e) => Err(format!(
                "composited variable {name:?} fails to compile: {e}"
            )),
            Ok(c) => self
                .base
                .eval_with(&c, Some(self))
                .map_err(|e| format!("composited variable {name:?} fails to evaluate: {e}")),
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.insert(name.to_string(), Slot::Done(result.clone()));
        Some(result)
    }

    /// The message of an evaluation error caused by a failed variable.
    pub fn explain(&self, e: &ExecutionError) -> Option<String> {
        let ExecutionError::UndeclaredReference(id) = e else {
            return None;
        };
        let name = id.strip_prefix(PREFIX)?;
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.get(name) {
            Some(Slot::Done(Err(m))) => Some(m.clone()),
            Some(Slot::Evaluating) => Some(cycle(name)),
            _ => None,
        }
    }
}

impl VariableResolver for Variables {
    fn resolve(&self, variable: &str) -> Option<Cel> {
        let name = variable.strip_prefix(PREFIX)?;
        self.value(name)?.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::cel::to_cel;
    use serde_json::json;

    fn vars(defs: &[(&str, &str)]) -> Activation {
        let env = Env::Policy { params: false };
        let mut base = Activation::default();
        base.set("object", to_cel(&json!({"n": 2})));
        let defs = defs
            .iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect();
        let mut act = base.clone();
        act.set_variables(Variables::new(defs, env, base));
        act
    }

    fn eval(act: &Activation, src: &str) -> Result<Cel, String> {
        act.eval(&compile(src, Env::Policy { params: false }).unwrap())
    }

    #[test]
    fn unreferenced_errors_do_not_fail() {
        let act = vars(&[("bad", "object.missing == 1"), ("good", "object.n * 2")]);
        assert!(matches!(
            eval(&act, "variables.good == 4"),
            Ok(Cel::Bool(true))
        ));
        assert!(matches!(
            eval(&act, "false && variables.bad"),
            Ok(Cel::Bool(false))
        ));
        assert_eq!(
            eval(&act, "variables.bad").unwrap_err(),
            r#"composited variable "bad" fails to evaluate: no such key: missing"#
        );
        assert!(matches!(
            eval(&act, "has(variables.good) && !has(variables.nope)"),
            Ok(Cel::Bool(true))
        ));
    }

    #[test]
    fn variables_see_earlier_ones_and_evaluate_once() {
        let act = vars(&[("a", "object.n + 1"), ("b", "variables.a * 10")]);
        assert!(matches!(eval(&act, "variables.b"), Ok(Cel::Int(30))));
        let lazy = act.lazy.clone().unwrap();
        let done = |n: &str| {
            matches!(
                lazy.state.lock().unwrap().get(n),
                Some(Slot::Done(Ok(Cel::Int(_))))
            )
        };
        assert!(done("a") && done("b"));
        let act = vars(&[("a", "variables.b"), ("b", "variables.a")]);
        let e = eval(&act, "variables.a").unwrap_err();
        assert!(e.contains("refers to itself"), "{e}");
    }
}
