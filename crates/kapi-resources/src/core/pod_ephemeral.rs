//! Ephemeral containers (`kubectl debug`): the rules of the
//! `pods/ephemeralcontainers` subresource, as upstream. They are added through the
//! subresource only, never on create or by a plain pod update; once added they may
//! be neither changed nor removed; they may not carry what a long-running
//! container relies on (ports, probes, lifecycle, resources), and they may only
//! target a container the pod has.

use std::collections::BTreeMap;

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;

use super::util::{arr_at, str_at};

/// Container fields an ephemeral container may set (upstream's allow list).
const ALLOWED: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "envFrom",
    "env",
    "volumeMounts",
    "volumeDevices",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
];

/// A new pod may not have ephemeral containers.
pub fn validate_create(spec: &Value) -> ErrorList {
    if arr_at(spec, "/ephemeralContainers").is_empty() {
        return ErrorList::new();
    }
    vec![FieldError::forbidden(
        &FieldPath::new("spec").child("ephemeralContainers"),
        "cannot be set on create",
    )]
}

/// Each ephemeral container's own rules (names and common container rules are
/// checked with the pod spec).
pub fn validate(spec: &Value) -> ErrorList {
    let path = FieldPath::new("spec").child("ephemeralContainers");
    let targets: Vec<&str> = ["/containers", "/initContainers"]
        .iter()
        .flat_map(|list| arr_at(spec, list))
        .map(|c| str_at(c, "/name"))
        .collect();
    let mut errs = ErrorList::new();
    for (i, c) in arr_at(spec, "/ephemeralContainers").iter().enumerate() {
        let here = path.index(i);
        if let Some(fields) = c.as_object() {
            for (field, value) in fields {
                let empty = value.is_null()
                    || value.as_object().is_some_and(|m| m.is_empty())
                    || value.as_array().is_some_and(|a| a.is_empty());
                if !ALLOWED.contains(&field.as_str()) && !empty {
                    errs.push(FieldError::forbidden(
                        &here.child(field),
                        "cannot be set for an Ephemeral Container",
                    ));
                }
            }
        }
        let target = str_at(c, "/targetContainerName");
        if !target.is_empty() && !targets.contains(&target) {
            errs.push(FieldError::not_found(
                &here.child("targetContainerName"),
                target,
            ));
        }
    }
    errs
}

/// An update through the subresource: existing ephemeral containers stay as they are.
pub fn validate_update(new_spec: &Value, old_spec: &Value) -> ErrorList {
    let path = FieldPath::new("spec").child("ephemeralContainers");
    let new: BTreeMap<&str, &Value> = arr_at(new_spec, "/ephemeralContainers")
        .iter()
        .map(|c| (str_at(c, "/name"), c))
        .collect();
    let mut errs = validate(new_spec);
    for old in arr_at(old_spec, "/ephemeralContainers") {
        let name = str_at(old, "/name");
        let verdict = match new.get(name) {
            None => "removed",
            Some(now) if *now != old => "changed",
            Some(_) => continue,
        };
        errs.push(FieldError::forbidden(
            &path,
            format!("existing ephemeral containers \"{name}\" may not be {verdict}"),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(ephemeral: Value) -> Value {
        json!({"containers": [{"name": "app", "image": "nginx"}], "ephemeralContainers": ephemeral})
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn create_with_ephemeral_containers_is_forbidden() {
        let errs = validate_create(&spec(json!([{"name": "dbg", "image": "busybox"}])));
        assert_eq!(
            messages(&errs),
            ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
        );
        assert!(validate_create(&spec(json!([]))).is_empty());
    }

    #[test]
    fn long_running_fields_and_unknown_targets_are_rejected() {
        let s = spec(
            json!([{"name": "dbg", "image": "busybox", "ports": [{"containerPort": 80}],
                             "resources": {}, "targetContainerName": "nope"}]),
        );
        assert_eq!(
            messages(&validate(&s)),
            [
                "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[0].targetContainerName: Not found: \"nope\"",
            ]
        );
        let ok = spec(
            json!([{"name": "dbg", "image": "busybox", "targetContainerName": "app", "stdin": true}]),
        );
        assert!(validate(&ok).is_empty());
    }

    #[test]
    fn existing_ephemeral_containers_stay() {
        let old = spec(json!([{"name": "dbg", "image": "busybox"}]));
        let added =
            spec(json!([{"name": "dbg", "image": "busybox"}, {"name": "two", "image": "busybox"}]));
        assert!(validate_update(&added, &old).is_empty());
        let changed = spec(json!([{"name": "dbg", "image": "alpine"}]));
        assert_eq!(
            messages(&validate_update(&changed, &old)),
            ["spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be changed"]
        );
        let removed = spec(json!([]));
        assert_eq!(
            messages(&validate_update(&removed, &old)),
            ["spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed"]
        );
    }
}
