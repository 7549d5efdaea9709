//! CronJobs: upstream's defaults (`SetDefaults_CronJob`: `Allow`, not suspended,
//! history limits 3 and 1; the job template's pod template defaulted as any),
//! `ValidateCronJobCreate` / `ValidateCronJobUpdate` (schedule syntax, `TZ` only via
//! `timeZone`, the job template's spec rules, no selector in a template, names of
//! at most 52 characters on create), and the
//! `NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE` table.
//!
//! Known gap: a well-formed `timeZone` is looked up in the host's time-zone database
//! (`/usr/share/zoneinfo`); kube-apiserver embeds its own, so on a host without one
//! an unknown but well-formed zone is accepted.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, IS_NEGATIVE_ERROR_MSG};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::cron::parse_standard;
use super::job::JOB_SELECTOR_DOC;
use super::{default_job_spec_parts, validate_job_spec};
use crate::apps::container_cells;
use crate::core::podspec::default_template_metadata;
use crate::core::table::{
    age_cell, age_column, int_column, name_cell, name_column, since, string_column, CONTAINERS_DOC,
    IMAGES_DOC,
};
use crate::core::util::{arr_at, child_obj, i64_at, present, set_default, str_at};

pub struct CronJobStrategy;

const POLICIES: [&str; 3] = ["Allow", "Forbid", "Replace"];
/// The controller appends an 11-character suffix to job names (at most 63).
const MAX_NAME: usize = 52;

fn validate_schedule(spec: &Value, old_spec: Option<&Value>, path: &FieldPath) -> ErrorList {
    let schedule = str_at(spec, "/schedule");
    if schedule.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = ErrorList::new();
    if let Err(e) = parse_standard(schedule) {
        errs.push(FieldError::invalid(path, schedule, e));
    }
    let allow_tz = old_spec.is_some_and(|o| str_at(o, "/schedule").contains("TZ"));
    if schedule.contains("TZ") {
        if !allow_tz {
            errs.push(FieldError::invalid(
                path,
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        } else if present(spec, "/timeZone").is_some() {
            errs.push(FieldError::invalid(
                path,
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        }
    }
    errs
}

/// Upstream `validateTimeZone`, without the time-zone database lookup.
fn validate_time_zone(tz: &str, path: &FieldPath) -> ErrorList {
    if tz.is_empty() {
        return vec![FieldError::invalid(
            path,
            tz,
            "timeZone must be nil or non-empty string",
        )];
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_+".contains(c))
    };
    if !tz.split('/').all(part_ok) {
        return vec![FieldError::invalid(
            path,
            tz,
            format!("unknown time zone {tz}"),
        )];
    }
    if tz.eq_ignore_ascii_case("Local") {
        return vec![FieldError::invalid(
            path,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        )];
    }
    if !zone_known(ZONEINFO, tz) {
        // Go's `time.LoadLocation` error.
        return vec![FieldError::invalid(
            path,
            tz,
            format!("unknown time zone {tz}"),
        )];
    }
    Vec::new()
}

const ZONEINFO: &str = "/usr/share/zoneinfo";

/// Whether `tz` (already checked for upstream's name syntax, so it cannot leave the
/// database directory) names a zone file under `db`; true when there is no database.
fn zone_known(db: &str, tz: &str) -> bool {
    let db = std::path::Path::new(db);
    if !db.is_dir() {
        return true;
    }
    // UTC is built into Go's time package.
    tz == "UTC" || db.join(tz).is_file()
}

/// Upstream `validateCronJobSpec`.
fn validate_spec(obj: &Value, old: Option<&Value>) -> ErrorList {
    let path = FieldPath::new("spec");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.and_then(|o| o.get("spec"));
    let mut errs = validate_schedule(spec, old_spec, &path.child("schedule"));
    for field in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        if let Some(v) = i64_at(spec, &format!("/{field}")).filter(|v| *v < 0) {
            errs.push(FieldError::invalid(
                &path.child(field),
                v,
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
    }
    let tz = present(spec, "/timeZone");
    if old_spec.and_then(|o| present(o, "/timeZone")) != tz || old.is_none() {
        if let Some(tz) = tz {
            errs.extend(validate_time_zone(
                tz.as_str().unwrap_or(""),
                &path.child("timeZone"),
            ));
        }
    }
    let policy_path = path.child("concurrencyPolicy");
    match str_at(spec, "/concurrencyPolicy") {
        "" => errs.push(FieldError::required(&policy_path, "")),
        p if !POLICIES.contains(&p) => {
            errs.push(FieldError::not_supported(&policy_path, p, &POLICIES))
        }
        _ => {}
    }
    errs.extend(validate_job_template(spec, &path.child("jobTemplate")));
    errs
}

/// Upstream `ValidateJobTemplateSpec`: the job spec rules, and no selector.
fn validate_job_template(spec: &Value, path: &FieldPath) -> ErrorList {
    let job_spec = spec.pointer("/jobTemplate/spec").unwrap_or(&Value::Null);
    let spec_path = path.child("spec");
    let mut errs = validate_job_spec(job_spec, &spec_path);
    if let Some(selector) = present(job_spec, "/selector") {
        errs.push(FieldError::invalid(
            &spec_path.child("selector"),
            selector.clone(),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.pointer("/manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::not_supported(
            &spec_path.child("manualSelector"),
            true,
            &["nil", "false"],
        ));
    }
    errs
}

impl Strategy for CronJobStrategy {
    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({}));
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if str_at(spec, "/concurrencyPolicy").is_empty() {
            spec["concurrencyPolicy"] = json!("Allow");
        }
        set_default(spec, "suspend", json!(false));
        set_default(spec, "successfulJobsHistoryLimit", json!(3));
        set_default(spec, "failedJobsHistoryLimit", json!(1));
        // The job template's and its pod template's metadata, as Go writes them.
        if let Some(job_template) = child_obj(spec, "jobTemplate") {
            default_template_metadata(job_template);
            if let Some(job_spec) = child_obj(job_template, "spec") {
                if let Some(template) = job_spec.get_mut("template").filter(|t| t.is_object()) {
                    default_template_metadata(template);
                }
                default_job_spec_parts(job_spec);
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = validate_spec(obj, None);
        let name = str_at(obj, "/metadata/name");
        if name.len() > MAX_NAME {
            errs.push(FieldError::invalid(
                &FieldPath::new("metadata").child("name"),
                name,
                "must be no more than 52 characters",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        validate_spec(new, Some(old))
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut w: Vec<String> =
            crate::core::pod_warnings::name_warning(obj, "Pod names and hostnames")
                .into_iter()
                .collect();
        w.extend(super::job::job_spec_warnings(
            obj.pointer("/spec/jobTemplate/spec"),
            &FieldPath::new("spec").child("jobTemplate").child("spec"),
        ));
        w
    }

    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        if !crate::core::workload_warnings::generation_moved(new, old) {
            return Vec::new();
        }
        super::job::job_spec_warnings(
            new.pointer("/spec/jobTemplate/spec"),
            &FieldPath::new("spec").child("jobTemplate").child("spec"),
        )
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
            string_column("Timezone", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
            Column::new("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false."),
            int_column("Active", "A list of pointers to currently running jobs."),
            string_column("Last Schedule", "Information when was the last time the job was successfully scheduled."),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", JOB_SELECTOR_DOC).wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let template = obj.pointer("/spec/jobTemplate").unwrap_or(&Value::Null);
        let (names, images) = container_cells(template);
        let last = match present(obj, "/status/lastScheduleTime") {
            Some(_) => since(obj, "/status/lastScheduleTime"),
            None => "<none>".to_string(),
        };
        // Upstream `printBoolPtr`: a string cell under a boolean column.
        let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
            Some(true) => json!("True"),
            Some(false) => json!("False"),
            None => json!("<unset>"),
        };
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/schedule")),
            json!(present(obj, "/spec/timeZone")
                .and_then(Value::as_str)
                .unwrap_or("<none>")),
            suspend,
            json!(arr_at(obj, "/status/active").len()),
            json!(last),
            age_cell(obj),
            names,
            images,
            crate::apps::format_selector(template),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_looked_up_when_there_is_a_database() {
        let dir = std::env::temp_dir().join(format!("kapi-zoneinfo-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Europe")).unwrap();
        std::fs::write(dir.join("Europe/Berlin"), b"TZif").unwrap();
        let db = dir.to_str().unwrap();
        assert!(zone_known(db, "Europe/Berlin"));
        assert!(zone_known(db, "UTC"));
        assert!(!zone_known(db, "Mars/Olympus"));
        assert!(!zone_known(db, "Europe"));
        assert!(zone_known("/nonexistent-zoneinfo", "Mars/Olympus"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn cj() -> Value {
        let mut cj = json!({
            "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}
        });
        CronJobStrategy.default(&mut cj);
        cj
    }

    fn messages(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_and_valid() {
        let c = cj();
        assert_eq!(c["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(c["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(c["spec"]["failedJobsHistoryLimit"], 1);
        assert_eq!(c["spec"]["suspend"], false);
        // The job template gets pod defaults but not a Job's own defaults.
        let job_spec = &c["spec"]["jobTemplate"]["spec"];
        assert_eq!(job_spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert!(job_spec.get("backoffLimit").is_none());
        assert!(
            CronJobStrategy.validate(&c).is_empty(),
            "{:?}",
            CronJobStrategy.validate(&c)
        );
    }

    #[test]
    fn schedule_policy_and_name_errors() {
        let mut c = cj();
        c["spec"]["schedule"] = json!("61 * * * *");
        c["spec"]["concurrencyPolicy"] = json!("Sometimes");
        c["metadata"]["name"] = json!("a".repeat(53));
        assert_eq!(
            messages(CronJobStrategy.validate(&c)),
            vec![
                "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61".to_string(),
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"".to_string(),
                format!("metadata.name: Invalid value: \"{}\": must be no more than 52 characters", "a".repeat(53)),
            ]
        );
        // The length rule is create-only.
        let old = cj();
        let mut long = old.clone();
        long["metadata"]["name"] = json!("a".repeat(53));
        assert!(CronJobStrategy.validate_update(&long, &old).is_empty());
    }

    #[test]
    fn tz_and_template_rules() {
        let mut c = cj();
        c["spec"]["schedule"] = json!("TZ=UTC 0 * * * *");
        c["spec"]["timeZone"] = json!("Local");
        c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        let got = messages(CronJobStrategy.validate(&c));
        assert_eq!(got, vec![
            "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
        ]);
    }

    #[test]
    fn table_cells() {
        let mut c = cj();
        c["status"] = json!({"active": [{"name": "j1"}]});
        let cells = CronJobStrategy.cells(&c);
        assert_eq!(
            cells[1..6],
            [
                json!("0 2 * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("<none>")
            ]
        );
        assert_eq!(cells[7], "c");
        assert_eq!(CronJobStrategy.columns().len(), cells.len());
    }
}
