//! CEL in the API server's own configuration files: the claim mappings and
//! validation rules of structured authentication (variables `claims` and
//! `user`) and the `matchConditions` of authorization webhooks (`request`).
//!
//! Expressions compile with the same parser and undeclared-name check as
//! admission's (`kapi_resources::admissionregistration::cel`), so the errors
//! are upstream's `compilation failed: ...` details. Values are JSON as CEL
//! sees unstructured data (integers are `int`, objects are maps keyed by
//! strings). Evaluation runs in a thread-local context holding the standard
//! and Kubernetes CEL functions; each evaluation adds its variables in an
//! inner scope. No type checker runs before evaluation, so an expression of
//! the wrong result type is reported when evaluated (as upstream's runtime
//! checks word it), not at load.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::{Context, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

/// One compiled expression and its source.
#[derive(Debug, Clone)]
pub struct Expression {
    pub source: String,
    expr: IdedExpr,
}

/// Compile `src` where only the variables `declared` exist.
pub fn compile(src: &str, declared: &[&str]) -> Result<Expression, String> {
    let program = kapi_resources::admissionregistration::cel::compile_declared(src, declared)?;
    Ok(Expression {
        source: src.to_string(),
        expr: program.expression().clone(),
    })
}

thread_local! {
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx
    };
}

impl Expression {
    /// Evaluate with `vars` bound; errors are worded as cel-go's.
    pub fn eval(&self, vars: &[(&'static str, Cel)]) -> Result<Cel, String> {
        BASE.with(|base| {
            let mut ctx = base.new_inner_scope();
            for (name, value) in vars {
                ctx.add_variable_from_value(*name, value.clone());
            }
            Cel::resolve(&self.expr, &ctx).map_err(|e| lower_first(&e.to_string()))
        })
    }

    /// Whether the expression selects `root.field` (or `root.?field`) anywhere.
    pub fn selects(&self, root: &str, field: &str) -> bool {
        selects(&self.expr, root, field)
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn selects(e: &IdedExpr, root: &str, field: &str) -> bool {
    let is_root = |x: &IdedExpr| matches!(&x.expr, Expr::Ident(n) if n == root);
    let rec = |x: &IdedExpr| selects(x, root, field);
    match &e.expr {
        Expr::Select(s) => (is_root(&s.operand) && s.field == field) || rec(&s.operand),
        Expr::Call(c) => {
            // `root.?field` parses as a call of `_?._` with a string argument.
            let optional = c.func_name == "_?._"
                && c.args.len() == 2
                && is_root(&c.args[0])
                && matches!(&c.args[1].expr,
                    Expr::Literal(kube_cel::cel::common::ast::LiteralValue::String(s)) if s.inner() == field);
            optional || c.target.as_deref().is_some_and(rec) || c.args.iter().any(rec)
        }
        Expr::List(l) => l.elements.iter().any(rec),
        Expr::Map(m) => m.entries.iter().any(|en| match &en.expr {
            EntryExpr::MapEntry(me) => rec(&me.key) || rec(&me.value),
            EntryExpr::StructField(f) => rec(&f.value),
        }),
        Expr::Struct(s) => s.entries.iter().any(|en| match &en.expr {
            EntryExpr::MapEntry(me) => rec(&me.key) || rec(&me.value),
            EntryExpr::StructField(f) => rec(&f.value),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(rec),
        _ => false,
    }
}

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

/// A string result, or `None` for any other type.
pub fn as_string(v: &Cel) -> Option<String> {
    match v {
        Cel::String(s) => Some(s.to_string()),
        _ => None,
    }
}

/// A string or a list of strings, empty strings dropped; `null` is none
/// (upstream's `convertCELValueToStringList`).
pub fn as_string_list(v: &Cel) -> Result<Vec<String>, String> {
    const ERR: &str = "expression must return a string or a list of strings";
    match v {
        Cel::Null => Ok(Vec::new()),
        Cel::String(s) if s.is_empty() => Ok(Vec::new()),
        Cel::String(s) => Ok(vec![s.to_string()]),
        Cel::List(items) => items
            .iter()
            .filter_map(|i| match i {
                Cel::String(s) if s.is_empty() => None,
                Cel::String(s) => Some(Ok(s.to_string())),
                _ => Some(Err(ERR.to_string())),
            })
            .collect(),
        _ => Err(ERR.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compile_eval_and_results() {
        let e = compile("claims.sub + ':' + claims.hd", &["claims"]).unwrap();
        let claims = to_cel(&json!({"sub": "alice", "hd": "example.com"}));
        let v = e.eval(&[("claims", claims.clone())]).unwrap();
        assert_eq!(as_string(&v).as_deref(), Some("alice:example.com"));
        let err = compile("user.username", &["claims"]).unwrap_err();
        assert!(err.contains("undeclared reference to 'user'"), "{err}");
        let g = compile("['a', '', 'b']", &["claims"]).unwrap();
        let v = g.eval(&[("claims", claims.clone())]).unwrap();
        assert_eq!(as_string_list(&v).unwrap(), vec!["a", "b"]);
        let bad = compile("[1]", &["claims"]).unwrap();
        assert!(as_string_list(&bad.eval(&[]).unwrap()).is_err());
        let missing = compile("claims.nope", &["claims"]).unwrap();
        assert!(missing.eval(&[("claims", claims)]).is_err());
    }

    #[test]
    fn selects_finds_fields() {
        let e = compile("claims.email_verified ? claims.email : 'x'", &["claims"]).unwrap();
        assert!(e.selects("claims", "email"));
        assert!(e.selects("claims", "email_verified"));
        assert!(!e.selects("claims", "sub"));
        let o = compile("claims.?email.orValue('')", &["claims"]);
        if let Ok(o) = o {
            assert!(o.selects("claims", "email"));
        }
    }
}
