//! Compiling the CEL expressions of admission configuration: ValidatingAdmissionPolicy
//! `validations`, `variables`, `matchConditions`, `auditAnnotations` and webhook
//! `matchConditions`. An expression that does not parse, or names a variable its
//! environment does not declare (upstream's type checker reports both), is rejected
//! at create and update with upstream's `compilation failed: ...` detail. The same
//! [`compile`] is what `kapi-server` runs the expressions with, so an expression
//! accepted here is one the server can evaluate.
//!
//! What is declared depends on where an expression lives ([`Env`]): `object`,
//! `oldObject`, `request` and `authorizer` everywhere; `params` in policies with a
//! `paramKind`; `namespaceObject` and `variables` in policies. Type errors that
//! need the objects' schemas (upstream's `status.typeChecking` warnings) are not
//! checked.

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::Program;

/// cel-go's `ExpressionSizeCodePointLimit`.
const MAX_CODE_POINTS: usize = 100_000;
/// Bounds the recursion of parsing and evaluation (see kapi-apiextensions' rules).
const MAX_OPERATORS: usize = 1000;

/// Where an expression lives, which decides the variables it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Env {
    /// A webhook's `matchConditions`.
    WebhookMatch,
    /// A policy's `matchConditions`, `validations`, `variables`, `auditAnnotations`.
    Policy { params: bool },
    /// A policy's `messageExpression` (no `authorizer`).
    Message { params: bool },
}

impl Env {
    fn declared(self) -> &'static [&'static str] {
        match self {
            Env::WebhookMatch => &["object", "oldObject", "request", "authorizer"],
            Env::Policy { params: true } => &[
                "object",
                "oldObject",
                "request",
                "authorizer",
                "namespaceObject",
                "variables",
                "params",
            ],
            Env::Policy { params: false } => &[
                "object",
                "oldObject",
                "request",
                "authorizer",
                "namespaceObject",
                "variables",
            ],
            Env::Message { params: true } => &[
                "object",
                "oldObject",
                "request",
                "namespaceObject",
                "variables",
                "params",
            ],
            Env::Message { params: false } => &[
                "object",
                "oldObject",
                "request",
                "namespaceObject",
                "variables",
            ],
        }
    }
}

/// Identifiers that are not variables: type names and the receivers of the
/// namespaced functions of the Kubernetes CEL libraries (`math.greatest`).
const BUILTIN_IDENTS: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "type",
    "null_type",
    "duration",
    "timestamp",
    "dyn",
    "math",
    "strings",
    "sets",
    "lists",
    "base64",
    "optional",
    "url",
    "ip",
    "cidr",
    "quantity",
    "semver",
    "regex",
    "format",
];

fn operator_chars(src: &str) -> usize {
    let mut count = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in src.chars() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if "+-*/%<>=!&|?.[({".contains(c) => count += 1,
            None => {}
        }
    }
    count
}

/// Compile `src` for `env`; the error is the detail upstream reports
/// (`compilation failed: ERROR: <input>:1:5: ...`).
pub fn compile(src: &str, env: Env) -> Result<Program, String> {
    compile_declared(src, env.declared())
}

/// Compile `src` where the variables `declared` exist (the environments of
/// the API server's own configuration files — authentication's `claims` and
/// `user`, authorization's `request` — use this).
pub fn compile_declared(src: &str, declared: &[&str]) -> Result<Program, String> {
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(format!(
            "compilation failed: expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        ));
    }
    if operator_chars(src) > MAX_OPERATORS {
        return Err(format!("compilation failed: ERROR: <input>:1:1: expression recursion limit exceeded: more than {MAX_OPERATORS} operators"));
    }
    let program = Program::compile(src).map_err(|e| {
        format!(
            "compilation failed: {}",
            e.to_string().replace("\n| ", "\n | ")
        )
    })?;
    let mut scope = Vec::new();
    if let Some(name) = undeclared(&program.expression().expr, declared, &mut scope) {
        let (line, col) = position(src, &name);
        return Err(format!(
            "compilation failed: ERROR: <input>:{line}:{col}: undeclared reference to '{name}' (in container '')"
        ));
    }
    Ok(program)
}

/// The 1-based line and column of the first whole-word occurrence of `name`.
fn position(src: &str, name: &str) -> (usize, usize) {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = src[from..].find(name).map(|i| i + from) {
        let before = src[..i].chars().next_back();
        let after = src[i + name.len()..].chars().next();
        if !before.is_some_and(|c| is_word(c) || c == '.') && !after.is_some_and(is_word) {
            let line = src[..i].matches('\n').count() + 1;
            let col = i - src[..i].rfind('\n').map_or(0, |n| n + 1) + 1;
            return (line, col);
        }
        from = i + name.len();
    }
    (1, 1)
}

/// The first identifier that is neither declared, a builtin, nor bound by an
/// enclosing comprehension (`scope`).
fn undeclared(e: &Expr, declared: &[&str], scope: &mut Vec<String>) -> Option<String> {
    let sub = |x: &IdedExpr, scope: &mut Vec<String>| undeclared(&x.expr, declared, scope);
    match e {
        Expr::Ident(name) => {
            let known = name.starts_with('@')
                || declared.contains(&name.as_str())
                || BUILTIN_IDENTS.contains(&name.as_str())
                || scope.iter().any(|s| s == name);
            (!known).then(|| name.clone())
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                if let Some(n) = sub(t, scope) {
                    return Some(n);
                }
            }
            c.args.iter().find_map(|a| sub(a, scope))
        }
        Expr::Select(s) => sub(&s.operand, scope),
        Expr::List(l) => l.elements.iter().find_map(|a| sub(a, scope)),
        Expr::Map(m) => m
            .entries
            .iter()
            .find_map(|en| entry(&en.expr, declared, scope)),
        Expr::Struct(s) => s
            .entries
            .iter()
            .find_map(|en| entry(&en.expr, declared, scope)),
        Expr::Comprehension(c) => {
            if let Some(n) = sub(&c.iter_range, scope) {
                return Some(n);
            }
            if let Some(n) = sub(&c.accu_init, scope) {
                return Some(n);
            }
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            scope.push(c.accu_var.clone());
            let found = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .find_map(|x| sub(x, scope));
            scope.truncate(depth);
            found
        }
        _ => None,
    }
}

fn entry(e: &EntryExpr, declared: &[&str], scope: &mut Vec<String>) -> Option<String> {
    match e {
        EntryExpr::StructField(f) => undeclared(&f.value.expr, declared, scope),
        EntryExpr::MapEntry(m) => undeclared(&m.key.expr, declared, scope)
            .or_else(|| undeclared(&m.value.expr, declared, scope)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_and_undeclared_names_do_not_compile() {
        let p = Env::Policy { params: false };
        assert!(compile("object.spec.replicas <= 5", p).is_ok());
        assert!(compile("object.spec.containers.all(c, c.image != '')", p).is_ok());
        assert!(compile("variables.x && math.greatest(1, 2) == 2", p).is_ok());
        let e = compile("object.spec.replicas <=", p).unwrap_err();
        assert!(
            e.starts_with("compilation failed: ERROR: <input>:1:"),
            "{e}"
        );
        let e = compile("foo.bar == 1", p).unwrap_err();
        assert_eq!(
            e,
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"
        );
        assert!(compile("params.max > 1", p).is_err());
        assert!(compile("params.max > 1", Env::Policy { params: true }).is_ok());
        assert!(compile("namespaceObject.metadata.name == 'x'", Env::WebhookMatch).is_err());
        assert!(compile("[1].all(x, x > y)", p).is_err());
    }
}
