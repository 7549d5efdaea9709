//! `metadata.managedFields` and server-side apply for one resource, as upstream's
//! field manager chain (`k8s.io/apimachinery/pkg/util/managedfields/internal`):
//!
//! - every write by a manager records, in an entry keyed by (manager,
//!   operation, apiVersion for updates, subresource), the fields it set; an
//!   update's entry takes the fields it changed from everyone else and its time
//!   moves only when it changed something;
//! - an apply merges the configuration into the live object through the schema
//!   (`kapi_machinery::apply`), fails with one conflict per field another
//!   manager owns unless forced, and removes fields its manager stopped applying
//!   when no one else owns them;
//! - objects whose managedFields are empty are not tracked by updates (an
//!   apply starts tracking, recording what already exists as
//!   `before-first-apply`); sending an empty list resets them;
//! - server-owned metadata is never owned, and fields the strategy resets
//!   (`status` on the main resource, everything but `status` on the status
//!   subresource) are ignored;
//! - at most ten update entries are kept; older ones merge into
//!   `ancient-changes`;
//! - `kubectl` (the client-side-apply manager's successor) may take over the
//!   fields recorded in `kubectl.kubernetes.io/last-applied-configuration`
//!   without conflicts, and keeps that annotation in step (`lastapplied.rs`).
//!
//! Where to look next: `entries.rs` (the wire format), `kapi_machinery::apply`
//! and `kapi_machinery::typed` (the merge itself), the store's `update.rs` and
//! `create.rs` (where updates call in), the server's apply handler.

mod entries;
pub mod lastapplied;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use kapi_machinery::apply::{ApplyError, Conflict, Updater};
use kapi_machinery::fieldpath::{path_string, PathElement, Set};
use kapi_machinery::member::Members;
use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_machinery::status::{ApiError, Cause, Reason};
use kapi_machinery::typed::Typed;
use serde_json::{json, Map, Value};

use entries::Identity;
pub use entries::{decode, encode, is_reset, manager_id, print_manager, Managed};

use crate::meta;

/// The manager of fields that existed before an object's first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The identifier an update works under before its fields join its entry.
const CURRENT_OPERATION: &str = "current-operation";

/// The field manager of one resource, for one write target.
pub struct FieldManager<'a> {
    pub schema: &'a dyn SchemaNav,
    pub root: &'a TypeRef,
    /// `group/version` (or `v1`).
    pub api_version: &'a str,
    pub kind: &'a str,
    /// `Some("status")` for writes through the status subresource.
    pub subresource: Option<&'a str>,
    /// Whether the resource has a status subresource (so `status` is reset on
    /// main-resource writes).
    pub has_status: bool,
}

/// Server-owned metadata paths, never owned by a manager (built once).
fn strip_set() -> &'static Set {
    static SET: LazyLock<Set> = LazyLock::new(build_strip_set);
    &SET
}

fn build_strip_set() -> Set {
    let f = PathElement::field;
    let mut s = Set::new();
    for top in ["apiVersion", "kind", "metadata"] {
        s.insert(&[f(top)]);
    }
    for m in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[f("metadata"), f(m)]);
    }
    s
}

/// `obj` without `metadata.managedFields`: copied only when it has them.
fn without_managed_fields(obj: &Value) -> Cow<'_, Value> {
    let has = meta::meta(obj).is_some_and(|m| m.member("managedFields").is_some());
    if !has {
        return Cow::Borrowed(obj);
    }
    let mut obj = obj.clone();
    meta::remove(&mut obj, "managedFields");
    Cow::Owned(obj)
}

impl<'a> FieldManager<'a> {
    fn typed(&self) -> Typed<'a> {
        Typed::new(self.schema, self.root)
    }

    /// Fields the strategy resets for this target, given the objects involved.
    fn ignored(&self, objs: &[&Value]) -> Set {
        let mut s = Set::new();
        match self.subresource {
            Some("status") => {
                for o in objs {
                    for k in o.as_object().into_iter().flatten().map(|(k, _)| k) {
                        if !matches!(k.as_str(), "status" | "metadata" | "apiVersion" | "kind") {
                            s.insert(&[PathElement::field(k.as_str())]);
                        }
                    }
                }
            }
            _ if self.has_status => s.insert(&[PathElement::field("status")]),
            _ => {}
        }
        s
    }

    fn updater(&self, objs: &[&Value]) -> Updater<'a> {
        Updater {
            typed: self.typed(),
            ignored: self.ignored(objs),
        }
    }

    /// The object a create starts from: upstream's empty object of the kind
    /// (the Go zero value for built-in kinds, nothing for custom resources).
    pub fn empty_object(&self) -> Value {
        Value::clone(&self.empty())
    }

    /// [`FieldManager::empty_object`], shared with the schema's memo.
    fn empty(&self) -> Arc<Value> {
        self.schema
            .zero_value(self.root)
            .unwrap_or_else(|| Arc::new(Value::Object(Map::new())))
    }

    /// Record an update (or create, `live` absent) by `manager` in
    /// `new.metadata.managedFields`. Never fails: when the fields cannot be
    /// worked out, the live object's entries are kept, as upstream does.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
        let client = meta::meta(new)
            .and_then(|m| m.member("managedFields"))
            .cloned();
        meta::remove(new, "managedFields");
        let live_entries = live.and_then(|l| meta::meta(l)?.member("managedFields"));
        let from_live = || decode(live_entries).unwrap_or_default();
        let managed = if self.subresource.is_some() {
            from_live()
        } else if is_reset(client.as_ref()) {
            Managed::default()
        } else {
            match decode(client.as_ref()) {
                Ok(m) if !m.fields.is_empty() => m,
                _ => from_live(),
            }
        };
        // Untracked objects stay untracked; only a create starts tracking.
        let creating = live.is_none_or(|l| meta::uid(l).is_none_or(str::is_empty));
        if managed.fields.is_empty() && !creating {
            return;
        }
        let empty = self.empty();
        if live.is_none() && managed.fields.is_empty() && self.created(&empty, new, manager, now) {
            return;
        }
        let live = live.unwrap_or(&empty);
        match self.update_managed(live, new, managed, manager, now) {
            Ok(m) => set_entries(new, &m),
            Err(e) => {
                tracing::error!(error = %e, "failed to update managedFields; keeping the live ones");
                if let Some(prev) = live_entries {
                    meta::meta_mut(new).insert("managedFields".into(), prev.clone());
                }
            }
        }
    }

    /// A create that no one owned anything of before: `manager`'s one entry
    /// written straight from the comparison with the empty object (what
    /// [`FieldManager::update_managed`] works out through field sets, at a
    /// fraction of the cost). False, with `new` untouched, when the object
    /// does not fit its schema: the general path reports that.
    fn created(&self, empty: &Value, new: &mut Value, manager: &str, now: &str) -> bool {
        let ignored = self.ignored(&[empty, new]);
        let typed = self.typed();
        match typed.written_fields_v1(empty, new, &ignored, strip_set()) {
            Ok(Some(fields)) => {
                let id = Identity {
                    manager: manager.to_string(),
                    subresource: self.subresource.map(str::to_string),
                };
                let e = entries::entry(id, false, self.api_version, Some(now), fields);
                meta::meta_mut(new).insert("managedFields".into(), Value::Array(vec![e]));
                true
            }
            Ok(None) => {
                meta::remove(new, "managedFields");
                true
            }
            Err(_) => false,
        }
    }

    /// The ownership after `manager`'s update from `live` to `new`.
    fn update_managed(
        &self,
        live: &Value,
        new: &Value,
        mut managed: Managed,
        manager: &str,
        now: &str,
    ) -> Result<Managed, String> {
        let (live, new) = (without_managed_fields(live), without_managed_fields(new));
        let updater = self.updater(&[&live, &new]);
        let fields = std::mem::take(&mut managed.fields);
        managed.fields = updater
            .update(&live, &new, self.api_version, fields, CURRENT_OPERATION)
            .map_err(|e| e.to_string())?;
        strip(&mut managed, CURRENT_OPERATION);
        if let Some(mut vs) = managed.fields.remove(CURRENT_OPERATION) {
            let id = manager_id(manager, "Update", self.api_version, self.subresource);
            if let Some(prev) = managed.fields.get(&id) {
                vs.set = vs.set.union(&prev.set);
            }
            managed.fields.insert(id.clone(), vs);
            managed.times.insert(id, Some(now.to_string()));
        }
        entries::cap_update_managers(&mut managed);
        Ok(managed)
    }

    /// Apply `patch` as `manager` to `live` (absent: the object is created).
    /// Returns the object to store, with its managedFields.
    pub fn apply(
        &self,
        live: Option<&Value>,
        patch: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApiError> {
        self.check_patch(patch)?;
        let live = match live {
            Some(l) => l.clone(),
            None => {
                let mut l = self.empty_object();
                l["apiVersion"] = json!(self.api_version);
                l["kind"] = json!(self.kind);
                l
            }
        };
        let entries = meta::meta(&live).and_then(|m| m.member("managedFields"));
        let managed = decode(entries)
            .map_err(|e| ApiError::internal(format!("failed to decode managed fields: {e}")))?;
        let result = match self.apply_managed(&live, patch, managed.clone(), manager, force, now) {
            Err(ApplyError::Conflicts(conflicts)) if manager == "kubectl" => {
                let allowed = self.allowed_from_last_applied(&live).unwrap_or_default();
                let left: Vec<Conflict> = conflicts
                    .into_iter()
                    .filter(|c| !allowed.has(&c.path))
                    .collect();
                if left.is_empty() {
                    self.apply_managed(&live, patch, managed, manager, true, now)
                } else {
                    Err(ApplyError::Conflicts(left))
                }
            }
            other => other,
        };
        let (mut obj, managed) = result.map_err(|e| apply_error(e, patch))?;
        if manager == "kubectl" {
            lastapplied::update_annotation(&mut obj, patch);
        }
        set_entries(&mut obj, &managed);
        Ok(obj)
    }

    /// The apply configuration must be of this resource's kind and may not carry
    /// managedFields.
    fn check_patch(&self, patch: &Value) -> Result<(), ApiError> {
        let av = patch.member_str("apiVersion").unwrap_or("");
        let kind = patch.member_str("kind").unwrap_or("");
        if av != self.api_version || kind != self.kind {
            return Err(ApiError::bad_request(format!(
                "invalid object type: {}",
                gvk_string(patch)
            )));
        }
        if meta::meta(patch)
            .is_some_and(|m| m.member("managedFields").is_some_and(|v| !v.is_null()))
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        Ok(())
    }

    fn apply_managed(
        &self,
        live: &Value,
        patch: &Value,
        mut managed: Managed,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<(Value, Managed), ApplyError> {
        let live = without_managed_fields(live).into_owned();
        if managed.fields.is_empty() {
            let empty = self.empty_object();
            managed = self
                .update_managed(&empty, &live, managed, BEFORE_FIRST_APPLY, now)
                .map_err(|e| ApplyError::Typed(kapi_machinery::typed::TypedError(e)))?;
        }
        let id = manager_id(manager, "Apply", "", self.subresource);
        let updater = self.updater(&[&live, patch]);
        let fields = std::mem::take(&mut managed.fields);
        let (new, fields) = updater.apply(&live, patch, self.api_version, fields, &id, force)?;
        managed.fields = fields;
        strip(&mut managed, &id);
        let obj = match new {
            Some(obj) => {
                managed.times.insert(id, Some(now.to_string()));
                obj
            }
            None => live,
        };
        Ok((obj, managed))
    }
}

/// Drop server-owned metadata from `id`'s set (and the entry if nothing is left).
fn strip(managed: &mut Managed, id: &str) {
    if let Some(vs) = managed.fields.get_mut(id) {
        vs.set.subtract(strip_set());
        if vs.set.is_empty() {
            managed.fields.remove(id);
        }
    }
}

fn set_entries(obj: &mut Value, managed: &Managed) {
    let entries = encode(managed);
    if entries.is_empty() {
        meta::remove(obj, "managedFields");
    } else {
        meta::meta_mut(obj).insert("managedFields".into(), Value::Array(entries));
    }
}

/// A failed apply as the client sees it.
fn apply_error(e: ApplyError, patch: &Value) -> ApiError {
    match e {
        ApplyError::Conflicts(conflicts) => conflict_error(&conflicts),
        ApplyError::Typed(e) => {
            // Upstream returns this as a plain error: 500 with no reason.
            let (ns, name) = (meta::namespace(patch).unwrap_or(""), meta::name(patch));
            let gvknn = format!("{ns}/{name}; {}", gvk_string(patch));
            ApiError::new(
                500,
                Reason::Unknown,
                format!("failed to create typed patch object ({gvknn}): {e}"),
            )
        }
    }
}

/// A configuration's kind as Go prints a GroupVersionKind: `apps/v1,
/// Kind=Deployment`, `/v1, Kind=ConfigMap`.
fn gvk_string(obj: &Value) -> String {
    let av = obj.member_str("apiVersion").unwrap_or("");
    let kind = obj.member_str("kind").unwrap_or("");
    let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
    format!("{group}/{version}, Kind={kind}")
}

/// 409 Conflict with one `FieldManagerConflict` cause per field, worded as upstream.
pub fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|c| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", print_manager(&c.manager)),
            field: path_string(&c.path),
        })
        .collect();
    let message = if let [one] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&one.manager),
            path_string(&one.path)
        )
    } else {
        let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for c in conflicts {
            by_manager
                .entry(c.manager.as_str())
                .or_default()
                .push(path_string(&c.path));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {}:", print_manager(m)));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::apply_conflict(causes, message)
}
