//! Label selectors: the `labelSelector=` query language and `metav1.LabelSelector`
//! objects, with upstream's grammar, matching rules and error texts
//! (`k8s.io/apimachinery/pkg/labels/selector.go`, `pkg/selection`, and
//! `LabelSelectorAsSelector` in `pkg/apis/meta/v1/helpers.go`).
//!
//! This module also owns the vocabulary shared with field selectors: [`SelectorError`]
//! (whose [`message`](SelectorError::message) is what the server puts verbatim into a
//! 400 BadRequest `Status`) and [`Operator`] (upstream's `selection.Operator`).
//!
//! Invariants:
//! - Every [`Requirement`] went through [`Requirement::new`], so its key and values are
//!   valid and its value count fits its operator; matching never has to re-validate.
//! - A selector's requirements are kept sorted by key (stable), so two spellings of the
//!   same selector render identically through `Display`.
//! - [`LabelSelector::nothing`] (a null `metav1.LabelSelector`) is distinct from the
//!   empty selector, which matches everything.
//!
//! Where to look next: `fields.rs` for field selectors; the registry layer uses
//! [`LabelSelector::exact_value`] to pick index lookups before filtering.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

mod parse;
mod rules;
#[cfg(test)]
mod tests;

use parse::*;
use rules::*;

/// A selector that failed to parse or validate.
///
/// The text deliberately mirrors upstream's error strings because clients (and tests
/// written against a real cluster) compare them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The text for the `message` of the 400 BadRequest `Status`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Relation between a key and its values (upstream `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    DoesNotExist,
    Equals,
    DoubleEquals,
    In,
    NotEquals,
    NotIn,
    Exists,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// Upstream's string value of the operator (e.g. `"notin"`, `"gt"`, `"!"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::DoesNotExist => "!",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::In => "in",
            Operator::NotEquals => "!=",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One clause of a label selector: `key <operator> values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Validates and builds a requirement (upstream `NewRequirement`): the key must be a
    /// qualified name, every value a label value, `In`/`NotIn` need at least one value,
    /// the equality operators exactly one, `Exists`/`DoesNotExist` none, and `Gt`/`Lt`
    /// exactly one integer. All problems are reported together, as upstream aggregates.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, SelectorError> {
        let key = key.into();
        let mut errs = Vec::new();
        errs.extend(key_error(&key, "key"));
        errs.extend(arity_errors(operator, &values));
        for (i, v) in values.iter().enumerate() {
            let problems = label_value_errors(v);
            if !problems.is_empty() {
                let path = format!("values[{i}][{key}]");
                errs.push(invalid(&path, &go_quote(v), &problems.join("; ")));
            }
        }
        match aggregate(errs) {
            Some(err) => Err(err),
            None => Ok(Self {
                key,
                operator,
                values,
            }),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// Values in the order given (the parser hands them over sorted and deduplicated).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Evaluates the requirement against a label lookup. A missing key satisfies only
    /// the negative operators (`!=`, `notin`, `!key`), as upstream.
    pub fn matches_with<'a, F>(&self, lookup: &F) -> bool
    where
        F: Fn(&str) -> Option<&'a str>,
    {
        let found = lookup(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                found.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => found.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
            Operator::GreaterThan | Operator::LessThan => found.is_some_and(|v| self.compare(v)),
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// A label that is not an integer never satisfies `>`/`<` (upstream logs and skips).
    fn compare(&self, label: &str) -> bool {
        let (Ok(have), [want]) = (label.parse::<i64>(), self.values.as_slice()) else {
            return false;
        };
        let Ok(want) = want.parse::<i64>() else {
            return false;
        };
        match self.operator {
            Operator::GreaterThan => have > want,
            _ => have < want,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::Exists => return f.write_str(&self.key),
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        // Sorting a copy keeps output canonical without reordering what callers gave us.
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        let joined = values.join(",");
        match self.operator {
            Operator::In | Operator::NotIn => write!(f, "{}{op}({joined})", self.key),
            _ => write!(f, "{}{op}{joined}", self.key),
        }
    }
}

/// A parsed label selector: the AND of its requirements.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

/// Parses the `labelSelector` query syntax (upstream `labels.Parse`).
///
/// Grammar: comma-separated requirements, each `[!]key`, `key (=|==|!=|>|<) value` or
/// `key (in|notin) (v1,v2,...)`; blanks (space, tab, CR, LF) between tokens are ignored.
pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
    let mut parser = Parser {
        items: lex(s),
        pos: 0,
    };
    let requirements = parser.parse_all()?;
    Ok(LabelSelector::everything().with_requirements(requirements))
}

impl LabelSelector {
    /// The empty selector: no requirements, matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Matches no object; what a null `metav1.LabelSelector` means to most consumers.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Selector requiring every `key=value` of the set, without validating it (upstream
    /// `SelectorFromValidatedSet`); use it only for labels already stored on objects.
    pub fn from_validated_set<K, V>(set: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self::everything().with_requirements(set.into_iter().map(|(k, v)| Requirement {
            key: k.into(),
            operator: Operator::Equals,
            values: vec![v.into()],
        }))
    }

    /// Returns a selector with the extra requirements ANDed in, re-sorted by key.
    pub fn with_requirements(
        mut self,
        requirements: impl IntoIterator<Item = Requirement>,
    ) -> Self {
        if self.nothing {
            return self;
        }
        self.requirements.extend(requirements);
        self.requirements.sort_by(|a, b| a.key.cmp(&b.key));
        self
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything (matches everything).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True only for [`LabelSelector::nothing`]; contradictions like `a=b,a!=b` are not
    /// detected, as upstream.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// Evaluates the selector with an arbitrary label lookup.
    pub fn matches_with<'a, F>(&self, lookup: F) -> bool
    where
        F: Fn(&str) -> Option<&'a str>,
    {
        !self.nothing && self.requirements.iter().all(|r| r.matches_with(&lookup))
    }

    /// Matches a `metadata.labels` JSON object. Non-string values (invalid on stored
    /// objects) count as present with an empty value.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.matches_with(|k| labels.get(k).map(|v| v.as_str().unwrap_or("")))
    }

    pub fn matches_map(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Matches an object by its `metadata.labels`; absent labels are an empty set, so
    /// `!key` and `key!=v` still match.
    pub fn matches_object(&self, obj: &Value) -> bool {
        let empty = Map::new();
        let labels = obj
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        self.matches(labels)
    }

    /// If the selector pins `key` to a single value (`=`, `==`, or a one-value `in`),
    /// returns it. Like upstream, only the first requirement on `key` is consulted.
    pub fn exact_value(&self, key: &str) -> Option<&str> {
        let req = self.requirements.iter().find(|r| r.key == key)?;
        match (req.operator, req.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, req) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{req}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Converts a `metav1.LabelSelector` JSON object (upstream `LabelSelectorAsSelector`).
///
/// `{}` (no `matchLabels`, no `matchExpressions`) becomes the empty selector, which
/// matches everything. JSON `null` becomes [`LabelSelector::nothing`], which is what a
/// nil selector means to most consumers (e.g. a PodDisruptionBudget); callers for whom
/// an absent selector means "everything" must decide that before calling.
pub fn from_label_selector_json(v: &Value) -> Result<LabelSelector, SelectorError> {
    let obj = match v {
        Value::Null => return Ok(LabelSelector::nothing()),
        Value::Object(obj) => obj,
        other => return Err(type_error(other, "v1.LabelSelector", "")),
    };
    let match_labels = wire_match_labels(obj.get("matchLabels"))?;
    let expressions = wire_expressions(obj.get("matchExpressions"))?;
    if match_labels.is_empty() && expressions.is_empty() {
        return Ok(LabelSelector::everything());
    }
    let mut requirements = Vec::with_capacity(match_labels.len() + expressions.len());
    for (key, value) in match_labels {
        requirements.push(Requirement::new(key, Operator::Equals, vec![value])?);
    }
    for (key, operator, values) in expressions {
        let op = match operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            _ => {
                return Err(SelectorError::new(format!(
                    "{} is not a valid label selector operator",
                    go_quote(&operator)
                )))
            }
        };
        requirements.push(Requirement::new(key, op, values)?);
    }
    Ok(LabelSelector::everything().with_requirements(requirements))
}

// ---------------------------------------------------------------------------
// metav1.LabelSelector wire decoding

type WireExpression = (String, String, Vec<String>);

/// Mimics the shape of Go's `encoding/json` type errors, since that is what a real
/// server would reply for a malformed selector object.
fn type_error(found: &Value, go_type: &str, field: &str) -> SelectorError {
    let kind = match found {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if field.is_empty() {
        SelectorError::new(format!(
            "json: cannot unmarshal {kind} into Go value of type {go_type}"
        ))
    } else {
        SelectorError::new(format!(
            "json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"
        ))
    }
}

fn wire_string(v: Option<&Value>, field: &str) -> Result<String, SelectorError> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, "string", field)),
    }
}

fn wire_match_labels(v: Option<&Value>) -> Result<Vec<(String, String)>, SelectorError> {
    const FIELD: &str = "LabelSelector.matchLabels";
    let obj = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(obj)) => obj,
        Some(other) => return Err(type_error(other, "map[string]string", FIELD)),
    };
    obj.iter()
        .map(|(k, v)| Ok((k.clone(), wire_string(Some(v), FIELD)?)))
        .collect()
}

fn wire_expressions(v: Option<&Value>) -> Result<Vec<WireExpression>, SelectorError> {
    const FIELD: &str = "LabelSelector.matchExpressions";
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(type_error(other, "[]v1.LabelSelectorRequirement", FIELD)),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let obj = match item {
            Value::Object(obj) => obj,
            other => return Err(type_error(other, "v1.LabelSelectorRequirement", FIELD)),
        };
        let key = wire_string(obj.get("key"), "LabelSelector.matchExpressions.key")?;
        let op = wire_string(
            obj.get("operator"),
            "LabelSelector.matchExpressions.operator",
        )?;
        let values = match obj.get("values") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(vals)) => vals
                .iter()
                .map(|v| wire_string(Some(v), "LabelSelector.matchExpressions.values"))
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(type_error(
                    other,
                    "[]string",
                    "LabelSelector.matchExpressions.values",
                ))
            }
        };
        out.push((key, op, values));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

#[derive(Debug, Clone)]
struct Item {
    tok: Token,
    lit: String,
}
