//! The options of store operations, already parsed from the query string by the
//! handler (selectors parsed, booleans decoded).

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::labels::LabelSelector;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RvMatch {
    #[default]
    Unset,
    NotOlderThan,
    Exact,
}

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub label: LabelSelector,
    pub field: FieldSelector,
    pub limit: usize,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub rv_match: RvMatch,
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    /// `field_manager` is the User-Agent's, the request naming none: the
    /// admission attributes' options then name no `fieldManager`, as
    /// upstream's hold the options as the request gave them.
    pub field_manager_defaulted: bool,
    /// The request's `fieldValidation` when it named one (the admission
    /// attributes' options carry it, as upstream's).
    pub field_validation: Option<String>,
    /// The object's `metadata.managedFields` were already worked out (by a
    /// server-side apply); the store keeps them as they are.
    pub managed_fields_set: bool,
    /// The caller answers a create with the written object's JSON alone (a
    /// client that wants plain JSON): the store then writes that JSON straight
    /// from the stored bytes where it can, and decodes the object only when
    /// asked (`Store::written_object`). Others get the object decoded once,
    /// its JSON made from it.
    pub answer_json: bool,
    /// The caller answers a create with the written object in protobuf: as
    /// for `answer_json`, the object is not decoded unless asked, and its
    /// stored bytes are at hand (`Written::stored`) for an answer spliced
    /// from them.
    pub answer_protobuf: bool,
    /// A POST: upstream's storage refuses to create an object that names a
    /// revision (a server-side apply or an update that creates does not get
    /// there with one).
    pub refuse_named_revision: bool,
}

impl WriteOptions {
    /// The options of a write made by an in-process component as field
    /// manager `manager` (a controller, the server's own bootstrap).
    pub fn for_manager(manager: &str) -> WriteOptions {
        WriteOptions {
            field_manager: Some(manager.to_owned()),
            ..WriteOptions::default()
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    Orphan,
    #[default]
    Background,
    Foreground,
}

impl Propagation {
    /// The `propagationPolicy` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub grace_period: Option<i64>,
    pub propagation: Option<Propagation>,
    /// The deprecated `orphanDependents` (exclusive with `propagation`).
    pub orphan_dependents: Option<bool>,
    pub preconditions: Preconditions,
}

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    pub label: LabelSelector,
    pub field: FieldSelector,
    pub resource_version: Option<String>,
    pub rv_match: RvMatch,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    /// The consumer wants each event as a finished JSON line (`WatchEvent::json`)
    /// where the store can give one.
    pub encoded_json: bool,
    /// The consumer encodes events itself from the cached objects
    /// (`WatchEvent::cached`), once per object and event, where the store can
    /// give them (served from the watch cache, no conversion); `encoded_json` wins.
    pub cached_objects: bool,
    /// When the consumer will end the watch (`timeoutSeconds`): a bookmark is
    /// sent 2 s before, as upstream's cacher does.
    pub timeout: Option<std::time::Duration>,
}
