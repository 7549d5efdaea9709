//! Operation parameters in swagger 2.0 form (`v3.rs` converts them), with
//! upstream's names, types and meaning.
//!
//! Invariants: every parameter is inline (no `#/parameters/` references), because
//! kubectl looks for `fieldValidation` by name among a PATCH operation's own
//! parameters before it sends `fieldValidation=Strict`.
//! Where to look next: `paths.rs` (which operation gets which parameters).

use serde_json::{json, Value};

use super::defs::REF_PREFIX;

fn query(name: &str, ty: &str, description: &str) -> Value {
    json!({
        "description": description,
        "in": "query",
        "name": name,
        "type": ty,
        "uniqueItems": true,
    })
}

pub fn path(name: &str, description: &str) -> Value {
    json!({
        "description": description,
        "in": "path",
        "name": name,
        "required": true,
        "type": "string",
        "uniqueItems": true,
    })
}

pub fn namespace() -> Value {
    path(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    )
}

pub fn pretty() -> Value {
    query("pretty", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).")
}

pub fn body(def: &str, required: bool) -> Value {
    let mut p = json!({
        "in": "body",
        "name": "body",
        "schema": {"$ref": format!("{REF_PREFIX}{def}")},
    });
    if required {
        p["required"] = true.into();
    }
    p
}

fn dry_run() -> Value {
    query("dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed")
}

fn field_manager(patch: bool) -> Value {
    let doc = if patch {
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."
    } else {
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."
    };
    query("fieldManager", "string", doc)
}

fn field_validation() -> Value {
    query("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.")
}

/// `dryRun`, `fieldManager`, `fieldValidation` (POST and PUT).
pub fn write() -> Vec<Value> {
    vec![dry_run(), field_manager(false), field_validation()]
}

/// The write parameters plus `force` (PATCH).
pub fn patch() -> Vec<Value> {
    vec![
        dry_run(),
        field_manager(true),
        field_validation(),
        query("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."),
    ]
}

fn deletion() -> Vec<Value> {
    vec![
        dry_run(),
        query("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
        query("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it"),
        query("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
        query("propagationPolicy", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
    ]
}

/// Parameters of DELETE on one object.
pub fn delete() -> Vec<Value> {
    deletion()
}

fn list_only() -> Vec<Value> {
    vec![
        query("continue", "string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize."),
        query("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
        query("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
        query("limit", "integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results."),
        query("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
        query("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
        query("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent."),
        query("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
    ]
}

/// Parameters of LIST (and the deprecated watch paths): the list parameters
/// plus `allowWatchBookmarks` and `watch`.
pub fn list() -> Vec<Value> {
    let mut params = vec![query("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.")];
    params.extend(list_only());
    params.push(query("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."));
    params
}

/// Parameters of DELETE on a collection: deletion plus list parameters.
pub fn delete_collection() -> Vec<Value> {
    let mut params = deletion();
    params.extend(list_only());
    params.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    params
}
