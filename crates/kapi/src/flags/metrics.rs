//! The metrics flags as upstream's component-base reads and validates them:
//! `--disabled-metrics` (fully qualified names), `--allow-metric-labels` and
//! `--allow-metric-labels-manifest` (`metric,label` → allowed values; the
//! flag wins over the file), `--show-hidden-metrics-for-version` (only the
//! previous minor version; it shows the metrics upstream hides for having
//! been deprecated long enough, here `apiserver_storage_db_total_size_in_bytes`),
//! `--etcd-count-metric-poll-period` (how often object counts are sampled; 0
//! turns `apiserver_storage_objects` off), `--etcd-db-metric-poll-interval`
//! (how often each storage member's database size is asked for; 0 turns the
//! polling off).

use std::collections::BTreeMap;

use kapi_http::metrics::Policy;

use super::Flags;

/// The minor version `--show-hidden-metrics-for-version` may name.
const PREVIOUS_MINOR: &str = "1.32";

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `key` is `metricName,labelName`.
fn is_mapping_key(key: &str) -> bool {
    match key.split_once(',') {
        Some((m, l)) => is_metric_name(m) && is_label_name(l),
        None => false,
    }
}

fn check_mapping(mapping: &BTreeMap<String, String>) -> Result<(), String> {
    if mapping.keys().all(|k| is_mapping_key(k)) {
        return Ok(());
    }
    Err("--allow-metric-labels must have a list of kv pair with format `metricName,labelName=labelValue, labelValue,...`".into())
}

/// The metrics policy the flags describe.
pub fn policy(f: &Flags) -> Result<Policy, String> {
    let hidden = f.string("show-hidden-metrics-for-version");
    if !hidden.is_empty() && hidden != PREVIOUS_MINOR {
        return Err(format!("--show-hidden-metrics-for-version must be omitted or have the value '{PREVIOUS_MINOR}'. Only the previous minor version is allowed"));
    }
    let mut policy = Policy {
        show_hidden: !hidden.is_empty(),
        ..Policy::default()
    };
    let period = f.duration("etcd-count-metric-poll-period")?;
    policy.count_poll = (!period.is_zero()).then_some(period);
    let db = f.duration("etcd-db-metric-poll-interval")?;
    policy.db_poll = (!db.is_zero()).then_some(db);
    for name in f.list_nonempty("disabled-metrics") {
        if !is_metric_name(&name) {
            return Err(format!("--disabled-metrics must be fully qualified metric names matching \"^[a-zA-Z_:][a-zA-Z0-9_:]*$\", got {name:?}"));
        }
        policy.disabled.insert(name);
    }
    let given = f.string_map("allow-metric-labels");
    check_mapping(&given)?;
    if f.given("allow-metric-labels") {
        policy.allow_labels(&given);
    } else if let Some(path) = f.opt_path("allow-metric-labels-manifest") {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("failed to read allow list manifest: {e}"))?;
        let mapping: BTreeMap<String, String> = serde_saphyr::from_str(&text)
            .map_err(|e| format!("failed to parse allow list manifest: {e}"))?;
        check_mapping(&mapping)
            .map_err(|e| format!("invalid allow list mapping in manifest: {e}"))?;
        policy.allow_labels(&mapping);
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_keys_as_upstream_matches_them() {
        assert!(is_metric_name("apiserver_request_total"));
        assert!(is_metric_name("a:b_c9"));
        assert!(!is_metric_name("9lives") && !is_metric_name("") && !is_metric_name("a-b"));
        assert!(is_mapping_key("apiserver_request_total,code"));
        assert!(!is_mapping_key("apiserver_request_total"));
        assert!(!is_mapping_key("apiserver_request_total,co-de"));
    }
}
