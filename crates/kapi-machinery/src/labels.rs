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

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// Splits the input into tokens, always ending with `EndOfString`. Symbols are matched
/// longest-first (`!=` before `!`); anything else up to a blank or symbol is an
/// identifier, with `in`/`notin` recognised as keywords.
fn lex(s: &str) -> Vec<Item> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_blank(bytes[pos]) {
            pos += 1;
        }
        if pos == bytes.len() {
            items.push(Item {
                tok: Token::EndOfString,
                lit: String::new(),
            });
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            pos += 1;
            let two = pos < bytes.len() && symbol_token(&s[start..pos + 1]).is_some();
            if two {
                pos += 1;
            }
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_blank(bytes[pos]) {
                pos += 1;
            }
        }
        let lit = &s[start..pos];
        let tok = symbol_token(lit).unwrap_or(match lit {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier,
        });
        items.push(Item {
            tok,
            lit: lit.to_string(),
        });
    }
}

// ---------------------------------------------------------------------------
// Parser

/// Where the parser is: `in`/`notin` are operators after a key but plain identifiers
/// wherever a key or value is expected (so `in=notin` and `x in (in)` are valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<Item>,
    pos: usize,
}

type Step<T> = Result<T, String>;

impl Parser {
    fn peek(&self, ctx: Ctx) -> (Token, String) {
        // The lexer always ends with EndOfString, and parsing stops there.
        let item = &self.items[self.pos.min(self.items.len() - 1)];
        let tok = match (ctx, item.tok) {
            (Ctx::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, tok) => tok,
        };
        (tok, item.lit.clone())
    }

    fn next(&mut self, ctx: Ctx) -> (Token, String) {
        let item = self.peek(ctx);
        self.pos += 1;
        item
    }

    fn parse_all(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.peek(Ctx::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let req = self.parse_requirement().map_err(|e| {
                        SelectorError::new(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(req);
                    let (tok, lit) = self.next(Ctx::Values);
                    match tok {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (tok, lit) = self.peek(Ctx::Values);
                            if tok != Token::Identifier && tok != Token::DoesNotExist {
                                return Err(SelectorError::new(format!(
                                    "found '{lit}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::new(format!(
                                "found '{lit}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::new(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Step<Requirement> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(key, op, Vec::new()).map_err(|e| e.message);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, op, values).map_err(|e| e.message)
    }

    /// Reads `[!]key`; a key followed by `,` or the end is an existence test.
    fn parse_key_and_infer_operator(&mut self) -> Step<(String, Option<Operator>)> {
        let mut op = None;
        let (mut tok, mut lit) = self.next(Ctx::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.next(Ctx::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        // Upstream validates here with a nil field path, hence the "<nil>" prefix.
        if let Some(err) = key_error(&lit, "<nil>") {
            return Err(err);
        }
        let (next, _) = self.peek(Ctx::Values);
        if op.is_none() && matches!(next, Token::EndOfString | Token::Comma) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Step<Operator> {
        let (tok, lit) = self.next(Ctx::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ))
            }
        })
    }

    /// Reads `( v1, v2, ... )`; empty slots (`()`, `(a,)`, `(,a)`) mean the empty value.
    fn parse_values(&mut self) -> Step<Vec<String>> {
        let (tok, lit) = self.next(Ctx::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.peek(Ctx::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (tok, _) = self.next(Ctx::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values.into_iter().collect())
            }
            Token::ClosedPar => {
                self.next(Ctx::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// Returns a sorted, deduplicated set, like upstream's `sets.String`.
    fn parse_identifiers_list(&mut self) -> Step<BTreeSet<String>> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.next(Ctx::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok, lit) = self.peek(Ctx::Values);
                    match tok {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok, _) = self.peek(Ctx::Values);
                    if tok == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<`; nothing means "".
    fn parse_exact_value(&mut self) -> Step<Vec<String>> {
        let (tok, _) = self.peek(Ctx::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.next(Ctx::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

// ---------------------------------------------------------------------------
// Validation (upstream `content.IsLabelKey`, `IsLabelValue`, `IsDNS1123Subdomain`)

const LABEL_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of \
     alphanumeric characters, '-', '_' or '.', and must start and end with an \
     alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character";

fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} bytes")
}

/// Upstream's regex explanation, including its quirk of a double space before "or".
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]`/`-`, alnum at edges.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        edge(b.first())
            && edge(b.last())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

fn label_key_errors(key: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LEN {
                    let msg = max_len_error(DNS1123_SUBDOMAIN_MAX_LEN);
                    errs.push(format!("prefix part {msg}"));
                }
                if !is_dns1123_subdomain(prefix) {
                    let msg = regex_error(
                        DNS1123_SUBDOMAIN_ERR,
                        DNS1123_SUBDOMAIN_FMT,
                        &["example.com"],
                    );
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            let msg = regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples);
            return vec![format!(
                "a valid label key {msg} with an optional DNS subdomain prefix and '/' \
                 (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_MAX_LEN {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX_LEN)));
    }
    if !is_label_name(name) {
        let msg = regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples);
        errs.push(format!("name part {msg}"));
    }
    errs
}

fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX_LEN {
        errs.push(max_len_error(LABEL_MAX_LEN));
    }
    if !value.is_empty() && !is_label_name(value) {
        let examples = ["MyValue", "my_value", "12345"];
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &examples));
    }
    errs
}

/// A label key's validation failure rendered as a `field.Invalid` error at `path`.
fn key_error(key: &str, path: &str) -> Option<String> {
    let errs = label_key_errors(key);
    (!errs.is_empty()).then(|| invalid(path, &go_quote(key), &errs.join("; ")))
}

fn arity_errors(op: Operator, values: &[String]) -> Vec<String> {
    let slice = || go_string_slice(values);
    let detail = match op {
        Operator::In | Operator::NotIn if values.is_empty() => {
            "for 'in', 'notin' operators, values set can't be empty"
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            "exact-match compatibility requires one single value"
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            "values set must be empty for exists and does not exist"
        }
        Operator::GreaterThan | Operator::LessThan => return ordering_errors(values),
        _ => return Vec::new(),
    };
    vec![invalid("values", &slice(), detail)]
}

fn ordering_errors(values: &[String]) -> Vec<String> {
    let mut errs = Vec::new();
    if values.len() != 1 {
        errs.push(invalid(
            "values",
            &go_string_slice(values),
            "for 'Gt', 'Lt' operators, exactly one value is required",
        ));
    }
    for (i, v) in values.iter().enumerate() {
        if v.parse::<i64>().is_err() {
            errs.push(invalid(
                &format!("values[{i}]"),
                &go_quote(v),
                "for 'Gt', 'Lt' operators, the value must be an integer",
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// Upstream error rendering (field.Error, utilerrors.Aggregate, Go's %q and %#v)

fn invalid(path: &str, rendered_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {rendered_value}: {detail}")
}

/// One error renders bare; several render as `[e1, e2]`; duplicates collapse.
fn aggregate(errs: Vec<String>) -> Option<SelectorError> {
    let mut unique: Vec<String> = Vec::with_capacity(errs.len());
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop().map(SelectorError::new),
        _ => Some(SelectorError::new(format!("[{}]", unique.join(", ")))),
    }
}

/// Go's `%#v` of a `[]string`. Values reach `NewRequirement` as a nil slice when empty
/// (upstream copies with `append([]string(nil), ...)`), hence `[]string(nil)`.
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Go's `%q` (strconv.Quote) for the characters that can reach an error message.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY_NAME_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' \
        or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
        'my.name',  or '123-abc', regex used for validation is \
        '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric \
        characters, '-', '_' or '.', and must start and end with an alphanumeric character \
        (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
        '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sel(s: &str) -> LabelSelector {
        parse(s).unwrap_or_else(|e| panic!("parse({s:?}) failed: {e}"))
    }

    fn err(s: &str) -> String {
        match parse(s) {
            Ok(got) => panic!("parse({s:?}) unexpectedly gave {got:?}"),
            Err(e) => e.message().to_string(),
        }
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        let values = values.iter().map(|v| v.to_string()).collect();
        Requirement::new(key, op, values).unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn tokens(s: &str) -> Vec<Token> {
        lex(s).into_iter().map(|i| i.tok).collect()
    }

    #[test]
    fn good_strings_round_trip_without_blanks() {
        for s in [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ] {
            assert_eq!(sel(s).to_string(), s.replace(' ', ""), "input {s:?}");
        }
    }

    #[test]
    fn bad_strings_are_rejected() {
        for s in [
            "x=a||y=b",
            "x==a==b",
            "!x=a",
            "x<a",
            "x,,y",
            ",x,y",
            "x nott in (y)",
            "a in (xyz),",
            "a in (xyz)b notin ()",
            "a in (xyz abc)",
            "a notin(",
            "a (",
            "(",
            "x=a,",
            "!",
            "x in",
            "x in (a",
        ] {
            assert!(parse(s).is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn parse_is_deterministic_and_sorted_by_key() {
        assert_eq!(sel("x=a,a=x").to_string(), sel("a=x,x=a").to_string());
        assert_eq!(sel("x=a,a=x").to_string(), "a=x,x=a");
        assert_eq!(sel("x,y in (a)").to_string(), "x,y in (a)");
    }

    #[test]
    fn every_operator_parses() {
        let cases = [
            ("x=a", Operator::Equals, vec!["a"]),
            ("x==a", Operator::DoubleEquals, vec!["a"]),
            ("x!=a", Operator::NotEquals, vec!["a"]),
            ("x in (b,a)", Operator::In, vec!["a", "b"]),
            ("x notin (a)", Operator::NotIn, vec!["a"]),
            ("x", Operator::Exists, vec![]),
            ("!x", Operator::DoesNotExist, vec![]),
            ("x>1", Operator::GreaterThan, vec!["1"]),
            ("x<7", Operator::LessThan, vec!["7"]),
        ];
        for (input, op, values) in cases {
            let parsed = sel(input);
            let [r] = parsed.requirements() else {
                panic!("{input}: expected one requirement")
            };
            assert_eq!((r.key(), r.operator()), ("x", op), "{input}");
            assert_eq!(r.values(), strings(&values).as_slice(), "{input}");
        }
    }

    #[test]
    fn set_based_syntax_table() {
        let cases = [
            ("\rx", "x"),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                "this-is-a-dns.domain.com/key-with-dash",
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
            ),
            ("foo  in\t (abc)", "foo in (abc)"),
            ("x notin\n (abc)", "x notin (abc)"),
            ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
            ("x in (abc,)", "x in (,abc)"),
            ("x in ()", "x in ()"),
            ("x notin ( )", "x notin ()"),
            ("x notin (, a)", "x notin (,a)"),
            (
                "x notin (abc,,def),bar,z in (),w",
                "bar,w,x notin (,abc,def),z in ()",
            ),
            ("a ", "a"),
            ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
            ("x in (b,a,b)", "x in (a,b)"),
            ("  a = b  ,  c  ", "a=b,c"),
            ("notin=in", "notin=in"),
            ("in in (in)", "in in (in)"),
            ("!in", "!in"),
        ];
        for (input, want) in cases {
            assert_eq!(sel(input).to_string(), want, "input {input:?}");
        }
    }

    #[test]
    fn lexer_token_sequences() {
        use Token::*;
        assert_eq!(tokens(""), [EndOfString]);
        assert_eq!(tokens("~"), [Identifier, EndOfString]);
        assert_eq!(tokens("||"), [Identifier, EndOfString]);
        assert_eq!(
            tokens("key in ( value )"),
            [Identifier, In, OpenPar, Identifier, ClosedPar, EndOfString]
        );
        assert_eq!(
            tokens("== != (), = notin"),
            [
                DoubleEquals,
                NotEquals,
                OpenPar,
                ClosedPar,
                Comma,
                Equals,
                NotIn,
                EndOfString
            ]
        );
        assert_eq!(
            tokens("key>2"),
            [Identifier, GreaterThan, Identifier, EndOfString]
        );
        assert_eq!(
            tokens("key<1"),
            [Identifier, LessThan, Identifier, EndOfString]
        );
        assert_eq!(tokens("!key"), [DoesNotExist, Identifier, EndOfString]);
        assert_eq!(tokens("!=="), [NotEquals, Equals, EndOfString]);
        assert_eq!(tokens("<="), [LessThan, Equals, EndOfString]);
    }

    #[test]
    fn grammar_error_messages() {
        let cases = [
            (
                "x y",
                "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "a (",
                "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt",
            ),
            ("x=a,", "found '', expected: identifier after ','"),
            ("x,,y", "found ',', expected: identifier after ','"),
            (
                ",x",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "(",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
            ("x=a b", "found 'b', expected: ',' or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!!x",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            (
                "x=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "a in xyz",
                "unable to parse requirement: found 'xyz' expected: '('",
            ),
            (
                "a notin(",
                "unable to parse requirement: found '', expected: ',', ')' or identifier",
            ),
            (
                "a in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a in (xyz abc)",
                "unable to parse requirement: found 'abc', expected: ',' or ')'",
            ),
            (
                "a in (x,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(err(input), want, "input {input:?}");
        }
    }

    #[test]
    fn key_validation_messages() {
        assert_eq!(
            err("app:monolith"),
            format!("unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {KEY_NAME_ERR}")
        );
        assert_eq!(
            err("app.kubernetes_io/name=x"),
            "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": \
             prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character \
             (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let multi = err("a/b/c");
        assert!(multi.starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist"
        ));
        assert!(multi.ends_with(
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
        assert!(err("/a").ends_with("\"/a\": prefix part must be non-empty"));
        assert!(err("a/").ends_with(&format!(
            "\"a/\": name part must be non-empty; {KEY_NAME_ERR}"
        )));
        let long = "k".repeat(64);
        assert!(err(&long).ends_with("name part must be no more than 63 bytes"));
        assert!(parse(&"k".repeat(63)).is_ok());
        let long_prefix = format!("{}/a", "p".repeat(254));
        assert!(err(&long_prefix).contains("prefix part must be no more than 253 bytes"));
        assert!(parse("example.com/MyName=v").is_ok());
        assert!(parse("Example.com/a").is_err(), "prefix must be lowercase");
        assert!(parse("-a").is_err());
        assert!(parse("a-").is_err());
        assert!(parse("a.b_c-D9").is_ok());
    }

    #[test]
    fn value_validation_messages() {
        assert_eq!(
            err("app=demo-{nginx}"),
            format!("unable to parse requirement: values[0][app]: Invalid value: \"demo-{{nginx}}\": {VALUE_ERR}")
        );
        let long = "v".repeat(64);
        assert_eq!(
            err(&format!("x={long}")),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes")
        );
        assert!(parse(&format!("x={}", "v".repeat(63))).is_ok());
        // Index refers to the sorted, deduplicated value set.
        assert!(err("x in (b,-a)").contains("values[0][x]: Invalid value: \"-a\""));
        assert_eq!(
            err("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": \
             for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert!(err("x>").contains("values[0]: Invalid value: \"\": for 'Gt', 'Lt'"));
        assert!(err("x>99999999999999999999").contains("must be an integer"));
        assert!(err("x>-1").contains(&format!("values[0][x]: Invalid value: \"-1\": {VALUE_ERR}")));
    }

    #[test]
    fn requirement_constructor_table() {
        let cases: &[(&str, Operator, &[&str], bool)] = &[
            ("x", Operator::In, &[], false),
            ("x", Operator::NotIn, &[], false),
            ("x", Operator::In, &["foo"], true),
            ("x", Operator::NotIn, &["foo"], true),
            ("x", Operator::Exists, &[], true),
            ("x", Operator::DoesNotExist, &[], true),
            ("x", Operator::Exists, &["a"], false),
            ("x", Operator::Equals, &[], false),
            ("x", Operator::NotEquals, &["a", "b"], false),
            ("1foo", Operator::In, &["bar"], true),
            ("1234", Operator::In, &["bar"], true),
            ("y", Operator::GreaterThan, &["1"], true),
            ("z", Operator::LessThan, &["6"], true),
            ("foo", Operator::GreaterThan, &["bar"], false),
            ("barz", Operator::LessThan, &["blah"], false),
            ("x", Operator::In, &[""], true),
        ];
        for (key, op, values, ok) in cases {
            let got = Requirement::new(*key, *op, strings(values));
            assert_eq!(got.is_ok(), *ok, "{key} {op} {values:?}: {got:?}");
        }
        assert!(Requirement::new("a".repeat(254), Operator::Exists, vec![]).is_err());
    }

    #[test]
    fn requirement_errors_aggregate_like_upstream() {
        let e = Requirement::new("x", Operator::GreaterThan, strings(&["a", "b"])).unwrap_err();
        assert_eq!(
            e.message(),
            "[values: Invalid value: []string{\"a\", \"b\"}: for 'Gt', 'Lt' operators, exactly \
             one value is required, values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, \
             the value must be an integer, values[1]: Invalid value: \"b\": for 'Gt', 'Lt' \
             operators, the value must be an integer]"
        );
        let e = Requirement::new("", Operator::Exists, vec![]).unwrap_err();
        assert_eq!(
            e.message(),
            format!("key: Invalid value: \"\": name part must be non-empty; {KEY_NAME_ERR}")
        );
        let e = Requirement::new("x", Operator::In, vec![]).unwrap_err();
        assert_eq!(
            e.message(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
    }

    #[test]
    fn display_table() {
        let cases = [
            (
                vec![
                    req("x", Operator::In, &["def", "abc"]),
                    req("y", Operator::NotIn, &["jkl"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc", "def"]),
                    req("y", Operator::NotEquals, &["jkl"]),
                    req("z", Operator::DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc"]),
                    req("y", Operator::In, &["jkl", "mno"]),
                    req("z", Operator::NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Operator::Equals, &["abc"]),
                    req("y", Operator::DoubleEquals, &["jkl"]),
                    req("z", Operator::NotEquals, &["a"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("z", Operator::Exists, &[]),
                    req("y", Operator::LessThan, &["8"]),
                    req("x", Operator::GreaterThan, &["2"]),
                ],
                "x>2,y<8,z",
            ),
        ];
        for (reqs, want) in cases {
            assert_eq!(
                LabelSelector::everything()
                    .with_requirements(reqs)
                    .to_string(),
                want
            );
        }
        assert_eq!(LabelSelector::everything().to_string(), "");
    }

    #[test]
    fn parsed_selectors_match_label_sets() {
        let yes = [
            ("", set(&[("x", "y")])),
            ("x=y", set(&[("x", "y")])),
            ("x==y", set(&[("x", "y")])),
            ("x=y,z=w", set(&[("x", "y"), ("z", "w")])),
            ("x!=y,z!=w", set(&[("x", "z"), ("z", "a")])),
            ("notin=in", set(&[("notin", "in")])),
            ("x", set(&[("x", "z")])),
            ("x", set(&[("x", "")])),
            ("!x", set(&[("y", "z")])),
            ("x>1", set(&[("x", "2")])),
            ("x<1", set(&[("x", "0")])),
            ("x<1", set(&[("x", "-5")])),
            ("x in (a,b)", set(&[("x", "b")])),
            ("x notin (a,b)", set(&[("x", "c")])),
            ("x notin (a,b)", set(&[])),
            ("x!=a", set(&[])),
            ("x=", set(&[("x", "")])),
            ("x in ()", set(&[("x", "")])),
            ("foo=bar,baz=blah", set(&[("foo", "bar"), ("baz", "blah")])),
        ];
        for (s, labels) in yes {
            assert!(sel(s).matches_map(&labels), "{s:?} should match {labels:?}");
        }
        let no = [
            ("x=z", set(&[])),
            ("x=y", set(&[("x", "z")])),
            ("x=y,z=w", set(&[("x", "w"), ("z", "w")])),
            ("x!=y,z!=w", set(&[("x", "z"), ("z", "w")])),
            ("x", set(&[("y", "z")])),
            ("!x", set(&[("x", "z")])),
            ("x>1", set(&[("x", "0")])),
            ("x>1", set(&[("x", "1")])),
            ("x>1", set(&[("x", "v2")])),
            ("x>1", set(&[])),
            ("x<1", set(&[("x", "2")])),
            ("x<1", set(&[("x", "99999999999999999999")])),
            ("x in (a,b)", set(&[("x", "c")])),
            ("x in (a,b)", set(&[])),
            ("x notin (a,b)", set(&[("x", "a")])),
            ("x=", set(&[])),
            (
                "foo=bar,foobar=bar,baz=blah",
                set(&[("foo", "bar"), ("baz", "blah")]),
            ),
        ];
        for (s, labels) in no {
            assert!(
                !sel(s).matches_map(&labels),
                "{s:?} should not match {labels:?}"
            );
        }
    }

    #[test]
    fn requirement_matching_table() {
        let cases = [
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::NotIn, &["alpha"]),
                ],
                true,
            ),
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::In, &["alpha"]),
                ],
                false,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::DoesNotExist, &[]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::DoesNotExist, &[]),
                ],
                false,
            ),
            (
                set(&[("y", "baz")]),
                vec![req("x", Operator::In, &[""])],
                false,
            ),
            (
                set(&[("z", "2")]),
                vec![req("z", Operator::GreaterThan, &["1"])],
                true,
            ),
            (
                set(&[("z", "v2")]),
                vec![req("z", Operator::GreaterThan, &["1"])],
                false,
            ),
        ];
        for (labels, reqs, want) in cases {
            let s = LabelSelector::everything().with_requirements(reqs);
            assert_eq!(s.matches_map(&labels), want, "{s} vs {labels:?}");
        }
    }

    #[test]
    fn matches_json_labels_and_objects() {
        let s = sel("app=web,!canary");
        let labels = json!({"app": "web", "tier": "fe"});
        assert!(s.matches(labels.as_object().unwrap()));
        assert!(s.matches_object(&json!({"metadata": {"name": "a", "labels": {"app": "web"}}})));
        assert!(!s.matches_object(&json!({"metadata": {"labels": {"app": "web", "canary": "1"}}})));
        assert!(!s.matches_object(&json!({"metadata": {"name": "a"}})));
        assert!(sel("!x").matches_object(&json!({})));
        assert!(sel("x!=a").matches_object(&json!({"metadata": {"labels": null}})));
        assert!(LabelSelector::everything().matches_object(&json!({})));
        assert!(sel("x").matches(json!({"x": 1}).as_object().unwrap()));
        assert!(s.matches_with(|k| (k == "app").then_some("web")));
    }

    #[test]
    fn empty_everything_and_nothing() {
        assert!(sel("").is_empty());
        assert!(sel(" \t ").is_empty());
        assert!(!sel("x").is_empty());
        let nothing = LabelSelector::nothing();
        assert!(!nothing.is_empty());
        assert!(nothing.matches_nothing());
        assert!(!nothing.matches_map(&set(&[])));
        assert_eq!(nothing.to_string(), "");
        assert!(nothing
            .with_requirements([req("x", Operator::Exists, &[])])
            .matches_nothing());
        assert!(!LabelSelector::everything().matches_nothing());
    }

    #[test]
    fn exact_value_table() {
        let cases = [
            ("key in (value)", "key", Some("value")),
            ("key in (value,value2)", "key", None),
            (
                "key in (value,value1),key2 in (value2)",
                "key2",
                Some("value2"),
            ),
            ("key=value", "key", Some("value")),
            ("key==value", "key", Some("value")),
            ("key!=value", "key", None),
            ("key", "key", None),
            ("key=value,key2=value2", "key", Some("value")),
            ("other=value", "key", None),
            ("key=", "key", Some("")),
        ];
        for (s, key, want) in cases {
            assert_eq!(sel(s).exact_value(key), want, "{s:?} / {key}");
        }
        // Only the first requirement on the key counts (after the stable key sort).
        assert_eq!(sel("key!=a,key=b").exact_value("key"), None);
    }

    #[test]
    fn from_validated_set_requires_every_pair() {
        let s = LabelSelector::from_validated_set([("b", "2"), ("a", "1")]);
        assert_eq!(s.to_string(), "a=1,b=2");
        assert!(s.matches_map(&set(&[("a", "1"), ("b", "2"), ("c", "3")])));
        assert!(!s.matches_map(&set(&[("a", "1")])));
        assert!(LabelSelector::from_validated_set(BTreeMap::<String, String>::new()).is_empty());
        assert_eq!(
            "a=1".parse::<LabelSelector>().unwrap().exact_value("a"),
            Some("1")
        );
    }

    #[test]
    fn label_selector_json_conversion() {
        assert!(from_label_selector_json(&json!({})).unwrap().is_empty());
        assert!(
            from_label_selector_json(&json!({"matchLabels": {}, "matchExpressions": []}))
                .unwrap()
                .is_empty()
        );
        assert!(from_label_selector_json(&json!({"matchLabels": null}))
            .unwrap()
            .is_empty());
        assert!(from_label_selector_json(&Value::Null)
            .unwrap()
            .matches_nothing());
        let s = from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "team", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist", "values": []}
            ]
        }))
        .unwrap();
        assert_eq!(
            s.to_string(),
            "app=web,env notin (prod),!legacy,team,tier in (be,fe)"
        );
        let labels = set(&[("app", "web"), ("tier", "be"), ("team", "x")]);
        assert!(s.matches_map(&labels));
        assert!(!s.matches_map(&set(&[
            ("app", "web"),
            ("tier", "be"),
            ("team", "x"),
            ("legacy", "")
        ])));
        assert!(!s.matches_map(&set(&[
            ("app", "web"),
            ("tier", "be"),
            ("team", "x"),
            ("env", "prod")
        ])));
        assert!(!s.matches_map(&set(&[("app", "web"), ("tier", "qa"), ("team", "x")])));
        assert_eq!(s.exact_value("app"), Some("web"));
    }

    #[test]
    fn label_selector_json_errors() {
        let e = |v: Value| {
            from_label_selector_json(&v)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "In", "values": []}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "NotIn"}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "Exists", "values": ["a"]}]})),
            "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "Seriously"}]})),
            "\"Seriously\" is not a valid label selector operator"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "in", "values": ["a"]}]})),
            "\"in\" is not a valid label selector operator"
        );
        assert_eq!(
            e(json!({"matchLabels": {"app": "demo-{nginx}"}})),
            format!("values[0][app]: Invalid value: \"demo-{{nginx}}\": {VALUE_ERR}")
        );
        assert_eq!(
            e(json!({"matchLabels": {"a b": "x"}})),
            format!("key: Invalid value: \"a b\": {KEY_NAME_ERR}")
        );
        assert!(e(json!({"matchLabels": {"a": 1}})).starts_with("json: cannot unmarshal number"));
        assert!(e(json!({"matchLabels": []})).starts_with("json: cannot unmarshal array"));
        assert!(e(json!({"matchExpressions": {}})).starts_with("json: cannot unmarshal object"));
        assert!(e(json!({"matchExpressions": [1]})).starts_with("json: cannot unmarshal number"));
        assert!(e(json!("app=web")).starts_with("json: cannot unmarshal string"));
    }

    #[test]
    fn go_quoting_matches_strconv_quote() {
        assert_eq!(go_quote("plain"), "\"plain\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("\n\t\u{1}\u{7f}"), "\"\\n\\t\\x01\\x7f\"");
        assert_eq!(go_quote("é\u{a0}"), "\"é\\u00a0\"");
        assert_eq!(
            go_string_slice(&strings(&["a", "b"])),
            "[]string{\"a\", \"b\"}"
        );
    }

    #[test]
    fn errors_display_their_message() {
        let e = parse("x y").unwrap_err();
        assert_eq!(e.to_string(), e.message());
        assert_eq!(SelectorError::new("m").message(), "m");
        assert_eq!(Operator::NotIn.to_string(), "notin");
        assert_eq!(Operator::GreaterThan.as_str(), "gt");
    }
}
