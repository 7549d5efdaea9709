//! The `flowcontrol.apiserver.k8s.io/v1` group: flowschemas and
//! prioritylevelconfigurations (+status) — upstream's v1 defaults, the main
//! validation rules of `pkg/apis/flowcontrol/validation`, the tables, and the
//! bootstrap configuration (`bootstrap.rs`) the server creates at start-up.
//!
//! Flow control itself (queuing requests) is not run; these objects are
//! stored, validated and listed as upstream.

pub mod bootstrap;

use kapi_machinery::validation::{is_dns1123_subdomain, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Value};

use crate::core::podspec_validation::validate_enum;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, i64_at, present, set_default, str_at};

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";

pub struct FlowSchemaStrategy;
pub struct PriorityLevelConfigurationStrategy;

fn non_empty(list: &[Value], path: &FieldPath, what: &str, errs: &mut ErrorList) {
    if list.is_empty() {
        errs.push(FieldError::required(
            path,
            format!("{what} must contain at least one value"),
        ));
    }
}

/// `*` must stand alone in a list (verbs, groups, resources, namespaces, URLs).
fn star_alone(list: &[Value], path: &FieldPath, what: &str, errs: &mut ErrorList) {
    if list.len() > 1 && list.iter().any(|v| v == "*") {
        let value = Value::Array(list.to_vec());
        errs.push(FieldError::invalid(
            path,
            value,
            format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn validate_subject(s: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let kind = str_at(s, "/kind");
    let (member, name_ptr) = match kind {
        "User" => ("user", "/user/name"),
        "Group" => ("group", "/group/name"),
        "ServiceAccount" => ("serviceAccount", "/serviceAccount/name"),
        "" => {
            errs.push(FieldError::required(&path.child("kind"), ""));
            return errs;
        }
        other => {
            errs.push(FieldError::not_supported(
                &path.child("kind"),
                other,
                &["Group", "ServiceAccount", "User"],
            ));
            return errs;
        }
    };
    if present(s, &format!("/{member}")).is_none() {
        errs.push(FieldError::required(
            &path.child(member),
            format!("{member} is required when subject kind is '{kind}'"),
        ));
        return errs;
    }
    if str_at(s, name_ptr).is_empty() {
        errs.push(FieldError::required(
            &path.child(member).child("name"),
            format!("{member} name is required"),
        ));
    }
    if kind == "ServiceAccount" && str_at(s, "/serviceAccount/namespace").is_empty() {
        errs.push(FieldError::required(
            &path.child(member).child("namespace"),
            "must specify namespace for service account",
        ));
    }
    errs
}

fn validate_rules(rules: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let subjects = arr_at(rules, "/subjects");
    non_empty(subjects, &path.child("subjects"), "subjects", &mut errs);
    for (i, s) in subjects.iter().enumerate() {
        errs.extend(validate_subject(s, &path.child("subjects").index(i)));
    }
    let (res, non_res) = (
        arr_at(rules, "/resourceRules"),
        arr_at(rules, "/nonResourceRules"),
    );
    if res.is_empty() && non_res.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in res.iter().enumerate() {
        let p = path.child("resourceRules").index(i);
        for (field, what) in [
            ("verbs", "verbs"),
            ("apiGroups", "api groups"),
            ("resources", "resources"),
        ] {
            let list = arr_at(r, &format!("/{field}"));
            non_empty(list, &p.child(field), field, &mut errs);
            star_alone(list, &p.child(field), what, &mut errs);
        }
        let namespaces = arr_at(r, "/namespaces");
        if namespaces.is_empty() && r.get("clusterScope").and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::required(
                &p.child("namespaces"),
                "resource rules that are not cluster scoped must supply at least one namespace",
            ));
        }
        star_alone(namespaces, &p.child("namespaces"), "namespaces", &mut errs);
    }
    for (i, r) in non_res.iter().enumerate() {
        let p = path.child("nonResourceRules").index(i);
        for field in ["verbs", "nonResourceURLs"] {
            let list = arr_at(r, &format!("/{field}"));
            non_empty(list, &p.child(field), field, &mut errs);
            star_alone(list, &p.child(field), field, &mut errs);
        }
    }
    errs
}

impl Strategy for FlowSchemaStrategy {
    /// Upstream's printer lists flow schemas in matching order: by
    /// precedence, then name.
    fn sort_table_rows(&self, items: &mut [&Value]) {
        let key = |o: &Value| {
            (
                o.pointer("/spec/matchingPrecedence")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            )
        };
        items.sort_by_cached_key(|o| key(o));
    }

    /// Status writes keep the stored metadata (upstream's flow control
    /// status strategies).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Stored
    }

    fn default(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            set_default(spec, "matchingPrecedence", json!(1000));
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        let precedence = i64_at(obj, "/spec/matchingPrecedence").unwrap_or(0);
        if precedence <= 0 {
            errs.push(FieldError::invalid(
                &spec.child("matchingPrecedence"),
                precedence,
                "must be a positive value",
            ));
        } else if precedence > 10000 {
            errs.push(FieldError::invalid(
                &spec.child("matchingPrecedence"),
                precedence,
                "must not be greater than 10000",
            ));
        }
        if let Some(method) = present(obj, "/spec/distinguisherMethod") {
            errs.extend(validate_enum(
                method.get("type"),
                &["ByNamespace", "ByUser"],
                &spec.child("distinguisherMethod").child("type"),
            ));
        }
        let level = str_at(obj, "/spec/priorityLevelConfiguration/name");
        let level_path = spec.child("priorityLevelConfiguration").child("name");
        if level.is_empty() {
            errs.push(FieldError::required(
                &level_path,
                "must reference a priority level",
            ));
        }
        for msg in is_dns1123_subdomain(level)
            .into_iter()
            .filter(|_| !level.is_empty())
        {
            errs.push(FieldError::invalid(&level_path, level, msg));
        }
        for (i, rules) in arr_at(obj, "/spec/rules").iter().enumerate() {
            errs.extend(validate_rules(rules, &spec.child("rules").index(i)));
        }
        errs
    }

    fn validate_subresource_update(&self, _sub: &str, _new: &Value, _old: &Value) -> ErrorList {
        ErrorList::new()
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("PriorityLevel", "priorityLevelConfiguration should reference a PriorityLevelConfiguration in the cluster. If the reference cannot be resolved, the FlowSchema will be ignored and marked as invalid in its status. Required."),
            string_column("MatchingPrecedence", "matchingPrecedence is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default."),
            string_column("DistinguisherMethod", "distinguisherMethod defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string."),
            age_column(),
            string_column("MissingPL", "indicates whether the referenced priority level is missing"),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let method = match str_at(obj, "/spec/distinguisherMethod/type") {
            "" => "<none>",
            m => m,
        };
        let dangling = arr_at(obj, "/status/conditions")
            .iter()
            .find(|c| str_at(c, "/type") == "Dangling")
            .map_or("?", |c| str_at(c, "/status"));
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/priorityLevelConfiguration/name")),
            json!(i64_at(obj, "/spec/matchingPrecedence").unwrap_or(0)),
            json!(method),
            age_cell(obj),
            json!(dangling),
        ]
    }
}

fn validate_limited(limited: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(n) = i64_at(limited, "/nominalConcurrencyShares").filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            &path.child("nominalConcurrencyShares"),
            n,
            "must be a non-negative integer",
        ));
    }
    if let Some(p) = i64_at(limited, "/lendablePercent").filter(|p| !(0..=100).contains(p)) {
        errs.push(FieldError::invalid(
            &path.child("lendablePercent"),
            p,
            "must be between 0 and 100, inclusive",
        ));
    }
    if let Some(p) = i64_at(limited, "/borrowingLimitPercent").filter(|p| *p < 0) {
        errs.push(FieldError::invalid(
            &path.child("borrowingLimitPercent"),
            p,
            "if specified, must be a non-negative integer",
        ));
    }
    let lr = path.child("limitResponse");
    let queuing = present(limited, "/limitResponse/queuing");
    match str_at(limited, "/limitResponse/type") {
        "Queue" => match queuing {
            None => errs.push(FieldError::required(
                &lr.child("queuing"),
                "must not be empty if type is Queue",
            )),
            Some(q) => {
                let qp = lr.child("queuing");
                for f in ["queueLengthLimit", "queues", "handSize"] {
                    let v = i64_at(q, &format!("/{f}")).unwrap_or(0);
                    if v <= 0 {
                        errs.push(FieldError::invalid(&qp.child(f), v, "must be positive"));
                    }
                }
                let (queues, hand) = (
                    i64_at(q, "/queues").unwrap_or(0),
                    i64_at(q, "/handSize").unwrap_or(0),
                );
                if hand > queues {
                    errs.push(FieldError::invalid(
                        &qp.child("handSize"),
                        hand,
                        format!("should not be greater than queues ({queues})"),
                    ));
                }
            }
        },
        "Reject" if queuing.is_some() => errs.push(FieldError::forbidden(
            &lr.child("queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        "Reject" => {}
        other => errs.extend(validate_enum(
            Some(&json!(other)),
            &["Queue", "Reject"],
            &lr.child("type"),
        )),
    }
    errs
}

impl Strategy for PriorityLevelConfigurationStrategy {
    /// Status writes keep the stored metadata (upstream's flow control
    /// status strategies).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Stored
    }

    fn default(&self, obj: &mut Value) {
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if str_at(spec, "/type") == "Exempt" {
            if let Some(exempt) = child_obj(spec, "exempt") {
                set_default(exempt, "nominalConcurrencyShares", json!(0));
                set_default(exempt, "lendablePercent", json!(0));
            }
        }
        if let Some(limited) = spec.get_mut("limited").filter(|l| l.is_object()) {
            set_default(limited, "nominalConcurrencyShares", json!(30));
            set_default(limited, "lendablePercent", json!(0));
            if let Some(q) = limited
                .pointer_mut("/limitResponse/queuing")
                .filter(|q| q.is_object())
            {
                set_default(q, "queues", json!(64));
                set_default(q, "handSize", json!(8));
                set_default(q, "queueLengthLimit", json!(50));
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        let kind = str_at(obj, "/spec/type");
        let name = str_at(obj, "/metadata/name");
        let limited = present(obj, "/spec/limited");
        let exempt = present(obj, "/spec/exempt");
        match kind {
            "Exempt" => {
                if limited.is_some() {
                    errs.push(FieldError::forbidden(
                        &spec.child("limited"),
                        "must be nil if the type is not Limited",
                    ));
                }
            }
            "Limited" => {
                match limited {
                    None => errs.push(FieldError::required(
                        &spec.child("limited"),
                        "must not be empty when type is Limited",
                    )),
                    Some(l) => errs.extend(validate_limited(l, &spec.child("limited"))),
                }
                if exempt.is_some() {
                    errs.push(FieldError::forbidden(
                        &spec.child("exempt"),
                        "must be nil if the type is Limited",
                    ));
                }
            }
            other => errs.extend(validate_enum(
                Some(&json!(other)),
                &["Exempt", "Limited"],
                &spec.child("type"),
            )),
        }
        if (name == "exempt") != (kind == "Exempt") && !kind.is_empty() {
            errs.push(FieldError::invalid(
                &spec.child("type"),
                kind,
                "type must be 'Exempt' if and only if name is 'exempt'",
            ));
        }
        errs
    }

    fn validate_subresource_update(&self, _sub: &str, _new: &Value, _old: &Value) -> ErrorList {
        ErrorList::new()
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Type", "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required."),
            string_column("NominalConcurrencyShares", "nominalConcurrencyShares (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level."),
            string_column("Queues", "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64."),
            string_column("HandSize", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues."),
            string_column("QueueLengthLimit", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let none = || json!("<none>");
        let (mut ncs, mut queues, mut hand, mut length) = (none(), none(), none(), none());
        if let Some(l) = present(obj, "/spec/limited") {
            ncs = json!(i64_at(l, "/nominalConcurrencyShares").unwrap_or(0));
            if let Some(q) = present(l, "/limitResponse/queuing") {
                queues = json!(i64_at(q, "/queues").unwrap_or(0));
                hand = json!(i64_at(q, "/handSize").unwrap_or(0));
                length = json!(i64_at(q, "/queueLengthLimit").unwrap_or(0));
            }
        }
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/type")),
            ncs,
            queues,
            hand,
            length,
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn bootstrap_objects_are_valid_and_defaulted() {
        for mut pl in bootstrap::priority_levels() {
            let before = pl.clone();
            PriorityLevelConfigurationStrategy.default(&mut pl);
            assert_eq!(pl, before, "defaulting changes nothing");
            assert!(
                PriorityLevelConfigurationStrategy.validate(&pl).is_empty(),
                "{pl}"
            );
        }
        for mut fs in bootstrap::flow_schemas() {
            FlowSchemaStrategy.default(&mut fs);
            assert!(FlowSchemaStrategy.validate(&fs).is_empty(), "{fs}");
        }
    }

    #[test]
    fn flow_schema_rules() {
        let fs = json!({"spec": {"matchingPrecedence": 0, "priorityLevelConfiguration": {"name": ""},
            "rules": [{"subjects": [], "resourceRules": [{"verbs": ["get", "*"], "apiGroups": [""], "resources": ["pods"]}]}]}});
        assert_eq!(
            msgs(FlowSchemaStrategy.validate(&fs)),
            vec![
                "spec.matchingPrecedence: Invalid value: 0: must be a positive value",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
                "spec.rules[0].subjects: Required value: subjects must contain at least one value",
                "spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"get\", \"*\"}: if '*' is present, must not specify other verbs",
                "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
            ]
        );
    }

    #[test]
    fn priority_level_rules_and_cells() {
        let pl = json!({"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {"queues": 2, "handSize": 3}}}}});
        let mut pl2 = pl.clone();
        PriorityLevelConfigurationStrategy.default(&mut pl2);
        assert_eq!(
            msgs(PriorityLevelConfigurationStrategy.validate(&pl2)),
            vec!["spec.limited.limitResponse.queuing.handSize: Invalid value: 3: should not be greater than queues (2)"]
        );
        assert_eq!(PriorityLevelConfigurationStrategy.cells(&pl2)[2], 30);
        let exempt = json!({"metadata": {"name": "mine"}, "spec": {"type": "Exempt"}});
        assert_eq!(
            msgs(PriorityLevelConfigurationStrategy.validate(&exempt)),
            vec!["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"]
        );
    }
}
