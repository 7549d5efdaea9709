//! The warnings of the kinds that hold a pod template (upstream's workload
//! strategies): a name that becomes pod names and is not a DNS label, and the
//! template's warnings (`pod_warnings.rs`) on create and on an update that
//! moves the generation.

use kapi_machinery::validation::FieldPath;
use serde_json::Value;

use super::pod_warnings::{name_warning, template_warnings};

/// The two warning methods of a workload strategy (inside its `impl
/// Strategy`): its name warns when it becomes pod names (`names_pods`), its
/// template at `pointer` (a JSON pointer) on create and on an update that
/// moves the generation, named from the field path segments given.
macro_rules! template_warning_methods {
    ($names_pods:expr, $pointer:literal, $first:literal $(, $rest:literal)*) => {
        fn warnings_on_create(&self, obj: &serde_json::Value) -> Vec<String> {
            let path = kapi_machinery::validation::FieldPath::new($first)$(.child($rest))*;
            $crate::core::workload_warnings::workload_create_warnings(obj, $names_pods, $pointer, &path)
        }

        fn warnings_on_update(&self, new: &serde_json::Value, old: &serde_json::Value) -> Vec<String> {
            let path = kapi_machinery::validation::FieldPath::new($first)$(.child($rest))*;
            $crate::core::workload_warnings::workload_update_warnings(new, old, $pointer, &path)
        }
    };
}
pub(crate) use template_warning_methods;

/// A workload's warnings on create: its name (when `names_pods`) and its
/// template at `template` (a JSON pointer) whose field path is `path`.
pub fn workload_create_warnings(
    obj: &Value,
    names_pods: bool,
    template: &str,
    path: &FieldPath,
) -> Vec<String> {
    let mut out: Vec<String> = names_pods
        .then(|| name_warning(obj, "Pod names and hostnames"))
        .flatten()
        .into_iter()
        .collect();
    out.extend(template_warnings(path, obj.pointer(template)));
    out
}

/// A workload's warnings on update: its template's, when the update
/// changed the spec (the generation moved).
pub fn workload_update_warnings(
    new: &Value,
    old: &Value,
    template: &str,
    path: &FieldPath,
) -> Vec<String> {
    if !generation_moved(new, old) {
        return Vec::new();
    }
    template_warnings(path, new.pointer(template))
}

/// Whether an update moved `metadata.generation` (its spec changed): the
/// condition upstream's workload strategies warn for their templates on.
pub fn generation_moved(new: &Value, old: &Value) -> bool {
    new.pointer("/metadata/generation") != old.pointer("/metadata/generation")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_update_warns_only_when_the_generation_moves() {
        let t = json!({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": -1}}}});
        let mut new = t.clone();
        new["metadata"] = json!({"generation": 2});
        let mut old = t;
        old["metadata"] = json!({"generation": 2});
        let path = FieldPath::new("spec").child("template");
        assert!(workload_update_warnings(&new, &old, "/spec/template", &path).is_empty());
        old["metadata"]["generation"] = json!(1);
        assert_eq!(
            workload_update_warnings(&new, &old, "/spec/template", &path).len(),
            1
        );
    }
}
