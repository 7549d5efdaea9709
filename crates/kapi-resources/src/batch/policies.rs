//! The policy blocks of a job spec: `podFailurePolicy`, `successPolicy`,
//! `podReplacementPolicy`, and `managedBy`'s domain-prefixed path — upstream's
//! `validatePodFailurePolicy*`, `validateSuccessPolicy*`,
//! `validatePodReplacementPolicy` and `IsDomainPrefixedPath`, with their messages.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1123_subdomain, is_qualified_name, regex_error, ErrorList, FieldError, FieldPath,
    IS_NEGATIVE_ERROR_MSG,
};
use serde_json::Value;

use crate::core::util::{arr_at, i64_at, present, str_at};

const MAX_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCEEDED_INDEXES_LEN: usize = 64 * 1024;
const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const CONDITION_STATUSES: [&str; 3] = ["False", "True", "Unknown"];

/// Go's `%q` of a sorted string list: `["a" "b"]`.
fn quoted_list(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("\"{s}\"")).collect();
    format!("[{}]", q.join(" "))
}

pub fn validate_pod_failure_policy(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let rules_path = path.child("rules");
    let rules = arr_at(spec, "/podFailurePolicy/rules");
    if rules.len() > MAX_RULES {
        errs.push(FieldError::too_many(
            &rules_path,
            Some(rules.len()),
            Some(MAX_RULES),
        ));
    }
    let containers: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| arr_at(spec, &format!("/template/spec/{l}")))
        .map(|c| str_at(c, "/name"))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        errs.extend(validate_rule(spec, rule, &rules_path.index(i), &containers));
    }
    errs
}

fn validate_rule(
    spec: &Value,
    rule: &Value,
    path: &FieldPath,
    containers: &BTreeSet<&str>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let action_path = path.child("action");
    match str_at(rule, "/action") {
        "" => errs.push(FieldError::required(
            &action_path,
            format!("valid values: {}", quoted_list(&ACTIONS)),
        )),
        "FailIndex" if present(spec, "/backoffLimitPerIndex").is_none() => {
            errs.push(FieldError::invalid(
                &action_path,
                "FailIndex",
                "requires the backoffLimitPerIndex to be set",
            ))
        }
        a if !ACTIONS.contains(&a) => {
            errs.push(FieldError::not_supported(&action_path, a, &ACTIONS))
        }
        _ => {}
    }
    let on_exit = present(rule, "/onExitCodes");
    let on_conditions = arr_at(rule, "/onPodConditions");
    if let Some(req) = on_exit {
        errs.extend(validate_on_exit_codes(
            req,
            &path.child("onExitCodes"),
            containers,
        ));
    }
    if !on_conditions.is_empty() {
        errs.extend(validate_on_conditions(
            on_conditions,
            &path.child("onPodConditions"),
        ));
    }
    let omitted = |msg: &str| FieldError {
        bad_value: None,
        ..FieldError::invalid(path, Value::Null, msg)
    };
    if on_exit.is_some() && !on_conditions.is_empty() {
        errs.push(omitted(
            "specifying both OnExitCodes and OnPodConditions is not supported",
        ));
    }
    if on_exit.is_none() && on_conditions.is_empty() {
        errs.push(omitted(
            "specifying one of OnExitCodes and OnPodConditions is required",
        ));
    }
    errs
}

fn validate_on_conditions(patterns: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errs.push(FieldError::too_many(
            path,
            Some(patterns.len()),
            Some(MAX_CONDITION_PATTERNS),
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let p = path.index(j);
        let ty = str_at(pattern, "/type");
        errs.extend(
            is_qualified_name(ty)
                .into_iter()
                .map(|m| FieldError::invalid(&p.child("type"), ty, m)),
        );
        match str_at(pattern, "/status") {
            "" => errs.push(FieldError::required(
                &p.child("status"),
                format!("valid values: {}", quoted_list(&CONDITION_STATUSES)),
            )),
            s if !CONDITION_STATUSES.contains(&s) => errs.push(FieldError::not_supported(
                &p.child("status"),
                s,
                &CONDITION_STATUSES,
            )),
            _ => {}
        }
    }
    errs
}

fn validate_on_exit_codes(req: &Value, path: &FieldPath, containers: &BTreeSet<&str>) -> ErrorList {
    let mut errs = ErrorList::new();
    let op = str_at(req, "/operator");
    match op {
        "" => errs.push(FieldError::required(
            &path.child("operator"),
            format!("valid values: {}", quoted_list(&["In", "NotIn"])),
        )),
        "In" | "NotIn" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("operator"),
            other,
            &["In", "NotIn"],
        )),
    }
    if let Some(name) = present(req, "/containerName").and_then(Value::as_str) {
        if !containers.contains(name) {
            errs.push(FieldError::invalid(
                &path.child("containerName"),
                name,
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values_path = path.child("values");
    let values: Vec<i64> = arr_at(req, "/values")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    if values.is_empty() {
        errs.push(FieldError::invalid(
            &values_path,
            Value::Array(Vec::new()),
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODES {
        errs.push(FieldError::too_many(
            &values_path,
            Some(values.len()),
            Some(MAX_EXIT_CODES),
        ));
    }
    let mut seen = BTreeSet::new();
    for (j, v) in values.iter().enumerate() {
        let p = values_path.index(j);
        if op == "In" && *v == 0 {
            errs.push(FieldError::invalid(
                &p,
                *v,
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*v) {
            errs.push(FieldError::duplicate(&p, *v));
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        errs.push(FieldError::invalid(
            &values_path,
            values.clone(),
            "must be ordered",
        ));
    }
    errs
}

pub fn validate_success_policy(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let rules_path = path.child("rules");
    let rules = arr_at(spec, "/successPolicy/rules");
    if rules.is_empty() {
        errs.push(FieldError::required(
            &rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_RULES {
        errs.push(FieldError::too_many(
            &rules_path,
            Some(rules.len()),
            Some(MAX_RULES),
        ));
    }
    let completions = i64_at(spec, "/completions").unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let p = rules_path.index(i);
        let count = i64_at(rule, "/succeededCount");
        let indexes = present(rule, "/succeededIndexes").and_then(Value::as_str);
        if count.is_none() && indexes.is_none() {
            errs.push(FieldError::required(
                &p,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(ix) = indexes {
            let ip = p.child("succeededIndexes");
            if ix.len() > MAX_SUCCEEDED_INDEXES_LEN {
                errs.push(FieldError::too_long(&ip, ix, MAX_SUCCEEDED_INDEXES_LEN));
            }
            match indexes_total(ix, completions) {
                Ok(n) => total = n,
                Err(e) => errs.push(FieldError::invalid(
                    &ip,
                    ix,
                    format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(c) = count {
            let cp = p.child("succeededCount");
            if c < 0 {
                errs.push(FieldError::invalid(&cp, c, IS_NEGATIVE_ERROR_MSG));
            }
            if c > completions {
                let msg = format!("must be less than or equal to {completions} (the number of specified completions)");
                errs.push(FieldError::invalid(&cp, c, msg));
            }
            if indexes.is_some() && c > total {
                let msg = format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)");
                errs.push(FieldError::invalid(&cp, c, msg));
            }
        }
    }
    errs
}

/// Upstream `validateIndexesFormat`: `1,3-5` style, ascending, below `completions`;
/// returns how many indexes the list names.
fn indexes_total(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut total = 0;
    let mut last: i64 = -1;
    for part in s.split(',') {
        let bounds: Vec<&str> = part.split('-').collect();
        let parse = |x: &str| {
            x.parse::<i64>().map_err(|_| {
                format!(
                    "cannot convert string to integer for index: {}",
                    kapi_machinery::validation::go_quote(x)
                )
            })
        };
        let (lo, hi) = match bounds.as_slice() {
            [one] => (parse(one)?, parse(one)?),
            [a, b] => (parse(a)?, parse(b)?),
            _ => return Err(format!("the fragment {:?} violates the requirement that an index interval can have at most two parts separated by '-'", part)),
        };
        if hi >= completions {
            return Err(format!("too large index: {hi}"));
        }
        if lo <= last {
            return Err(format!(
                "non-increasing order, previous: {last}, current: {lo}"
            ));
        }
        if hi < lo {
            return Err(format!(
                "non-increasing order, previous: {lo}, current: {hi}"
            ));
        }
        total += hi - lo + 1;
        last = hi;
    }
    Ok(total)
}

pub fn validate_pod_replacement_policy(spec: &Value, path: &FieldPath) -> ErrorList {
    let Some(policy) = present(spec, "/podReplacementPolicy").and_then(Value::as_str) else {
        return Vec::new();
    };
    if present(spec, "/podFailurePolicy").is_some() {
        if policy != "Failed" {
            return vec![FieldError::not_supported(path, policy, &["Failed"])];
        }
    } else if policy != "Failed" && policy != "TerminatingOrFailed" {
        return vec![FieldError::not_supported(
            path,
            policy,
            &["Failed", "TerminatingOrFailed"],
        )];
    }
    Vec::new()
}

/// Upstream `IsDomainPrefixedPath` (`acme.io/foo`).
pub fn is_domain_prefixed_path(path: &FieldPath, value: &str) -> ErrorList {
    if value.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: ErrorList = is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| FieldError::invalid(path, host, m))
        .collect();
    let path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(path_char) {
        let fmt = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";
        errs.push(FieldError::invalid(
            path,
            rest,
            regex_error("must be a valid path", fmt, &[]),
        ));
    }
    errs
}
