//! Running the CEL expressions of admission: webhook `matchConditions` and the
//! expressions of ValidatingAdmissionPolicies. Expressions compile with
//! `kapi_resources::admissionregistration::cel::compile` (the check that rejects
//! bad expressions at create); values are the request's JSON as CEL sees an
//! unstructured object (integers are `int`, objects are maps keyed by strings).
//!
//! Evaluation is synchronous and runs in a thread-local context holding the
//! standard and Kubernetes CEL functions and the `authorizer` library
//! (`cel_authz.rs`; registering them costs more than evaluating a typical
//! expression); each evaluation adds its variables in an inner scope.
//!
//! Upstream declares `authorizer.requestResource` as one qualified variable and
//! `variables` as an object whose fields are evaluated on first use. The
//! interpreter here only selects fields of maps, so [`compile`] turns
//! `authorizer.<field>` and `variables.<name>` into identifiers of those
//! dotted names (and `has(variables.<name>)` into a test on the declared
//! names): the activation binds the first, the policy's lazy variables
//! (`cel_vars.rs`) resolve the second. Expressions that name `authorizer` are
//! evaluated on a blocking thread ([`run`]) because a check waits for the
//! (async) authorizer chain.

use std::sync::Arc;

use kube_cel::cel::common::ast::{operators, CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::common::types::CelString;
use kube_cel::cel::{Context, ExecutionError, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

pub use kapi_resources::admissionregistration::cel::Env;

use super::cel_vars::Variables;

/// The activation name of the list of declared policy variables (`has()`).
pub(crate) const VARIABLE_NAMES: &str = "@variables";

/// Roots whose fields are qualified identifiers (see the module comment).
const QUALIFIED: [&str; 2] = ["authorizer", "variables"];

/// One compiled expression, its qualified names rewritten.
#[derive(Debug, Clone)]
pub struct Compiled(IdedExpr);

/// Compile `src` for `env` (errors are upstream's `compilation failed: ...`).
pub fn compile(src: &str, env: Env) -> Result<Compiled, String> {
    let program = kapi_resources::admissionregistration::cel::compile(src, env)?;
    let mut expr = program.expression().clone();
    qualify(&mut expr, &mut Vec::new());
    Ok(Compiled(expr))
}

fn ided(id: u64, expr: Expr) -> IdedExpr {
    IdedExpr { id, expr }
}

/// Rewrite `authorizer.<f>` and `variables.<f>` (unless a comprehension binds
/// the root's name) into identifiers.
fn qualify(e: &mut IdedExpr, scope: &mut Vec<String>) {
    if let Expr::Select(s) = &e.expr {
        if let Expr::Ident(root) = &s.operand.expr {
            if QUALIFIED.contains(&root.as_str()) && !scope.contains(root) {
                let name = format!("{root}.{}", s.field);
                if !s.test {
                    e.expr = Expr::Ident(name);
                } else if root == "variables" {
                    let field =
                        Expr::Literal(LiteralValue::String(CelString::from(s.field.as_str())));
                    e.expr = Expr::Call(CallExpr {
                        func_name: operators::IN.to_string(),
                        target: None,
                        args: vec![
                            ided(e.id, field),
                            ided(e.id, Expr::Ident(VARIABLE_NAMES.to_string())),
                        ],
                    });
                }
                return;
            }
        }
    }
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = c.target.as_mut() {
                qualify(t, scope);
            }
            c.args.iter_mut().for_each(|a| qualify(a, scope));
        }
        Expr::Select(s) => qualify(&mut s.operand, scope),
        Expr::List(l) => l.elements.iter_mut().for_each(|a| qualify(a, scope)),
        Expr::Map(m) => m.entries.iter_mut().for_each(|en| match &mut en.expr {
            EntryExpr::MapEntry(me) => {
                qualify(&mut me.key, scope);
                qualify(&mut me.value, scope);
            }
            EntryExpr::StructField(f) => qualify(&mut f.value, scope),
        }),
        Expr::Comprehension(c) => {
            qualify(&mut c.iter_range, scope);
            qualify(&mut c.accu_init, scope);
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            scope.extend(c.iter_var2.clone());
            scope.push(c.accu_var.clone());
            for x in [&mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                qualify(x, scope);
            }
            scope.truncate(depth);
        }
        _ => {}
    }
}

/// Whether any string in `v` (a spec or a list of expressions) names
/// `authorizer`: such expressions are evaluated with [`run`] on a blocking thread.
pub fn mentions_authorizer(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("authorizer"),
        Value::Array(a) => a.iter().any(mentions_authorizer),
        Value::Object(m) => m.values().any(mentions_authorizer),
        _ => false,
    }
}

/// Run `f` inline, or on a blocking thread when its expressions may ask the
/// authorizer (whose answer a check waits for).
pub async fn run<T: Send + 'static>(blocking: bool, f: impl FnOnce() -> T + Send + 'static) -> T {
    if !blocking {
        return f();
    }
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("CEL evaluation task ended: {e}"),
    }
}

/// A JSON value as a CEL value (one conversion for every CEL user).
pub use kapi_auth::cel::to_cel;

fn dyn_identity(v: Cel) -> kube_cel::cel::ResolveResult {
    Ok(v)
}

thread_local! {
    static BASE_CONTEXT: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx.add_function("dyn", dyn_identity);
        super::cel_authz::register(&mut ctx);
        ctx
    };
}

/// The variables of one evaluation, by name, and a policy's lazy `variables`.
#[derive(Default, Clone)]
pub struct Activation {
    vars: Vec<(&'static str, Cel)>,
    pub(crate) lazy: Option<Arc<Variables>>,
}

impl Activation {
    pub fn set(&mut self, name: &'static str, value: Cel) {
        self.vars.retain(|(n, _)| *n != name);
        self.vars.push((name, value));
    }

    /// Resolve `variables.<name>` through `v`.
    pub fn set_variables(&mut self, v: Arc<Variables>) {
        self.set(VARIABLE_NAMES, v.names());
        self.lazy = Some(v);
    }

    /// Evaluate `expr`; errors are worded as cel-go's.
    pub fn eval(&self, expr: &Compiled) -> Result<Cel, String> {
        self.eval_with(expr, self.lazy.as_deref())
    }

    /// Evaluate with `lazy` resolving `variables.<name>` (a variable's own
    /// expression sees the other variables through the same `lazy`).
    pub(crate) fn eval_with(
        &self,
        expr: &Compiled,
        lazy: Option<&Variables>,
    ) -> Result<Cel, String> {
        BASE_CONTEXT.with(|base| {
            let mut ctx = base.new_inner_scope();
            for (n, v) in &self.vars {
                ctx.add_variable_from_value(*n, v.clone());
            }
            if let Some(l) = lazy {
                ctx.set_variable_resolver(l);
            }
            Cel::resolve(&expr.0, &ctx).map_err(|e| {
                lazy.and_then(|l| l.explain(&e))
                    .unwrap_or_else(|| go_error(&e))
            })
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
    fn qualified_names_become_identifiers_unless_shadowed() {
        let mut act = Activation::default();
        act.set("authorizer.requestResource", Cel::Int(7));
        let env = Env::Policy { params: false };
        let p = compile("authorizer.requestResource == 7", env).unwrap();
        assert!(matches!(act.eval(&p), Ok(Cel::Bool(true))));
        // A comprehension variable named like a root is an ordinary map.
        let p = compile("[{'x': 1}].all(variables, variables.x == 1)", env).unwrap();
        assert!(matches!(act.eval(&p), Ok(Cel::Bool(true))));
        let p = compile("authorizer.nope", env).unwrap();
        assert_eq!(
            act.eval(&p).unwrap_err(),
            "undeclared reference to 'authorizer.nope'"
        );
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
