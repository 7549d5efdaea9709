//! Upstream's APF bootstrap ensurer (`pkg/registry/flowcontrol/ensurer`,
//! `rest/storage_flowcontrol.go`): keeps the bootstrap FlowSchemas and
//! PriorityLevelConfigurations in the store, as the config producer
//! (`api-priority-and-fairness-config-producer-v1`).
//!
//! - A missing bootstrap object, mandatory (`exempt`, `catch-all`) or
//!   suggested, is always created again.
//! - A mandatory object's spec is forced back to the bootstrap spec whenever
//!   it differs, and its `apf.kubernetes.io/autoupdate-spec` annotation set
//!   to `"true"`.
//! - A suggested object is updated only when the annotation says `true`; when
//!   the annotation is missing or not a boolean, only while the object is
//!   unedited (`metadata.generation` 1); the annotation is then written with
//!   the decision, so an operator's edit (generation 2 and up) is kept and
//!   marked `"false"`.
//! - The exempt level's `nominalConcurrencyShares` and `lendablePercent` are
//!   the operator's to set.
//! - An object annotated `autoupdate-spec: "true"` whose name is not a
//!   bootstrap name is deleted (a bootstrap object of an older release;
//!   upstream's `RemoveUnwantedObjects`).
//!
//! Runs at start, every minute ([`PERIOD`]), and for one object when the
//! controller sees it deleted or changed (upstream only has the loop; the end
//! state is the same, reached sooner).

use std::time::Duration;

use kapi_registry::store::options::{DeleteOptions, ListOptions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use kapi_registry::apis::Entry;

pub const PERIOD: Duration = Duration::from_secs(60);
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
}

fn is_mandatory(name: &str) -> bool {
    name == "exempt" || name == "catch-all"
}

/// The bootstrap objects of `entry`'s resource.
fn bootstrap_objects(entry: &Entry) -> Vec<Value> {
    use kapi_resources::flowcontrol::bootstrap;
    if entry.def.resource == "flowschemas" {
        bootstrap::flow_schemas()
    } else {
        bootstrap::priority_levels()
    }
}

/// Whether `current`'s spec is what the (defaulted) bootstrap object says,
/// leaving the exempt level's two operator fields out.
fn spec_equalish(entry: &Entry, bootstrap: &Value, current: &Value) -> bool {
    let mut expected = bootstrap.clone();
    entry.def.strategy.default(&mut expected);
    let is_level = entry.def.resource == "prioritylevelconfigurations";
    if is_level && kapi_registry::meta::name(bootstrap) == "exempt" {
        let Some(actual) = current.pointer("/spec/exempt") else {
            return false;
        };
        if let Some(e) = expected
            .pointer_mut("/spec/exempt")
            .and_then(Value::as_object_mut)
        {
            for key in ["nominalConcurrencyShares", "lendablePercent"] {
                match actual.get(key) {
                    Some(v) => e.insert(key.into(), v.clone()),
                    None => e.remove(key),
                };
            }
        }
    }
    expected.get("spec") == current.get("spec")
}

/// The revised object when `current` needs an update (upstream's
/// `ReviseIfNeeded`), `None` otherwise.
pub fn revise(entry: &Entry, current: &Value, bootstrap: &Value) -> Option<Value> {
    let mandatory = is_mandatory(kapi_registry::meta::name(bootstrap));
    let auto = mandatory
        || match annotation(current).and_then(parse_bool) {
            Some(b) => b,
            None => {
                current
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    == Some(1)
            }
        };
    let annotate = annotation(current).and_then(parse_bool) != Some(auto);
    let respec = auto && !spec_equalish(entry, bootstrap, current);
    if !annotate && !respec {
        return None;
    }
    let mut out = current.clone();
    if respec {
        out["spec"] = bootstrap.get("spec").cloned().unwrap_or(Value::Null);
    }
    if annotate {
        let meta = &mut out["metadata"];
        if !meta.get("annotations").is_some_and(Value::is_object) {
            meta["annotations"] = serde_json::json!({});
        }
        meta["annotations"][AUTOUPDATE] = Value::String(auto.to_string());
    }
    Some(out)
}

fn producer() -> WriteOptions {
    WriteOptions {
        field_manager: Some(PRODUCER.into()),
        ..WriteOptions::default()
    }
}

/// Delete `obj` if it is marked for auto-update but no longer a bootstrap
/// object.
async fn remove_if_unwanted(entry: &Entry, obj: &Value) {
    if annotation(obj).and_then(parse_bool) != Some(true) {
        return;
    }
    let name = kapi_registry::meta::name(obj);
    let deleted = entry
        .store
        .delete(None, name, &DeleteOptions::default())
        .await;
    match deleted {
        Ok(_) => tracing::info!(%name, "deleted unwanted APF object"),
        Err(e) if e.is_not_found() => {}
        Err(e) => tracing::warn!(%name, error = %e, "unwanted APF object not deleted"),
    }
}

/// Ensure the object `name` of `entry`'s resource: a bootstrap object as
/// above; any other is deleted when it is marked for auto-update.
pub async fn ensure_one(entry: &Entry, name: &str) {
    let Some(boot) = bootstrap_objects(entry)
        .into_iter()
        .find(|o| kapi_registry::meta::name(o) == name)
    else {
        if let Ok(obj) = entry.store.get(None, name, None).await {
            remove_if_unwanted(entry, &obj).await;
        }
        return;
    };
    let resource = &entry.def.resource;
    match entry.store.get(None, name, None).await {
        Err(e) if e.is_not_found() => match entry.store.create(boot, &producer()).await {
            Ok(_) => tracing::info!(%name, %resource, "created bootstrap APF object"),
            Err(e) if e.is_already_exists() => {}
            Err(e) => tracing::warn!(%name, error = %e, "bootstrap APF object not created"),
        },
        Err(e) => tracing::warn!(%name, error = %e, "bootstrap APF object not read"),
        Ok(current) => {
            if revise(entry, &current, &boot).is_none() {
                return;
            }
            let result = entry
                .store
                .update_with(None, name, UpdateTarget::Main, &producer(), false, |cur| {
                    let cur = cur.cloned().unwrap_or_default();
                    Ok(revise(entry, &cur, &boot).unwrap_or(cur))
                })
                .await;
            match result {
                Ok(_) => tracing::info!(%name, %resource, "updated bootstrap APF object"),
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => tracing::warn!(%name, error = %e, "bootstrap APF object not updated"),
            }
        }
    }
}

/// Ensure every bootstrap object of `entry`'s resource, then delete the
/// auto-updated objects that are no longer bootstrap objects.
pub async fn ensure_all(entry: &Entry) {
    let boots = bootstrap_objects(entry);
    // Suggested first, then mandatory, as upstream.
    let mut names: Vec<String> = boots
        .iter()
        .map(|o| kapi_registry::meta::name(o).to_owned())
        .collect();
    names.sort_by_key(|n| is_mandatory(n));
    for name in &names {
        ensure_one(entry, name).await;
    }
    let Ok(list) = entry.store.list(None, &ListOptions::default()).await else {
        return;
    };
    for obj in &list.items {
        let name = kapi_registry::meta::name(obj);
        if !names.iter().any(|n| n == name) {
            remove_if_unwanted(entry, obj).await;
        }
    }
}
