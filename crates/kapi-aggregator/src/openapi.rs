//! What extension servers publish in OpenAPI, as kube-aggregator's OpenAPI
//! aggregation: `/openapi/v2` is the local document with each remote
//! server's paths and definitions added (local ones win a name clash);
//! `/openapi/v3` lists `apis/<group>/<version>` of each remote group-version
//! whose document was fetched (`available.rs`), served from that copy with its
//! own hash.

use serde_json::{json, Value};

use super::Remote;
use crate::Aggregator;

/// The v3 index with the remote group-versions' documents added.
pub fn extend_v3_index(agg: &Aggregator, index: &mut Value) {
    let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for r in agg.remotes() {
        if let Some((_, hash)) = &r.openapi_v3 {
            let key = format!("apis/{}/{}", r.group, r.version);
            let url = format!("/openapi/v3/{key}?hash={hash}");
            paths.insert(key, json!({"serverRelativeURL": url}));
        }
    }
}

/// The v3 document of a remote group-version (`apis/<group>/<version>`).
pub fn v3_document(agg: &Aggregator, path: &str) -> Option<(bytes::Bytes, String)> {
    let key = path.trim_matches('/');
    let rest = key.strip_prefix("apis/")?;
    let (group, version) = rest.split_once('/')?;
    agg.remote(group, version)?.openapi_v3
}

/// The local v2 document with what remote servers publish merged in (paths
/// and definitions the local document does not have), or `None` when no
/// remote server published one.
pub fn merged_v2(agg: &Aggregator, local: &[u8]) -> Option<Vec<u8>> {
    let remotes: Vec<Remote> = agg
        .remotes()
        .into_iter()
        .filter(|r| r.openapi_v2.is_some())
        .collect();
    if remotes.is_empty() {
        return None;
    }
    let mut doc: Value = serde_json::from_slice(local).ok()?;
    for r in &remotes {
        let remote = r.openapi_v2.as_deref().expect("filtered");
        for section in ["paths", "definitions"] {
            let Some(from) = remote.get(section).and_then(Value::as_object) else {
                continue;
            };
            let into = doc
                .as_object_mut()?
                .entry(section)
                .or_insert_with(|| json!({}));
            let Some(into) = into.as_object_mut() else {
                continue;
            };
            for (k, v) in from {
                if !into.contains_key(k) {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
    }
    serde_json::to_vec(&doc).ok()
}
