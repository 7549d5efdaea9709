//! From a definition to what the server installs: one `ResourceDef` per served
//! version, all sharing one key prefix (upstream's `/<group>/<plural>`, each
//! added to the watch cache when installed) and, when there are
//! several versions or the schemas have defaults, one [`CrdConversion`]
//! (to the storage version; defaults on read).
//!
//! Names come from `status.acceptedNames` (upstream serves the accepted names,
//! which the naming controller copies from the spec once they conflict with
//! nothing), the plural from the spec.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kapi_registry::{Conversion, Origin, ResourceDef, Subresource, Verb};
use serde_json::Value;

use super::conversion::{CrdConversion, ReviewClient};
use super::custom::{CustomStrategy, SinceFn};
use super::jsonpath::JsonPath;
use super::schema::Schema;
use super::types::{Crd, Version};

/// A served version with its compiled schema (for OpenAPI and apply).
pub struct Served {
    pub def: ResourceDef,
    pub schema: Option<Arc<Schema>>,
}

/// The resources `crd` serves, one per served version; `terminating` (shared
/// by them) refuses creates while the definition is being deleted; `webhook`
/// is the client of the definition's conversion webhook (`strategy: Webhook`).
pub fn served(
    crd_obj: &Value,
    since: SinceFn,
    terminating: Arc<AtomicBool>,
    webhook: Option<Arc<dyn ReviewClient>>,
) -> Vec<Served> {
    let crd = Crd::parse(crd_obj);
    let Some(storage) = crd.storage_version() else {
        return Vec::new();
    };
    let group = crd.spec.group.clone();
    let schemas: HashMap<String, Arc<Schema>> = crd
        .spec
        .versions
        .iter()
        .filter_map(|v| {
            let raw = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
            Some((v.name.clone(), Arc::new(Schema::new(raw).ok()?)))
        })
        .collect();
    let conversion = conversion(&crd, &storage.name, &schemas, webhook);
    let names = if crd.status.accepted_names.kind.is_empty() {
        crd.spec.names.clone()
    } else {
        crd.status.accepted_names.clone()
    };
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| {
            let schema = schemas.get(&v.name).cloned();
            let strategy = CustomStrategy::new(
                schema.clone(),
                v.additional_printer_columns.clone(),
                v.selectable_fields
                    .iter()
                    .map(|f| f.json_path.trim_start_matches('.').to_owned())
                    .collect(),
                warning(&group, &names.kind, v),
                since,
                terminating.clone(),
            );
            let def = ResourceDef {
                group: group.clone(),
                version: v.name.clone(),
                resource: crd.spec.names.plural.clone(),
                singular: names.singular.clone(),
                kind: names.kind.clone(),
                list_kind: names.list_kind.clone(),
                namespaced: crd.namespaced(),
                verbs: Verb::ALL.to_vec(),
                subresources: subresources(v),
                short_names: names.short_names.clone(),
                categories: names.categories.clone(),
                strategy: Arc::new(strategy),
                key_prefix: format!("/{group}/{}", crd.spec.names.plural),
                conversion: conversion.clone(),
                // Upstream never serves custom resources as protobuf.
                protobuf: false,
                origin: Origin::Custom,
            };
            Served { def, schema }
        })
        .collect()
}

/// The definition's conversion: needed with several versions (to the storage
/// version, through the webhook when there is one) or when a schema has
/// defaults (applied on read).
fn conversion(
    crd: &Crd,
    storage: &str,
    schemas: &HashMap<String, Arc<Schema>>,
    webhook: Option<Arc<dyn ReviewClient>>,
) -> Option<Arc<dyn Conversion>> {
    let several = crd.spec.versions.len() > 1;
    if !several && !schemas.values().any(|s| has_defaults(s.raw())) {
        return None;
    }
    let storage_av = format!("{}/{storage}", crd.spec.group);
    let mut conv = CrdConversion::new(storage_av, schemas.clone());
    let spec = crd.spec.conversion.as_ref();
    if let (true, Some(client), Some(spec)) = (several, webhook, spec) {
        if spec.strategy == "Webhook" {
            let versions = spec
                .webhook
                .as_ref()
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            conv = conv.with_webhook(client, versions);
        }
    }
    Some(Arc::new(conv))
}

/// Whether a schema declares a default anywhere.
fn has_defaults(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("default") || m.values().any(has_defaults),
        Value::Array(a) => a.iter().any(has_defaults),
        _ => false,
    }
}

/// Upstream's default: `<group>/<version> <Kind> is deprecated`.
fn warning(group: &str, kind: &str, v: &Version) -> Option<String> {
    if !v.deprecated {
        return None;
    }
    Some(
        v.deprecation_warning
            .clone()
            .unwrap_or_else(|| format!("{group}/{} {kind} is deprecated", v.name)),
    )
}

fn subresources(v: &Version) -> Vec<Subresource> {
    let Some(subs) = &v.subresources else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if subs.status.is_some() {
        out.push(Subresource::Status);
    }
    if let Some(scale) = &subs.scale {
        let pointer = |p: &str| {
            JsonPath::parse(p)
                .ok()
                .and_then(|j| j.pointer())
                .unwrap_or_default()
        };
        out.push(Subresource::Scale {
            spec_replicas: pointer(&scale.spec_replicas_path).into(),
            status_replicas: pointer(&scale.status_replicas_path).into(),
            label_selector: scale
                .label_selector_path
                .as_deref()
                .map(pointer)
                .unwrap_or_default()
                .into(),
        });
    }
    out
}
