//! Where a written object keeps its pod spec: a pod, a pod template, a
//! replication controller, any `apps` workload, a job or a cron job. Shared by
//! the plugins that look at pod specs (PodSecurity, the privileged check).

use serde_json::Value;

use kapi_admission::Attributes;

/// The field path of the pod spec in objects of the written resource.
pub(crate) fn path(a: &Attributes) -> Option<&'static [&'static str]> {
    Some(match (a.group.as_str(), a.resource.as_str()) {
        ("", "pods") => &["spec"],
        ("", "podtemplates") => &["template", "spec"],
        ("", "replicationcontrollers") | ("apps", _) | ("batch", "jobs") => {
            &["spec", "template", "spec"]
        }
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// The pod spec `obj` carries, with its field path.
pub(crate) fn find<'a>(
    a: &Attributes,
    obj: &'a Value,
) -> Option<(&'a Value, &'static [&'static str])> {
    let path = path(a)?;
    let spec = path.iter().try_fold(obj, |v, k| v.get(*k))?;
    Some((spec, path))
}
