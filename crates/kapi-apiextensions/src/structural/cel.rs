//! CEL validation rules (`x-kubernetes-validations`), evaluated with the `cel` crate
//! and the Kubernetes CEL libraries of `kube-cel` (`isSorted`, `indexOf`, quantity,
//! `format`, sets, regex `find`, semver, ip, …).
//!
//! Rules compile once, when the schema is parsed ([`CompiledRules::compile`]), with
//! the size and nesting limits and the undefined-field check (`cel_check.rs`); a rule
//! that does not compile is reported on every object as upstream's `rule compile
//! error` (`validate_schema` rejects such CRDs first, `cel_schema.rs`). Evaluation
//! walks the object with the schema: `self` is the value at the rule's node
//! (converted by `cel_values.rs`), `oldSelf` the correlated old value (object fields
//! and map entries by key, `x-kubernetes-list-type: map` items by their keys; other
//! list items do not correlate; set and map lists inside `oldSelf` are put in
//! `self`'s order so `==` ignores their order, as upstream's set/map equality does).
//! A rule using `oldSelf` runs only when an old value exists, unless
//! `optionalOldSelf` is set, when `oldSelf` is an optional (`oldSelf.hasValue()`,
//! `oldSelf.orValue(x)`). Null values are not validated. A rule without `oldSelf`
//! failing on an unchanged value is a warning, not an error (ratcheting). Every rule is priced before it runs (`cel_cost.rs`): over the
//! per-call limit or the object's budget, evaluation stops with upstream's message.

use std::collections::BTreeMap;
use std::sync::Arc;

use kapi_machinery::validation::{FieldError, FieldPath};
use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

use super::cel_cost::{Pricer, Shape, PER_CALL_LIMIT, RUNTIME_BUDGET};
use super::cel_values::to_cel;
pub use super::cel_values::{escape, unescape};
use super::{Node, Rule};

/// One rule, compiled.
struct Compiled {
    rule: Rule,
    program: Result<Program, String>,
    message: Option<Result<Program, String>>,
    uses_old_self: bool,
}

/// Compiled rules of one schema node and of the nodes below it that have rules.
#[derive(Default)]
pub(crate) struct CompiledRules {
    rules: Vec<Compiled>,
    properties: BTreeMap<String, CompiledRules>,
    items: Option<Box<CompiledRules>>,
    additional: Option<Box<CompiledRules>>,
}

impl std::fmt::Debug for CompiledRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledRules")
            .field("rules", &self.rules.len())
            .field("properties", &self.properties)
            .finish()
    }
}

/// cel-go's `ExpressionSizeCodePointLimit`.
const MAX_CODE_POINTS: usize = 100_000;
/// The most operator characters (`.`, brackets, arithmetic, comparison and logic
/// signs outside string literals) a rule may have. Each level of the parsed tree
/// needs at least one, so this bounds the recursion of parsing, checking, pricing
/// and evaluation, which would otherwise overflow the stack on a rule like
/// `1 + 1 + … + 1` with thousands of terms.
const MAX_OPERATORS: usize = 1000;

/// Operator characters outside string literals.
fn operator_chars(src: &str) -> usize {
    let mut count = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in src.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '\'' || c == '"' => quote = Some(c),
            None if "+-*/%<>=!&|?.[({".contains(c) => count += 1,
            None => {}
        }
    }
    count
}

/// Parse a CEL expression; errors are laid out as cel-go prints them.
pub(crate) fn compile_one(src: &str) -> Result<Program, String> {
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(format!(
            "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        ));
    }
    if operator_chars(src) > MAX_OPERATORS {
        return Err(format!(
            "ERROR: <input>:1:1: expression recursion limit exceeded: more than {MAX_OPERATORS} operators"
        ));
    }
    Program::compile(src).map_err(|e| e.to_string().replace("\n| ", "\n | "))
}

/// Parse a rule and check its field selections against the node's schema
/// (`resource_root`: the node is the object or an embedded resource).
pub(crate) fn compile_rule(src: &str, n: &Node, resource_root: bool) -> Result<Program, String> {
    let p = compile_one(src)?;
    if let Some(e) = super::cel_check::undefined_field(p.expression(), n, resource_root, src) {
        return Err(e);
    }
    match super::cel_check::undeclared_function(p.expression(), src) {
        Some(e) => Err(e),
        None => Ok(p),
    }
}

impl CompiledRules {
    pub(crate) fn compile(n: &Node) -> CompiledRules {
        Self::compile_node(n, true)
    }

    pub(crate) fn compile_node(n: &Node, resource_root: bool) -> CompiledRules {
        let rules = n
            .x_validations
            .iter()
            .map(|r| {
                let program = compile_rule(&r.rule, n, resource_root);
                let uses_old_self = program
                    .as_ref()
                    .is_ok_and(|p| p.references().has_variable("oldSelf"));
                let message =
                    (!r.message_expression.is_empty()).then(|| compile_one(&r.message_expression));
                Compiled {
                    rule: r.clone(),
                    program,
                    message,
                    uses_old_self,
                }
            })
            .collect();
        let mut properties = BTreeMap::new();
        for (k, p) in &n.properties {
            let c = CompiledRules::compile_node(p, p.x_embedded_resource);
            if !c.is_empty() {
                properties.insert(k.clone(), c);
            }
        }
        let sub = |s: Option<&Node>| {
            s.map(|n| CompiledRules::compile_node(n, n.x_embedded_resource))
                .filter(|c| !c.is_empty())
                .map(Box::new)
        };
        CompiledRules {
            rules,
            properties,
            items: sub(n.items.as_deref()),
            additional: sub(n.additional_schema()),
        }
    }

    /// No rule here or below (upstream builds no CEL validator then).
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.properties.is_empty()
            && self.items.is_none()
            && self.additional.is_none()
    }

    /// Evaluate every rule on `obj` (the whole object); `old` on update. Returns the
    /// errors and the warnings of ratcheted rules.
    pub(crate) fn validate(
        &self,
        root: &Node,
        obj: &Value,
        old: Option<&Value>,
    ) -> (Vec<FieldError>, Vec<String>) {
        if self.is_empty() {
            return (Vec::new(), Vec::new());
        }
        BASE_CONTEXT.with(|ctx| {
            let mut w = Walk {
                ctx,
                errs: Vec::new(),
                warnings: Vec::new(),
                budget: RUNTIME_BUDGET,
                stopped: false,
            };
            let flags = Flags {
                root: true,
                ratchet: false,
            };
            w.node(self, root, &FieldPath::new(NIL), obj, old, flags);
            (w.errs, w.warnings)
        })
    }
}

fn dyn_identity(v: Cel) -> kube_cel::cel::ResolveResult {
    Ok(v)
}

/// Whether calling function `name` (on receiver identifier `ns`, for namespaced
/// functions such as `math.greatest`) reaches a function of the CEL environment.
/// Probed once per name and thread by calling it with no arguments: only an unknown
/// function fails as an undeclared reference to its own name; anything else (wrong
/// arguments, an unknown receiver) counts as known, so the check never rejects a
/// rule that could run.
pub(crate) fn function_exists(ns: Option<&str>, name: &str) -> bool {
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<String, bool>> =
            Default::default();
    }
    let qualified = match ns {
        Some(ns) => format!("{ns}.{name}"),
        None => name.to_string(),
    };
    if let Some(known) = KNOWN.with(|k| k.borrow().get(&qualified).copied()) {
        return known;
    }
    let exists = match Program::compile(&format!("{qualified}()")) {
        Ok(p) => BASE_CONTEXT.with(|ctx| match p.execute(ctx) {
            Err(ExecutionError::UndeclaredReference(n)) => {
                n.as_str() != name && n.as_str() != qualified
            }
            _ => true,
        }),
        Err(_) => true,
    };
    KNOWN.with(|k| k.borrow_mut().insert(qualified, exists));
    exists
}

thread_local! {
    /// The standard and Kubernetes CEL functions, registered once per thread
    /// (registering them costs more than evaluating a typical rule); each rule runs
    /// in an inner scope holding `self` and `oldSelf`.
    static BASE_CONTEXT: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        // cel-go's `dyn(x)` (a type-checker hint) is the identity at runtime.
        ctx.add_function("dyn", dyn_identity);
        ctx
    };
}

/// The message of a rule that evaluated to false (upstream `ruleMessageOrDefault`).
fn message_or_default(r: &Rule) -> String {
    if r.message.is_empty() {
        format!("failed rule: {}", rule_error_string(r))
    } else {
        r.message.trim().to_string()
    }
}

fn rule_error_string(r: &Rule) -> String {
    if r.message.is_empty() {
        r.rule.trim().to_string()
    } else {
        r.message.trim().to_string()
    }
}

fn schema_type(n: &Node) -> &str {
    if n.x_int_or_string {
        "integer-or-string"
    } else {
        &n.ty
    }
}

#[derive(Clone, Copy)]
struct Flags {
    /// The value is a resource root (the object, or an embedded resource).
    root: bool,
    /// The value, or a correlated ancestor, is unchanged from the old object.
    ratchet: bool,
}

struct Walk<'c> {
    ctx: &'c Context<'c>,
    errs: Vec<FieldError>,
    /// Failures of rules on unchanged values (ratcheted into warnings).
    warnings: Vec<String>,
    /// What is left of the per-object runtime cost budget.
    budget: u64,
    /// Set once a cost limit stopped evaluation: no further rules run.
    stopped: bool,
}

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

impl Walk<'_> {
    fn node(
        &mut self,
        c: &CompiledRules,
        n: &Node,
        path: &FieldPath,
        v: &Value,
        old: Option<&Value>,
        flags: Flags,
    ) {
        if v.is_null() || self.stopped {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        let flags = Flags {
            root: flags.root || n.x_embedded_resource,
            ratchet: flags.ratchet,
        };
        // Ratcheting: a value equal to its correlated old value (or inside one)
        // does not fail rules that do not look at oldSelf.
        let ratchet = flags.ratchet || old.is_some_and(|o| o == v);
        let flags = Flags {
            root: flags.root,
            ratchet,
        };
        if !c.rules.is_empty() {
            self.rules(c, n, path, v, old, flags);
        }
        let below = Flags {
            root: false,
            ratchet,
        };
        match v {
            Value::Object(m) => {
                for (k, sub) in &c.properties {
                    if let (Some(x), Some(s)) = (m.get(k), n.properties.get(k)) {
                        let o = old.and_then(|o| o.get(k));
                        self.node(sub, s, &child(path, k), x, o, below);
                    }
                }
                if let (Some(sub), Some(s)) = (&c.additional, n.additional_schema()) {
                    for (k, x) in m.iter().filter(|(k, _)| !n.properties.contains_key(*k)) {
                        let o = old.and_then(|o| o.get(k));
                        self.node(sub, s, &path.key(k), x, o, below);
                    }
                }
            }
            Value::Array(items) => {
                if let (Some(sub), Some(s)) = (&c.items, n.items.as_deref()) {
                    // Only map-list items correlate for rules.
                    let olds = super::canon::old_items(n, old, false);
                    for (i, x) in items.iter().enumerate() {
                        let o = olds
                            .as_ref()
                            .and_then(|m| m.get(&super::canon::item_key(n, x)).copied());
                        self.node(sub, s, &path.index(i), x, o, below);
                    }
                }
            }
            _ => {}
        }
    }

    fn rules(
        &mut self,
        c: &CompiledRules,
        n: &Node,
        path: &FieldPath,
        v: &Value,
        old: Option<&Value>,
        flags: Flags,
    ) {
        let root = flags.root;
        let ty = schema_type(n).to_string();
        let self_val = to_cel(v, Some(n), root);
        // oldSelf's set and map lists follow self's order, so equality ignores order.
        let old_val = old
            .filter(|_| c.rules.iter().any(|r| r.uses_old_self))
            .map(|o| to_cel(&super::canon::align_old(o, v, Some(n)), Some(n), root));
        for r in &c.rules {
            let program = match &r.program {
                Ok(p) => p,
                Err(e) => {
                    let msg = format!("rule compile error: compilation failed: {e}");
                    self.errs.push(FieldError::invalid(path, ty.as_str(), msg));
                    continue;
                }
            };
            let optional = r.rule.optional_old_self.unwrap_or(false);
            if r.uses_old_self && old.is_none() && !optional {
                continue;
            }
            if self.stopped {
                return;
            }
            if !self.charge(program, path, &ty, &r.rule, v, old) {
                return;
            }
            let mut ctx = self.ctx.new_inner_scope();
            ctx.add_variable_from_value("self", self_val.clone());
            match (&old_val, optional) {
                (Some(o), false) => ctx.add_variable_from_value("oldSelf", o.clone()),
                (o, true) => ctx.add_variable_from_value("oldSelf", optional_of(o.clone())),
                (None, false) => {}
            }
            let result = program.execute(&ctx);
            match result {
                Ok(Cel::Bool(true)) => continue,
                Ok(Cel::Bool(false)) => {}
                Ok(_) => {
                    let msg = format!(
                        "rule evaluation error: expected a bool result for rule: {}",
                        rule_error_string(&r.rule)
                    );
                    self.errs.push(FieldError::invalid(path, ty.as_str(), msg));
                    continue;
                }
                Err(e) => {
                    let msg = match go_error(&e) {
                        GoError::NoSuchOverload => format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule_error_string(&r.rule)
                        ),
                        GoError::Other(text) => {
                            format!("{text} evaluating rule: {}", rule_error_string(&r.rule))
                        }
                    };
                    self.errs.push(FieldError::invalid(path, ty.as_str(), msg));
                    continue;
                }
            }
            let err_path = match super::cel_schema::resolve_field_path(n, &r.rule.field_path) {
                Some((p, _)) if !p.is_empty() => child(path, &p),
                _ => path.clone(),
            };
            let mut detail = None;
            if let Some(Ok(m)) = &r.message {
                match m.execute(&ctx) {
                    Ok(Cel::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                        detail = Some(s.to_string());
                    }
                    Ok(Cel::String(_)) | Err(_) => {}
                    Ok(_) => {
                        // Upstream stops evaluating the object here.
                        let msg = "messageExpression must evaluate to a string";
                        self.errs
                            .push(FieldError::invalid(&err_path, ty.as_str(), msg));
                        self.stopped = true;
                        return;
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| message_or_default(&r.rule));
            let err = error_for_reason(&err_path, &ty, detail, &r.rule.reason);
            if flags.ratchet && !r.uses_old_self {
                // Ratcheting: an unchanged value only warns (upstream's warning text).
                self.warnings.push(err.to_string());
            } else {
                self.errs.push(err);
            }
        }
    }
}

impl Walk<'_> {
    /// Price a rule on these values and take it from the budget; false (with the
    /// error recorded) when a limit stops evaluation.
    fn charge(
        &mut self,
        program: &Program,
        path: &FieldPath,
        ty: &str,
        rule: &Rule,
        v: &Value,
        old: Option<&Value>,
    ) -> bool {
        let old_shape = old.map_or(Shape::Unknown, Shape::Data);
        let limit = PER_CALL_LIMIT.min(self.budget);
        let cost = Pricer::new(Shape::Data(v), old_shape, limit).cost(program.expression());
        if cost > PER_CALL_LIMIT {
            let msg = format!(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                rule_error_string(rule)
            );
            self.errs.push(FieldError::invalid(path, ty, msg));
            self.stopped = true;
            return false;
        }
        if cost > self.budget {
            self.errs.push(FieldError::invalid(path, ty, OUT_OF_BUDGET));
            self.stopped = true;
            return false;
        }
        self.budget -= cost;
        true
    }
}

/// A runtime error as cel-go words it.
enum GoError {
    NoSuchOverload,
    Other(String),
}

fn go_error(e: &ExecutionError) -> GoError {
    use ExecutionError as E;
    let text = match e {
        E::NoSuchOverload
        | E::UnsupportedBinaryOperator(..)
        | E::UnsupportedUnaryOperator(..)
        | E::ValuesNotComparable(..)
        | E::UnexpectedType { .. }
        | E::UnsupportedTargetType { .. }
        | E::NotSupportedAsMethod { .. } => return GoError::NoSuchOverload,
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::DivisionByZero(_) => "division by zero".to_string(),
        E::RemainderByZero(_) => "modulus by zero".to_string(),
        E::Overflow(..) => "integer overflow".to_string(),
        E::IndexOutOfBounds(i) => format!("index out of bounds: {}", cel_display(i)),
        E::FunctionError { message, .. } => message.clone(),
        other => {
            let t = other.to_string();
            let mut c = t.chars();
            c.next()
                .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    };
    GoError::Other(text)
}

fn cel_display(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

fn optional_of(v: Option<Cel>) -> Cel {
    use kube_cel::cel::objects::OptionalValue;
    match v {
        Some(v) => Cel::Opaque(Arc::new(OptionalValue::of(v))),
        None => Cel::Opaque(Arc::new(OptionalValue::none())),
    }
}

fn error_for_reason(path: &FieldPath, ty: &str, detail: String, reason: &str) -> FieldError {
    match reason {
        "FieldValueForbidden" => FieldError::forbidden(path, detail),
        "FieldValueRequired" => FieldError::required(path, detail),
        "FieldValueDuplicate" => FieldError::duplicate(path, ty),
        _ => FieldError::invalid(path, ty, detail),
    }
}

/// Upstream validates from a nil path, which prints as `<nil>` for errors about
/// the object itself.
const NIL: &str = "<nil>";

fn child(path: &FieldPath, k: &str) -> FieldPath {
    let p = path.to_string();
    if p.is_empty() || p == NIL {
        FieldPath::new(k)
    } else {
        path.child(k)
    }
}
