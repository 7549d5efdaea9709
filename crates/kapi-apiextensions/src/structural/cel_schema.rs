//! The CRD-side checks of CEL rules for `validate_schema`: rule, message,
//! messageExpression, reason and fieldPath well-formed, rules compile,
//! `optionalOldSelf` only with `oldSelf`, `oldSelf` only where old values correlate
//! (not below the items of lists other than `x-kubernetes-list-type: map`), and the
//! static cost limits, per rule and for the whole schema (each rule's cost times how
//! often it can run). Messages are upstream's.

use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

use super::cel::compile_rule;
use super::cel_cost::{cost_error_message, Pricer, Shape, STATIC_CRD_LIMIT, STATIC_RULE_LIMIT};
use super::{Node, Rule};

/// Everything `validate_schema` reports about the rules under `root`: missing or
/// malformed rules, compile errors, `optionalOldSelf` misuse, `oldSelf` where values
/// do not correlate, and static cost limits (per rule and for the whole schema).
pub(crate) fn schema_errors(root: &Node, path: &FieldPath) -> Vec<FieldError> {
    let mut c = SchemaCheck {
        errs: Vec::new(),
        total: 0,
    };
    c.node(root, path, 1, None, true);
    if c.total > STATIC_CRD_LIMIT {
        c.errs.push(FieldError::forbidden(
            path,
            cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                c.total,
                STATIC_CRD_LIMIT,
            ),
        ));
    }
    c.errs
}

struct SchemaCheck {
    errs: Vec<FieldError>,
    total: u64,
}

const REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn rule_json(r: &Rule) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("rule".into(), Value::from(r.rule.as_str()));
    for (k, v) in [
        ("message", &r.message),
        ("messageExpression", &r.message_expression),
        ("reason", &r.reason),
        ("fieldPath", &r.field_path),
    ] {
        if !v.is_empty() {
            m.insert(k.into(), Value::from(v.as_str()));
        }
    }
    if let Some(o) = r.optional_old_self {
        m.insert("optionalOldSelf".into(), Value::from(o));
    }
    Value::Object(m)
}

impl SchemaCheck {
    fn node(
        &mut self,
        n: &Node,
        path: &FieldPath,
        fan_out: u64,
        uncorrelatable: Option<&FieldPath>,
        resource_root: bool,
    ) {
        for (i, r) in n.x_validations.iter().enumerate() {
            self.rule(
                n,
                r,
                &path.child("x-kubernetes-validations").index(i),
                fan_out,
                uncorrelatable,
                resource_root,
            );
        }
        for (k, p) in &n.properties {
            self.node(
                p,
                &path.child("properties").key(k),
                fan_out,
                uncorrelatable,
                p.x_embedded_resource,
            );
        }
        let here = fan_out.saturating_mul(Shape::fan_out(n));
        if let Some(items) = n.items.as_deref() {
            let correlates = n.x_list_type.as_deref() == Some("map");
            let unc = if correlates || uncorrelatable.is_some() {
                uncorrelatable.cloned()
            } else {
                Some(path.clone())
            };
            self.node(
                items,
                &path.child("items"),
                here,
                unc.as_ref(),
                items.x_embedded_resource,
            );
        }
        if let Some(ap) = n.additional_schema() {
            self.node(
                ap,
                &path.child("additionalProperties"),
                here,
                uncorrelatable,
                ap.x_embedded_resource,
            );
        }
    }

    fn rule(
        &mut self,
        n: &Node,
        r: &Rule,
        rp: &FieldPath,
        fan_out: u64,
        uncorrelatable: Option<&FieldPath>,
        resource_root: bool,
    ) {
        let errs = &mut self.errs;
        let trimmed = r.rule.trim();
        let msg = r.message.trim();
        if trimmed.is_empty() {
            errs.push(FieldError::required(
                &rp.child("rule"),
                "rule is not specified",
            ));
            return;
        } else if !r.message.is_empty() && msg.is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                r.message.as_str(),
                "message must be non-empty if specified",
            ));
        } else if msg.contains('\n') || msg.contains('\r') {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                r.message.as_str(),
                "message must not contain line breaks",
            ));
        } else if (trimmed.contains('\n') || trimmed.contains('\r')) && msg.is_empty() {
            errs.push(FieldError::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !r.message_expression.is_empty() && r.message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if !r.reason.is_empty() && !REASONS.contains(&r.reason.as_str()) {
            errs.push(FieldError::not_supported(
                &rp.child("reason"),
                r.reason.as_str(),
                REASONS,
            ));
        }
        if !r.field_path.is_empty() {
            let fp = rp.child("fieldPath");
            if r.field_path.trim().is_empty() {
                errs.push(FieldError::invalid(
                    &fp,
                    r.field_path.as_str(),
                    "fieldPath must be non-empty if specified",
                ));
            } else if r.field_path.contains('\n') {
                errs.push(FieldError::invalid(
                    &fp,
                    r.field_path.as_str(),
                    "fieldPath must not contain line breaks",
                ));
            } else if resolve_field_path(n, &r.field_path).is_none() {
                errs.push(FieldError::invalid(
                    &fp,
                    r.field_path.as_str(),
                    "fieldPath must be a valid path",
                ));
            }
        }
        let program = match compile_rule(trimmed, n, resource_root) {
            Ok(p) => p,
            Err(e) => {
                errs.push(FieldError::invalid(
                    rp,
                    rule_json(r),
                    format!("compilation failed: {e}"),
                ));
                return;
            }
        };
        let uses_old = program.references().has_variable("oldSelf");
        let shape = Shape::Schema(n);
        let cost = Pricer::new(shape, shape, u64::MAX).cost(program.expression());
        if cost > STATIC_RULE_LIMIT {
            errs.push(FieldError::forbidden(
                &rp.child("rule"),
                cost_error_message("estimated rule cost", cost, STATIC_RULE_LIMIT),
            ));
        }
        self.total = self.total.saturating_add(cost.saturating_mul(fan_out));
        if !r.message_expression.trim().is_empty() {
            match compile_rule(&r.message_expression, n, resource_root) {
                Err(e) => errs.push(FieldError::invalid(
                    rp,
                    rule_json(r),
                    format!("messageExpression compilation failed: {e}"),
                )),
                Ok(m) => {
                    let mc = Pricer::new(shape, shape, u64::MAX).cost(m.expression());
                    if mc > STATIC_RULE_LIMIT {
                        errs.push(FieldError::forbidden(
                            &rp.child("messageExpression"),
                            cost_error_message(
                                "estimated messageExpression cost",
                                mc,
                                STATIC_RULE_LIMIT,
                            ),
                        ));
                    }
                    self.total = self.total.saturating_add(mc.saturating_mul(fan_out));
                }
            }
        }
        if uses_old {
            if let Some(list) = uncorrelatable {
                errs.push(FieldError::invalid(
                    &rp.child("rule"),
                    r.rule.as_str(),
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"),
                ));
            }
        } else if let Some(o) = r.optional_old_self {
            errs.push(FieldError::invalid(
                &rp.child("optionalOldSelf"),
                o,
                "may not be set if rule does not use oldSelf",
            ));
        }
    }
}

/// Resolve a rule's `fieldPath` (`.a.b`, `.a['x.y']`) against the node's schema.
pub(crate) fn resolve_field_path<'a>(n: &'a Node, fp: &str) -> Option<(String, &'a Node)> {
    let mut node = n;
    let mut out = String::new();
    let mut rest = fp.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let (name, next) = if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            (r[..end].to_string(), &r[end..])
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            (r[..end].replace("\\'", "'"), &r[end + 2..])
        } else {
            return None;
        };
        if name.is_empty() {
            return None;
        }
        if !node.properties.is_empty() {
            // Upstream names a property as a child even when written `['name']`.
            node = node.properties.get(&name)?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else {
            node = node.additional_schema()?;
            out.push_str(&format!("[{name}]"));
        }
        rest = next;
    }
    Some((out, node))
}
