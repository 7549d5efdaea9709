//! Cost limits of CEL rules, modelled on cel-go's cost estimator as the apiextensions
//! server configures it. The `cel` crate has no cost tracking, so this module prices
//! a rule's syntax tree itself, in two modes:
//!
//! - static (CRD write): value sizes come from the schema (`maxLength`, `maxItems`,
//!   `maxProperties`, else the most a 3 MiB request could hold); a rule above
//!   [`STATIC_RULE_LIMIT`] is rejected, and so is a schema whose rules, each
//!   multiplied by how often it can run (the sizes of the lists and maps above it),
//!   total more than [`STATIC_CRD_LIMIT`];
//! - runtime (object write): sizes come from the object itself; a rule costing more
//!   than [`PER_CALL_LIMIT`] is not run, and all rules of one object share
//!   [`RUNTIME_BUDGET`].
//!
//! The price list follows cel-go's shape (1 per variable, field selection, call and
//! comparison; string and list operations 0.1 per element or byte; comprehensions
//! the body's cost times the range's size; list literals 10, map literals 30) but
//! is an approximation: numbers agree with upstream in magnitude, not digit for
//! digit. The runtime price is computed before evaluation, so an expensive rule is
//! refused without being run, and pricing stops as soon as the limit is passed.

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use serde_json::Value;

use super::Node;

/// Upstream `StaticEstimatedCostLimit`.
pub const STATIC_RULE_LIMIT: u64 = 10_000_000;
/// Upstream `StaticEstimatedCRDCostLimit`.
pub const STATIC_CRD_LIMIT: u64 = 100_000_000;
/// Upstream `PerCallLimit`.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream `RuntimeCELCostBudget`.
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// Upstream's maximum request size used to bound unbounded values (3 MiB).
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// What is known about a value's size: its schema, the value itself, a computed
/// bound (a function result: size, and the size of each element), or nothing.
#[derive(Clone, Copy)]
pub(crate) enum Shape<'a> {
    Unknown,
    Schema(&'a Node),
    Data(&'a Value),
    Sized(u64, u64),
}

/// The smallest JSON a value of schema `n` serializes to (upstream
/// `estimateMinSizeJSON`).
fn min_size(n: &Node) -> u64 {
    if n.x_int_or_string {
        return 1;
    }
    match n.ty.as_str() {
        "string" => 2 + n.min_length.unwrap_or(0).max(0) as u64,
        "integer" | "number" => 1,
        "boolean" => 4,
        "object" | "array" => 2,
        _ => 1,
    }
}

fn unbounded_items(elem_min: u64) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (elem_min + 1)
}

impl<'a> Shape<'a> {
    /// The multiplier for rules below this node: how many items or entries it holds.
    pub(crate) fn fan_out(n: &'a Node) -> u64 {
        Shape::Schema(n).size()
    }

    /// The largest size (string length, list length, map size) the value may have.
    fn size(&self) -> u64 {
        match self {
            Shape::Unknown => 1,
            Shape::Sized(n, _) => (*n).max(1),
            Shape::Data(Value::String(s)) => s.len() as u64,
            Shape::Data(Value::Array(a)) => a.len() as u64,
            Shape::Data(Value::Object(m)) => m.len() as u64,
            Shape::Data(_) => 1,
            Shape::Schema(n) => match n.ty.as_str() {
                "string" => n
                    .max_length
                    .map_or(MAX_REQUEST_BYTES - 2, |m| m.max(0) as u64),
                "array" => n.max_items.map_or_else(
                    || unbounded_items(n.items.as_deref().map_or(1, min_size)),
                    |m| m.max(0) as u64,
                ),
                "object" => n.max_properties.map_or_else(
                    || match n.additional_schema() {
                        Some(v) => (MAX_REQUEST_BYTES - 2) / (min_size(v) + 4),
                        None => n.properties.len().max(1) as u64,
                    },
                    |m| m.max(0) as u64,
                ),
                _ => 1,
            },
        }
    }

    fn field(&self, name: &str) -> Shape<'a> {
        match self {
            Shape::Schema(n) => {
                let unescaped = super::cel::unescape(name);
                n.properties
                    .get(&unescaped)
                    .or_else(|| n.additional_schema())
                    .map_or(Shape::Unknown, Shape::Schema)
            }
            Shape::Data(Value::Object(m)) => m
                .get(name)
                .or_else(|| m.get(&super::cel::unescape(name)))
                .map_or(Shape::Unknown, Shape::Data),
            _ => Shape::Unknown,
        }
    }

    fn elem(&self) -> Shape<'a> {
        match self {
            Shape::Sized(_, e) => Shape::Sized(*e, *e),
            Shape::Schema(n) => match n.ty.as_str() {
                "array" => n.items.as_deref().map_or(Shape::Unknown, Shape::Schema),
                // A comprehension over a map ranges over its keys.
                _ => Shape::Unknown,
            },
            _ => Shape::Unknown,
        }
    }
}

/// Prices one expression; stops early once `limit` is passed.
pub(crate) struct Pricer<'a> {
    vars: Vec<(String, Shape<'a>)>,
    limit: u64,
}

impl<'a> Pricer<'a> {
    pub(crate) fn new(self_shape: Shape<'a>, old_shape: Shape<'a>, limit: u64) -> Self {
        Pricer {
            vars: vec![("self".into(), self_shape), ("oldSelf".into(), old_shape)],
            limit,
        }
    }

    pub(crate) fn cost(&mut self, e: &IdedExpr) -> u64 {
        self.price(e).0
    }

    fn lookup(&self, name: &str) -> Shape<'a> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map_or(Shape::Unknown, |(_, s)| *s)
    }

    /// (cost, shape of the result)
    fn price(&mut self, e: &IdedExpr) -> (u64, Shape<'a>) {
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => (0, Shape::Unknown),
            Expr::Ident(name) => (1, self.lookup(name)),
            Expr::Select(sel) => {
                let (c, shape) = self.price(&sel.operand);
                (c.saturating_add(1), shape.field(&sel.field))
            }
            Expr::List(l) => {
                let mut c = 10u64;
                let mut elem = 1u64;
                for x in &l.elements {
                    let (xc, xs) = self.price(x);
                    c = c.saturating_add(xc);
                    elem = elem.max(xs.size());
                }
                (c, Shape::Sized(l.elements.len() as u64, elem))
            }
            Expr::Map(m) => (30u64.saturating_add(m.entries.len() as u64), Shape::Unknown),
            Expr::Struct(s) => (40u64.saturating_add(s.entries.len() as u64), Shape::Unknown),
            Expr::Call(call) => self.call(call),
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn call(&mut self, call: &kube_cel::cel::common::ast::CallExpr) -> (u64, Shape<'a>) {
        let (tc, target) = match &call.target {
            Some(t) => self.price(t),
            None => (0, Shape::Unknown),
        };
        let mut cost = tc;
        let mut shapes = Vec::new();
        for a in &call.args {
            let (c, s) = self.price(a);
            cost = cost.saturating_add(c);
            shapes.push(s);
        }
        let subject = if call.target.is_some() {
            target
        } else {
            shapes.first().copied().unwrap_or(Shape::Unknown)
        };
        let tenth = |n: u64| n.div_ceil(10);
        let own = match call.func_name.as_str() {
            "_&&_" | "_||_" | "_?_:_" | "!_" | "-_" => 0,
            "size" | "_[_]" | "has" | "int" | "uint" | "double" | "bool" | "type" => 1,
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" | "@in" | "_+_" => {
                let a = shapes.first().map_or(1, Shape::size);
                let b = shapes.get(1).map_or(1, Shape::size);
                tenth(a.max(b)).saturating_add(1)
            }
            "contains" | "startsWith" | "endsWith" | "lowerAscii" | "upperAscii" | "trim"
            | "string" | "split" | "replace" | "substring" | "charAt" | "indexOf"
            | "lastIndexOf" | "join" | "format" | "quantity" | "isQuantity" | "url" | "isURL"
            | "ip" | "isIP" | "cidr" | "isCIDR" | "semver" | "isSemver" => {
                tenth(subject.size()).saturating_add(1)
            }
            "matches" | "find" | "findAll" => subject.size().saturating_add(1),
            "isSorted" | "sum" | "min" | "max" | "reverse" | "distinct" | "flatten" | "sort"
            | "sets.contains" | "sets.equivalent" | "sets.intersects" => {
                subject.size().saturating_add(1)
            }
            _ => 1,
        };
        (
            cost.saturating_add(own),
            result_shape(&call.func_name, subject, &shapes),
        )
    }

    fn comprehension(
        &mut self,
        c: &kube_cel::cel::common::ast::ComprehensionExpr,
    ) -> (u64, Shape<'a>) {
        let (range_cost, range) = self.price(&c.iter_range);
        let mut cost = range_cost.saturating_add(self.price(&c.accu_init).0);
        match range {
            Shape::Data(Value::Array(items)) => {
                for item in items {
                    cost = cost.saturating_add(self.body(c, Shape::Data(item)));
                    if cost > self.limit {
                        return (cost, Shape::Unknown);
                    }
                }
            }
            Shape::Data(Value::Object(m)) => {
                let per = self.body(c, Shape::Unknown);
                cost = cost.saturating_add(per.saturating_mul(m.len() as u64));
            }
            other => {
                let per = self.body(c, other.elem());
                cost = cost.saturating_add(per.saturating_mul(other.size()));
            }
        }
        cost = cost.saturating_add(self.price(&c.result).0);
        // `map` and `filter` accumulate into a list as long as the range.
        let builds_list = matches!(&c.accu_init.expr, Expr::List(l) if l.elements.is_empty());
        let shape = if builds_list {
            Shape::Sized(range.size(), range.elem().size())
        } else {
            Shape::Unknown
        };
        (cost, shape)
    }

    fn body(&mut self, c: &kube_cel::cel::common::ast::ComprehensionExpr, elem: Shape<'a>) -> u64 {
        self.vars.push((c.iter_var.clone(), elem));
        let cost = self
            .price(&c.loop_cond)
            .0
            .saturating_add(self.price(&c.loop_step).0);
        self.vars.pop();
        cost.saturating_add(1)
    }
}

/// How big a function's result can be, so that work over it is priced too
/// (`self.s.split('').all(...)` iterates as often as the string is long).
fn result_shape<'a>(func: &str, subject: Shape<'a>, args: &[Shape<'a>]) -> Shape<'a> {
    let n = subject.size();
    match func {
        "split" | "findAll" => Shape::Sized(n.saturating_add(1), n),
        "replace" => {
            let growth = args.get(1).map_or(1, Shape::size).max(1);
            Shape::Sized(n.saturating_mul(growth), 1)
        }
        "lowerAscii" | "upperAscii" | "trim" | "substring" | "string" | "format" | "charAt"
        | "reverse" | "distinct" | "sort" | "flatten" => Shape::Sized(n, subject.elem().size()),
        "join" => Shape::Sized(n.saturating_mul(subject.elem().size()), 1),
        "_+_" => {
            let a = args.first().copied().unwrap_or(Shape::Unknown);
            let b = args.get(1).copied().unwrap_or(Shape::Unknown);
            Shape::Sized(
                a.size().saturating_add(b.size()),
                a.elem().size().max(b.elem().size()),
            )
        }
        _ => Shape::Unknown,
    }
}

/// Upstream `getCostErrorMessage`.
pub(crate) fn cost_error_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let shown = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {shown} (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
