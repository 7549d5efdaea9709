//! The `batch/v1` group: jobs and cronjobs.
//!
//! This file holds what both kinds share: upstream `validateJobSpec` (the rules a
//! Job's spec and a CronJob's `jobTemplate.spec` both obey — counts, completion mode,
//! pod failure / success / replacement policies, the pod template and its restart
//! policy) and the job defaults that also apply inside a job template.
//!
//! Invariants: pod-template defaulting and validation are `core::podspec*`; label
//! selector rules are `apps`' (`ValidateLabelSelector`); messages and field paths
//! are upstream's `pkg/apis/batch/validation`.
//!
//! Where to look next: `job.rs` (selector generation, immutability, the table),
//! `cronjob.rs`, `cron.rs` (schedule syntax).

pub mod cron;
pub mod cronjob;
pub mod job;
pub mod policies;

pub use cronjob::CronJobStrategy;
pub use job::JobStrategy;

use kapi_machinery::validation::{
    validate_labels, ErrorList, FieldError, FieldPath, IS_NEGATIVE_ERROR_MSG,
};
use serde_json::Value;

use crate::apps::validate_requirement;
use crate::core::podspec::default_pod_template;
use crate::core::podspec_validation::validate_pod_template_spec;
use crate::core::util::{arr_at, child_obj, i64_at, present, str_at};

const MAX_PARALLELISM_INDEXED: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_MANAGED_BY_LENGTH: usize = 63;

/// Defaults every job spec gets, in a Job or a CronJob's job template: the pod
/// template's and the pod-failure-policy patterns' (`status: True`).
pub fn default_job_spec_parts(spec: &mut Value) {
    if let Some(template) = child_obj(spec, "template") {
        default_pod_template(template);
    }
    if let Some(rules) = spec
        .pointer_mut("/podFailurePolicy/rules")
        .and_then(Value::as_array_mut)
    {
        for rule in rules {
            crate::core::util::for_each_item(rule, "onPodConditions", |p| {
                crate::core::util::set_default_str(p, "status", "True");
            });
        }
    }
}

/// Upstream `ValidateNonnegativeField` on an optional member of `spec`.
fn nonnegative(spec: &Value, field: &str, path: &FieldPath) -> ErrorList {
    match i64_at(spec, &format!("/{field}")) {
        Some(v) if v < 0 => vec![FieldError::invalid(
            &path.child(field),
            v,
            IS_NEGATIVE_ERROR_MSG,
        )],
        _ => Vec::new(),
    }
}

/// Upstream `validateJobSpec`: `spec` is the job spec, `path` its path.
pub fn validate_job_spec(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(nonnegative(spec, field, path));
    }
    let per_index = i64_at(spec, "/backoffLimitPerIndex");
    let max_failed = i64_at(spec, "/maxFailedIndexes");
    if max_failed.is_some() {
        errs.extend(nonnegative(spec, "maxFailedIndexes", path));
        if per_index.is_none() {
            errs.push(FieldError::required(
                &path.child("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(managed_by) = present(spec, "/managedBy").and_then(Value::as_str) {
        let p = path.child("managedBy");
        errs.extend(policies::is_domain_prefixed_path(&p, managed_by));
        if managed_by.len() > MAX_MANAGED_BY_LENGTH {
            errs.push(FieldError::too_long(&p, managed_by, MAX_MANAGED_BY_LENGTH));
        }
    }
    errs.extend(validate_completion_mode(spec, path));
    if present(spec, "/podFailurePolicy").is_some() {
        errs.extend(policies::validate_pod_failure_policy(
            spec,
            &path.child("podFailurePolicy"),
        ));
    }
    if let Some(success) = present(spec, "/successPolicy") {
        let p = path.child("successPolicy");
        if str_at(spec, "/completionMode") != "Indexed" {
            errs.push(FieldError::invalid(
                &p,
                success.clone(),
                "requires indexed completion mode",
            ));
        } else {
            errs.extend(policies::validate_success_policy(spec, &p));
        }
    }
    errs.extend(policies::validate_pod_replacement_policy(
        spec,
        &path.child("podReplacementPolicy"),
    ));
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(validate_pod_template_spec(
        template,
        &path.child("template"),
    ));
    errs.extend(validate_restart_policy(spec, path));
    errs
}

fn validate_completion_mode(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let completions = i64_at(spec, "/completions");
    let parallelism = i64_at(spec, "/parallelism");
    let per_index = i64_at(spec, "/backoffLimitPerIndex");
    let max_failed = i64_at(spec, "/maxFailedIndexes");
    let mode = present(spec, "/completionMode").and_then(Value::as_str);
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            errs.push(FieldError::not_supported(
                &path.child("completionMode"),
                mode,
                &["NonIndexed", "Indexed"],
            ));
        }
    }
    if mode == Some("Indexed") {
        if completions.is_none() {
            errs.push(FieldError::required(
                &path.child("completions"),
                "when completion mode is Indexed",
            ));
        }
        if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_INDEXED) {
            let msg = format!("must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed");
            errs.push(FieldError::invalid(&path.child("parallelism"), p, msg));
        }
        if let (Some(c), Some(m)) = (completions, max_failed) {
            if m > c {
                errs.push(FieldError::invalid(
                    &path.child("maxFailedIndexes"),
                    m,
                    "must be less than or equal to completions",
                ));
            }
        }
        if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
            let msg = format!("must be less than or equal to {MAX_FAILED_INDEXES}");
            errs.push(FieldError::invalid(&path.child("maxFailedIndexes"), m, msg));
        }
        if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
            errs.extend(high_completions(parallelism, max_failed, path));
        }
    } else {
        for (field, value) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(v) = value {
                errs.push(FieldError::invalid(
                    &path.child(field),
                    v,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    errs
}

fn high_completions(
    parallelism: Option<i64>,
    max_failed: Option<i64>,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let tail = format!(
        "when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    );
    if max_failed.is_none() {
        errs.push(FieldError::required(
            &path.child("maxFailedIndexes"),
            format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
        ));
    }
    if let Some(p) = parallelism.filter(|p| *p > PARALLELISM_LIMIT_HIGH_COMPLETIONS) {
        let msg =
            format!("must be less than or equal to {PARALLELISM_LIMIT_HIGH_COMPLETIONS} {tail}");
        errs.push(FieldError::invalid(&path.child("parallelism"), p, msg));
    }
    if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_HIGH_COMPLETIONS) {
        let msg =
            format!("must be less than or equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {tail}");
        errs.push(FieldError::invalid(&path.child("maxFailedIndexes"), m, msg));
    }
    errs
}

/// Jobs' pods may only restart `OnFailure` or `Never` (`Never` with a pod failure policy).
fn validate_restart_policy(spec: &Value, path: &FieldPath) -> ErrorList {
    let p = path.child("template").child("spec").child("restartPolicy");
    match str_at(spec, "/template/spec/restartPolicy") {
        "Always" | "" => vec![FieldError::required(
            &p,
            "valid values: \"OnFailure\", \"Never\"",
        )],
        "OnFailure" if present(spec, "/podFailurePolicy").is_some() => {
            vec![FieldError::invalid(
                &p,
                "OnFailure",
                "only \"Never\" is supported when podFailurePolicy is specified",
            )]
        }
        "OnFailure" | "Never" => Vec::new(),
        other => vec![FieldError::not_supported(
            &p,
            other,
            &["OnFailure", "Never"],
        )],
    }
}

/// Upstream `ValidateLabelSelector` (no emptiness rule: an empty selector is valid).
pub fn validate_label_selector(selector: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_labels(
        present(selector, "/matchLabels"),
        &path.child("matchLabels"),
    );
    for (i, req) in arr_at(selector, "/matchExpressions").iter().enumerate() {
        errs.extend(validate_requirement(
            req,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}
