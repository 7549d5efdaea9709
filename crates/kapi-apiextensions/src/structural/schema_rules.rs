//! [`validate_schema`]: the checks a CRD version's `openAPIV3Schema` must pass
//! (upstream's `ValidateStructural`, the `x-kubernetes-*` rules of the CRD
//! validation, default checks and CEL compilation), with upstream's messages.
//!
//! Structural rules: every specified node has a type (unless int-or-string or
//! preserve-unknown-fields), the root is an object, nodes under `allOf`/`anyOf`/
//! `oneOf`/`not` carry only value validations (no type, default, title,
//! description, nullable, `x-kubernetes-*`, additionalProperties, metadata) and only
//! name fields that the structural part also specifies, and root `metadata` may
//! constrain only `name` and `generateName`. Errors are sorted by message as
//! upstream sorts them.

use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

use super::{cel_schema, Additional, Node};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Validate a CRD version's schema; `path` is the prefix of error paths, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`.
pub fn validate_schema(schema: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    raw_checks(schema, path, &mut errs);
    let root = match Node::from_json(schema) {
        Ok(n) => n,
        Err(e) => {
            errs.push(FieldError::invalid(path, "", e));
            return errs;
        }
    };
    let mut structural = Vec::new();
    invariants(&root, Level::Root, path, &mut structural);
    completeness(&root, &root, path, path, &mut structural);
    structural.sort_by_key(ToString::to_string);
    errs.extend(structural);
    extensions(&root, path, &mut errs);
    errs.extend(cel_schema::schema_errors(&root, path));
    if errs.is_empty() {
        defaults(&root, path, &mut errs);
    }
    errs
}

/// Keys CRD schemas may not use at all (checked on the raw JSON).
fn raw_checks(v: &Value, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let Value::Object(m) = v else { return };
    for (key, msg) in [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("$schema", "$schema is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("additionalItems", "additionalItems is not supported"),
    ] {
        if m.get(key).is_some_and(|x| !x.is_null()) {
            errs.push(FieldError::forbidden(&path.child(key), msg));
        }
    }
    if let Some(Value::Array(_)) = m.get("items") {
        errs.push(FieldError::forbidden(
            &path.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, p) in props {
            raw_checks(p, &path.child("properties").key(k), errs);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(x @ Value::Object(_)) = m.get(key) {
            raw_checks(x, &path.child(key), errs);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = m.get(key) {
            for (i, x) in a.iter().enumerate() {
                raw_checks(x, &path.child(key).index(i), errs);
            }
        }
    }
}

fn invariants(s: &Node, lvl: Level, p: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.ty == "array" && s.items.is_none() {
        errs.push(FieldError::required(&p.child("items"), "must be specified"));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &p.child("items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(v, Level::Field, &p.child("properties").key(k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &p.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Additional::Schema(n) = ap {
            invariants(n, Level::Field, &p.child("additionalProperties"), errs);
        }
    }
    if s.x_int_or_string && s.x_preserve_unknown_fields {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    junctor_members(s, lvl, p, errs);
    if s.x_embedded_resource && s.ty != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if s.ty.is_empty() {
            errs.push(FieldError::required(&p.child("type"), msg));
        } else {
            errs.push(FieldError::invalid(&p.child("type"), s.ty.as_str(), msg));
        }
    } else if s.ty.is_empty() && !s.x_int_or_string && !s.x_preserve_unknown_fields {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&p.child("type"), msg));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &p.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.ty.is_empty() && s.ty != "object" {
        errs.push(FieldError::invalid(
            &p.child("type"),
            s.ty.as_str(),
            "must be object at the root",
        ));
    }
    let check_meta = lvl == Level::Root || s.x_embedded_resource;
    for key in ["kind", "apiVersion"] {
        if let Some(f) = s
            .properties
            .get(key)
            .filter(|f| check_meta && f.ty != "string")
        {
            let fp = p.child("properties").key(key).child("type");
            errs.push(FieldError::invalid(&fp, f.ty.as_str(), "must be string"));
        }
    }
    if let Some(meta) = s.properties.get("metadata") {
        let mp = p.child("properties").key("metadata");
        if check_meta && meta.ty != "object" {
            errs.push(FieldError::invalid(
                &mp.child("type"),
                meta.ty.as_str(),
                "must be object",
            ));
        }
        if lvl == Level::Root && !only_name_constraints(meta) {
            errs.push(FieldError::forbidden(
                &mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.x_embedded_resource && !s.x_preserve_unknown_fields && s.properties.is_empty() {
        errs.push(FieldError::required(
            &p.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root metadata may only say `type: object` and constrain name/generateName.
fn only_name_constraints(m: &Node) -> bool {
    let mut rest = m.clone();
    rest.ty.clear();
    rest.default = None;
    rest.properties
        .retain(|k, _| k != "name" && k != "generateName");
    rest == Node::default()
}

fn is_int_or_string_any_of(any_of: &[Node]) -> bool {
    let is_only_type = |n: &Node, t: &str| {
        let mut x = n.clone();
        let ok = x.ty == t;
        x.ty.clear();
        ok && x == Node::default()
    };
    any_of.len() == 2 && is_only_type(&any_of[0], "integer") && is_only_type(&any_of[1], "string")
}

fn junctor_members(s: &Node, lvl: Level, p: &FieldPath, errs: &mut Vec<FieldError>) {
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of = s
        .all_of
        .first()
        .is_some_and(|n| is_int_or_string_any_of(&n.any_of));
    value_validation(s, skip_any_of, skip_first_all_of, lvl, p, errs);
}

fn value_validation(
    s: &Node,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, n) in s.any_of.iter().enumerate() {
            nested(n, false, lvl, &p.child("anyOf").index(i), errs);
        }
    }
    for (i, n) in s.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(n, skip, lvl, &p.child("allOf").index(i), errs);
    }
    for (i, n) in s.one_of.iter().enumerate() {
        nested(n, false, lvl, &p.child("oneOf").index(i), errs);
    }
    if let Some(n) = &s.not {
        nested(n, false, lvl, &p.child("not"), errs);
    }
    if let Some(pat) = s.pattern.as_ref().filter(|_| s.pattern_re.is_none()) {
        let err = match super::go_regex::compile(pat) {
            Err(e) => super::go_regex::error_message(pat, &e),
            Ok(_) => String::new(),
        };
        errs.push(FieldError::invalid(
            &p.child("pattern"),
            pat.as_str(),
            format!("must be a valid regular expression, but isn't: {err}"),
        ));
    }
}

fn nested(v: &Node, skip_any_of: bool, lvl: Level, p: &FieldPath, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, lvl, p, errs);
    if let Some(items) = &v.items {
        nested(items, false, lvl, &p.child("items"), errs);
    }
    for (k, f) in &v.properties {
        nested(f, false, Level::Field, &p.child("properties").key(k), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, key: &str, msg: &str| {
        errs.push(FieldError::forbidden(&p.child(key), msg));
    };
    if !v.ty.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.additional_properties.is_some() {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.has_external_docs {
        forbid(errs, "externalDocs", "must be undefined to be structural");
    }
    if v.x_preserve_unknown_fields {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.x_embedded_resource {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.x_int_or_string {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if !v.x_list_map_keys.is_empty() {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.x_list_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.x_map_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !v.x_validations.is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &p.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Every property or items named under a junctor is specified structurally too.
fn completeness(v: &Node, s: &Node, sp: &FieldPath, vp: &FieldPath, errs: &mut Vec<FieldError>) {
    let groups = [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ];
    if let Some(n) = &v.not {
        nested_complete(n, Some(s), sp, &vp.child("not"), errs);
    }
    for (name, list) in groups {
        for (i, n) in list.iter().enumerate() {
            nested_complete(n, Some(s), sp, &vp.child(name).index(i), errs);
        }
    }
}

fn nested_complete(
    v: &Node,
    s: Option<&Node>,
    sp: &FieldPath,
    vp: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            sp,
            format!("because it is defined in {vp}"),
        ));
        return;
    };
    completeness(v, s, sp, vp, errs);
    if let Some(items) = &v.items {
        nested_complete(
            items,
            s.items.as_deref(),
            &sp.child("items"),
            &vp.child("items"),
            errs,
        );
    }
    for (k, f) in &v.properties {
        let fvp = vp.child("properties").key(k);
        match s.properties.get(k) {
            Some(sf) => nested_complete(f, Some(sf), &sp.child("properties").key(k), &fvp, errs),
            None => errs.push(FieldError::required(
                &sp.child("properties").key(k),
                format!("because it is defined in {fvp}"),
            )),
        }
    }
}

const TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// The CRD validation's per-node rules for types and `x-kubernetes-*` extensions.
fn extensions(s: &Node, p: &FieldPath, errs: &mut Vec<FieldError>) {
    super::schema_ext::check(s, p, errs, TYPES);
    for (k, v) in &s.properties {
        extensions(v, &p.child("properties").key(k), errs);
    }
    if let Some(items) = &s.items {
        extensions(items, &p.child("items"), errs);
    }
    if let Some(ap) = s.additional_schema() {
        extensions(ap, &p.child("additionalProperties"), errs);
    }
}

/// Defaults must validate against their schema and be pruned already.
fn defaults(s: &Node, p: &FieldPath, errs: &mut Vec<FieldError>) {
    if let Some(d) = &s.default {
        for mut e in super::validate::validate(s, d, None) {
            e.field = prefix(p.child("default"), &e.field);
            errs.push(e);
        }
        let rules = super::cel::CompiledRules::compile_node(s, s.x_embedded_resource);
        for mut e in rules.validate(s, d, None).0 {
            e.field = prefix(p.child("default"), &e.field);
            errs.push(e);
        }
        let mut pruned = d.clone();
        let gone = super::prune::prune_value(&mut pruned, s);
        if !gone.is_empty() {
            errs.push(FieldError::invalid(
                &p.child("default"),
                d.clone(),
                format!("must not have unknown fields: {}", gone.join(", ")),
            ));
        }
    }
    for (k, v) in &s.properties {
        defaults(v, &p.child("properties").key(k), errs);
    }
    if let Some(items) = &s.items {
        defaults(items, &p.child("items"), errs);
    }
    if let Some(ap) = s.additional_schema() {
        defaults(ap, &p.child("additionalProperties"), errs);
    }
}

fn prefix(base: FieldPath, rest: &str) -> String {
    let base = base.to_string();
    if rest.is_empty() || rest == "<nil>" {
        base
    } else if rest.starts_with('[') {
        format!("{base}{rest}")
    } else {
        format!("{base}.{rest}")
    }
}
