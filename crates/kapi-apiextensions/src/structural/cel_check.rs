//! The parts of cel-go's type check that rules most often fail: selecting a field
//! the schema does not declare (`undefined field 'nope'`) and calling a function the
//! environment does not have (`undeclared reference to 'f' (in container '')`). The `cel` crate parses
//! without a checker, so this walks the parsed rule with the schema: `self` (and
//! `oldSelf`) have the rule node's schema, comprehension variables the item schema
//! of the list they range over. Objects that accept unknown fields (maps,
//! preserve-unknown-fields, int-or-string) are not checked; a resource root
//! declares `apiVersion`, `kind` and `metadata` (with only `name` and
//! `generateName`).
//!
//! The message copies cel-go's layout: `ERROR: <input>:1:5: undefined field 'nope'`
//! and the source line with a caret under the selecting dot.

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::cel::{function_exists, unescape};
use super::Node;

/// What a name in the rule refers to.
#[derive(Clone, Copy)]
enum Ty<'a> {
    Unknown,
    Node(&'a Node, bool),
    /// A resource root's `metadata`: only name and generateName.
    Meta,
}

/// The first undefined field selected in `e`, as a compile error text.
pub(super) fn undefined_field(e: &IdedExpr, n: &Node, root: bool, source: &str) -> Option<String> {
    let mut c = Checker {
        vars: vec![("self", Ty::Node(n, root)), ("oldSelf", Ty::Node(n, root))],
        found: None,
    };
    c.walk(e);
    c.found.map(|f| message(source, &f))
}

/// The first call of a function the environment does not have (cel-go:
/// `undeclared reference to 'f' (in container '')`, at the call's parenthesis).
pub(super) fn undeclared_function(e: &IdedExpr, source: &str) -> Option<String> {
    let name = first_unknown_call(e)?;
    let needle = format!("{name}(");
    let (line_no, line, col) = source
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(&needle).map(|c| (i + 1, l, c + name.len())))
        .unwrap_or((1, source.lines().next().unwrap_or(""), 0));
    let col_chars = line.get(..col).map_or(0, |p| p.chars().count());
    Some(format!(
        "ERROR: <input>:{line_no}:{}: undeclared reference to '{name}' (in container '')\n | {line}\n | {}^",
        col_chars + 1,
        ".".repeat(col_chars)
    ))
}

/// Operators (`_+_`, `@in`, `!_`) and namespaced names are not looked up.
fn first_unknown_call(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Call(call) => {
            let f = call.func_name.as_str();
            let plain = f.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let ns = match call.target.as_deref().map(|t| &t.expr) {
                Some(Expr::Ident(ns)) => Some(ns.as_str()),
                _ => None,
            };
            if plain && !function_exists(ns, f) {
                return Some(f.to_string());
            }
            call.target
                .iter()
                .map(|t| &**t)
                .chain(call.args.iter())
                .find_map(first_unknown_call)
        }
        Expr::Select(sel) => first_unknown_call(&sel.operand),
        Expr::List(l) => l.elements.iter().find_map(first_unknown_call),
        Expr::Map(m) => m.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(me) => {
                first_unknown_call(&me.key).or_else(|| first_unknown_call(&me.value))
            }
            EntryExpr::StructField(_) => None,
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(first_unknown_call),
        Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) | Expr::Struct(_) => None,
    }
}

struct Checker<'a> {
    vars: Vec<(&'a str, Ty<'a>)>,
    found: Option<String>,
}

fn message(source: &str, field: &str) -> String {
    let needle = format!(".{field}");
    let (line_no, line, col) = source
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(&needle).map(|c| (i + 1, l, c)))
        .unwrap_or((1, source.lines().next().unwrap_or(""), 0));
    let col_chars = line[..col].chars().count();
    format!(
        "ERROR: <input>:{line_no}:{}: undefined field '{field}'\n | {line}\n | {}^",
        col_chars + 1,
        ".".repeat(col_chars)
    )
}

fn select<'a>(ty: Ty<'a>, field: &str) -> Result<Ty<'a>, ()> {
    match ty {
        Ty::Unknown => Ok(Ty::Unknown),
        Ty::Meta => match field {
            "name" | "generateName" => Ok(Ty::Unknown),
            _ => Err(()),
        },
        Ty::Node(n, root) => {
            let name = unescape(field);
            if let Some(p) = n.properties.get(&name) {
                if (root || n.x_embedded_resource) && name == "metadata" {
                    return Ok(Ty::Meta);
                }
                return Ok(Ty::Node(p, p.x_embedded_resource));
            }
            if (root || n.x_embedded_resource) && ["apiVersion", "kind"].contains(&field) {
                return Ok(Ty::Unknown);
            }
            if (root || n.x_embedded_resource) && field == "metadata" {
                return Ok(Ty::Meta);
            }
            if let Some(ap) = n.additional_schema() {
                return Ok(Ty::Node(ap, ap.x_embedded_resource));
            }
            let open = n.x_preserve_unknown_fields
                || n.x_int_or_string
                || n.additional_properties.is_some()
                || n.ty != "object";
            if open {
                Ok(Ty::Unknown)
            } else {
                Err(())
            }
        }
    }
}

impl<'a> Checker<'a> {
    fn walk(&mut self, e: &'a IdedExpr) -> Ty<'a> {
        if self.found.is_some() {
            return Ty::Unknown;
        }
        match &e.expr {
            Expr::Ident(name) => self
                .vars
                .iter()
                .rev()
                .find(|(v, _)| v == name)
                .map_or(Ty::Unknown, |(_, t)| *t),
            Expr::Select(sel) => {
                let operand = self.walk(&sel.operand);
                match select(operand, &sel.field) {
                    Ok(t) => t,
                    Err(()) => {
                        self.found = Some(sel.field.clone());
                        Ty::Unknown
                    }
                }
            }
            Expr::Call(call) => {
                if let Some(t) = &call.target {
                    self.walk(t);
                }
                for a in &call.args {
                    self.walk(a);
                }
                Ty::Unknown
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.walk(x);
                }
                Ty::Unknown
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        self.walk(&me.key);
                        self.walk(&me.value);
                    }
                }
                Ty::Unknown
            }
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range);
                let elem = match range {
                    Ty::Node(n, _) if n.ty == "array" => n
                        .items
                        .as_deref()
                        .map_or(Ty::Unknown, |i| Ty::Node(i, i.x_embedded_resource)),
                    _ => Ty::Unknown,
                };
                self.walk(&c.accu_init);
                self.vars.push((c.iter_var.as_str(), elem));
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.vars.pop();
                self.walk(&c.result);
                Ty::Unknown
            }
            Expr::Unspecified | Expr::Literal(_) | Expr::Struct(_) => Ty::Unknown,
        }
    }
}
