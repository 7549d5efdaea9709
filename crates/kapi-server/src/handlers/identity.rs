//! A body's `apiVersion`, `kind`, namespace and name against the URL, with
//! upstream's answers. A built-in resource's body is decoded through the
//! scheme, so what decides is whether the body's kind exists at its version:
//! another kind is `... cannot be handled as a <kind>: converting (v1.X) to
//! (core.Y): unknown conversion`, a kind no version has is `no kind "X" is
//! registered for version ...`, the right kind at another version of the
//! group is `the API version in the data (...) does not match the expected
//! API version (...)`. A custom resource's body is checked as upstream's
//! custom resource handler does: a missing kind is unreadable, another
//! apiVersion is refused, another kind is invalid (422).

use kapi_machinery::member::Members;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::ResourceDef;
use serde_json::Value;

use super::{check_namespace, Ctx};

/// Kinds every group version registers (`metav1.AddToGroupVersion`).
const META_KINDS: &[&str] = &[
    "Status",
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
];

/// Check a body's `apiVersion`, `kind`, namespace and name against the URL,
/// filling what the client left out.
pub fn check_identity(ctx: &Ctx, obj: &mut Value, name_from_url: bool) -> Result<(), ApiError> {
    let def = &ctx.entry.def;
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    if is_custom(def) {
        custom_identity(def, obj)?;
    } else {
        builtin_identity(ctx, obj)?;
    }
    check_namespace(ctx, obj)?;
    let meta = kapi_registry::meta::meta_mut(obj);
    if name_from_url {
        let url_name = ctx.name();
        match meta.member_str("name") {
            None | Some("") => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({url_name} based on URL) was undeterminable: name must be provided"
                )))
            }
            Some(n) if n != url_name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({url_name})"
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn is_custom(def: &ResourceDef) -> bool {
    def.origin == kapi_registry::Origin::Custom
}

fn str_of<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.member_str(field).filter(|s| !s.is_empty())
}

fn custom_identity(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let expected = def.api_version();
    let Some(kind) = str_of(obj, "kind") else {
        let text = serde_json::to_string(obj).expect("JSON values serialize");
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{text}' ({})",
            def.kind,
            kapi_machinery::gojson::summarize(text.as_bytes())
        )));
    };
    let av = str_of(obj, "apiVersion").unwrap_or("");
    if av != expected {
        return Err(version_mismatch(av, &expected));
    }
    if kind != def.kind {
        let path = FieldPath::new("kind");
        let err = FieldError::invalid(&path, kind, format!("must be {}", def.kind));
        let name = kapi_registry::meta::name(obj);
        return Err(ApiError::invalid(
            GroupKind::new(&def.group, kind),
            name,
            &vec![err],
        ));
    }
    Ok(())
}

fn version_mismatch(av: &str, expected: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the API version in the data ({av}) does not match the expected API version ({expected})"
    ))
}

fn builtin_identity(ctx: &Ctx, obj: &mut Value) -> Result<(), ApiError> {
    let def = &ctx.entry.def;
    let expected = def.api_version();
    let given_av = str_of(obj, "apiVersion");
    let given_kind = str_of(obj, "kind");
    let av = given_av.unwrap_or(&expected);
    let kind = given_kind.unwrap_or(&def.kind);
    check_builtin_kind(ctx, av, kind, &expected)?;
    // Written only where the body left them out (or empty): a body that
    // names them has just been found to name these.
    let (write_av, write_kind) = (given_av.is_none(), given_kind.is_none());
    let root = obj.as_object_mut().expect("checked");
    if write_av {
        root.insert("apiVersion".into(), expected.into());
    }
    if write_kind {
        root.insert("kind".into(), def.kind.clone().into());
    }
    Ok(())
}

/// `kind` at `av` is the resource's kind at its version (`expected`), as
/// upstream's decoder would find: registered at all, convertible, served.
fn check_builtin_kind(ctx: &Ctx, av: &str, kind: &str, expected: &str) -> Result<(), ApiError> {
    let def = &ctx.entry.def;
    let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
    let handled = |why: String| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: {why}",
            def.kind
        ))
    };
    let registered = (av == expected && kind == def.kind)
        || is_registered(def, group, version, kind)
        || ctx.srv.apis.all().iter().any(|e| {
            (
                e.def.group.as_str(),
                e.def.version.as_str(),
                e.def.kind.as_str(),
            ) == (group, version, kind)
        });
    if !registered {
        return Err(handled(format!(
            "no kind \"{kind}\" is registered for version \"{av}\" in scheme \"pkg/runtime/scheme.go:100\""
        )));
    }
    if kind != def.kind {
        return Err(handled(format!(
            "converting ({version}.{kind}) to ({}.{}): unknown conversion",
            internal_package(&def.group),
            def.kind
        )));
    }
    if av != expected {
        return Err(version_mismatch(av, expected));
    }
    Ok(())
}

/// Whether upstream's scheme has `kind` at `group/version` (beyond what is
/// served): the kinds of the built-in OpenAPI, their lists, the meta kinds,
/// and the older versions of the resource's own group (still registered
/// upstream, no longer served).
fn is_registered(def: &ResourceDef, group: &str, version: &str, kind: &str) -> bool {
    use kapi_resources::patchmeta::root_type;
    let known = |k: &str| root_type(group, version, k).is_some();
    if known(kind) || kind.strip_suffix("List").is_some_and(known) {
        return true;
    }
    if META_KINDS.contains(&kind) {
        return true;
    }
    let older = kapi_registry::apis::version_priority(version)
        < kapi_registry::apis::version_priority(&def.version);
    kind == def.kind && group == def.group && version.starts_with('v') && older
}

/// The Go package of a group's internal types (`core` for the legacy group).
fn internal_package(group: &str) -> &str {
    match group {
        "" | "events.k8s.io" => "core",
        g => g.split('.').next().unwrap_or(g),
    }
}
