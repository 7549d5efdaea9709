//! NamespaceLifecycle (upstream `plugin/namespace/lifecycle`): nothing is
//! created or changed in a namespace that does not exist (404 on the
//! namespace), nothing is created in one being terminated (403 with the
//! `NamespaceTerminating` cause), and the immortal namespaces (`default`,
//! `kube-system`, `kube-public`) may not be deleted. As upstream's, it works
//! in the mutating phase only (so a create into a missing namespace is 404
//! before any other plugin looks at it).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, Cause, GroupResource};
use kapi_registry::cache::CachedObject;
use kapi_registry::meta;
use kapi_registry::store::Store;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

/// Upstream's immortal namespaces.
pub const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

/// How many namespaces' answers [`Seen`] keeps.
const SEEN: usize = 8;

/// The namespaces read last, with whether each was being terminated: a
/// cached object never changes (a write replaces it), so its answer holds for
/// as long as the cache serves that same object.
#[derive(Default)]
pub(crate) struct Seen(Mutex<Vec<(Arc<CachedObject>, bool)>>);

impl Seen {
    fn get(&self, obj: &Arc<CachedObject>) -> Option<bool> {
        let seen = self.0.lock().expect("seen lock");
        seen.iter()
            .find(|(o, _)| Arc::ptr_eq(o, obj))
            .map(|(_, t)| *t)
    }

    fn put(&self, obj: Arc<CachedObject>, terminating: bool) {
        let mut seen = self.0.lock().expect("seen lock");
        seen.retain(|(o, _)| o.kv.key != obj.kv.key);
        if seen.len() == SEEN {
            seen.remove(0);
        }
        seen.push((obj, terminating));
    }
}

/// Whether namespace `name` is being terminated (being deleted, or in phase
/// `Terminating`); not found when it does not exist. Read from the watch cache
/// once it has caught up with storage (the consistency of a read from
/// storage, as before), and only the two fields it needs of the cached
/// JSON, once per cached object (`seen`); from storage when the cache cannot
/// answer.
async fn terminating(store: &Store, name: &str, seen: &Seen) -> Result<bool, ApiError> {
    #[derive(Deserialize, Default)]
    struct Namespace {
        #[serde(default)]
        metadata: Metadata,
        #[serde(default)]
        status: Status,
    }
    #[derive(Deserialize, Default)]
    struct Metadata {
        #[serde(rename = "deletionTimestamp", default)]
        deletion_timestamp: Option<IgnoredAny>,
    }
    #[derive(Deserialize, Default)]
    struct Status {
        #[serde(default)]
        phase: Option<String>,
    }
    if let Some(obj) = store.get_cached_object_latest(None, name).await? {
        if let Some(terminating) = seen.get(&obj) {
            return Ok(terminating);
        }
        if let Ok(ns) = serde_json::from_slice::<Namespace>(&obj.kv.value) {
            let terminating = ns.metadata.deletion_timestamp.is_some()
                || ns.status.phase.as_deref() == Some("Terminating");
            seen.put(obj, terminating);
            return Ok(terminating);
        }
    }
    let ns = store.get(None, name, None).await?;
    Ok(meta::is_deleting(&ns)
        || ns.pointer("/status/phase").and_then(|p| p.as_str()) == Some("Terminating"))
}

pub struct Lifecycle {
    pub(crate) cx: Context,
    pub(crate) seen: Seen,
}

fn is_namespace(a: &Attributes) -> bool {
    a.group.is_empty() && a.resource == "namespaces"
}

/// Access reviews name a namespace without writing into it.
fn is_access_review(a: &Attributes) -> bool {
    a.group == "authorization.k8s.io" && a.resource == "localsubjectaccessreviews"
}

#[async_trait]
impl Plugin for Lifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }
    fn handles(&self, op: Operation) -> bool {
        op != Operation::Connect
    }
    // Upstream's plugin is a mutating one only: it runs in the mutating
    // phase, before ServiceAccount and the webhooks, and not again after them.
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if a.operation == Operation::Delete
            && is_namespace(a)
            && IMMORTAL.contains(&a.name.as_str())
        {
            return Err(ApiError::forbidden(
                a.group_resource(),
                &a.name,
                "this namespace may not be deleted",
            ));
        }
        if a.namespace.is_empty() || is_namespace(a) || a.operation == Operation::Delete {
            return Ok(());
        }
        if is_access_review(a) {
            return Ok(());
        }
        let Some(namespaces) = cx.apis.lookup("", "v1", "namespaces") else {
            return Ok(());
        };
        let terminating = match terminating(&namespaces.store, &a.namespace, &self.seen).await {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                return Err(ApiError::not_found(
                    GroupResource::new("", "namespaces"),
                    &a.namespace,
                ))
            }
            Err(e) => return Err(e),
        };
        if a.operation == Operation::Create && terminating {
            let msg = format!(
                "unable to create new content in namespace {} because it is being terminated",
                a.namespace
            );
            let mut err = a.forbidden(&msg);
            if let Some(d) = err.details.as_mut() {
                d.causes.push(Cause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {} is being terminated", a.namespace),
                    field: "metadata.namespace".into(),
                });
            }
            return Err(err);
        }
        Ok(())
    }
}
