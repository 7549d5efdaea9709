//! LimitRanger (upstream `plugin/pkg/admission/limitranger`): the LimitRanges
//! of the namespace default and bound what pods and PersistentVolumeClaims
//! ask for. Mutating: a container without a request or limit gets the
//! `defaultRequest` / `default` of the `Container` items (noted in the pod's
//! `kubernetes.io/limit-ranger` annotation). Validating: `min`, `max` and
//! `maxLimitRequestRatio` per container, per pod (summed), and `min` / `max`
//! of a claim's storage request, refused with 403 and upstream's messages
//! (`maximum cpu usage per Container is 1, but limit is 2`). Pods are checked
//! on create only (their resources do not change), claims on create and update.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::store::options::ListOptions;
use serde_json::{json, Map, Value};

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};
use kapi_machinery::quantity::{self, List, Qty};

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub struct LimitRanger {
    pub(crate) cx: Context,
}

/// The `spec.limits` items of the namespace's LimitRanges, with upstream's
/// API defaults applied to `Container` items (default from max, default
/// request from default, then from min).
async fn items(cx: &Context, ns: &str) -> Result<Vec<Value>, ApiError> {
    let Some(entry) = cx.apis.lookup("", "v1", "limitranges") else {
        return Ok(Vec::new());
    };
    let list = entry.store.list(Some(ns), &ListOptions::default()).await?;
    let mut out = Vec::new();
    for lr in &list.items {
        for item in lr
            .pointer("/spec/limits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut item = item.clone();
            if item.get("type").and_then(Value::as_str) == Some("Container") {
                default_item(&mut item);
            }
            out.push(item);
        }
    }
    Ok(out)
}

fn default_item(item: &mut Value) {
    let get = |item: &Value, f: &str| {
        item.get(f)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (max, min) = (get(item, "max"), get(item, "min"));
    let mut default = get(item, "default");
    for (k, v) in &max {
        default.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut request = get(item, "defaultRequest");
    for (k, v) in default.iter().chain(min.iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    item["default"] = Value::Object(default);
    item["defaultRequest"] = Value::Object(request);
}

fn res(item: &Value, f: &str) -> List {
    quantity::list(item.get(f))
}

/// Fill a container's missing requests and limits; what was set, for the annotation.
fn default_container(
    c: &mut Value,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    kind: &str,
) -> Vec<String> {
    let name = c
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(c) = c.as_object_mut() else {
        return Vec::new();
    };
    let resources = c.entry("resources").or_insert_with(|| json!({}));
    let mut notes = Vec::new();
    for (field, defaults, what) in [
        ("limits", limits, "limit"),
        ("requests", requests, "request"),
    ] {
        if defaults.is_empty() {
            continue;
        }
        let Some(r) = resources.as_object_mut() else {
            continue;
        };
        let list = r.entry(field).or_insert_with(|| json!({}));
        let Some(list) = list.as_object_mut() else {
            continue;
        };
        let mut set: Vec<&str> = Vec::new();
        for (k, v) in defaults {
            if !list.contains_key(k) {
                list.insert(k.clone(), v.clone());
                set.push(k);
            }
        }
        if !set.is_empty() {
            set.sort();
            notes.push(format!("{} {what} for {kind} {name}", set.join(", ")));
        }
    }
    notes
}

fn min_constraint(kind: &str, name: &str, enforced: Qty, req: &List, lim: &List) -> Option<String> {
    let Some(r) = req.get(name) else {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if r.milli < enforced.milli {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}, but request is {r}"
        ));
    }
    if let Some(l) = lim.get(name) {
        if l.milli < enforced.milli {
            return Some(format!(
                "minimum {name} usage per {kind} is {enforced}, but limit is {l}"
            ));
        }
    }
    None
}

fn max_constraint(kind: &str, name: &str, enforced: Qty, req: &List, lim: &List) -> Option<String> {
    let Some(l) = lim.get(name) else {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if l.milli > enforced.milli {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}, but limit is {l}"
        ));
    }
    if let Some(r) = req.get(name) {
        if r.milli > enforced.milli {
            return Some(format!(
                "maximum {name} usage per {kind} is {enforced}, but request is {r}"
            ));
        }
    }
    None
}

fn max_request_constraint(kind: &str, name: &str, enforced: Qty, req: &List) -> Option<String> {
    let Some(r) = req.get(name) else {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    (r.milli > enforced.milli)
        .then(|| format!("maximum {name} usage per {kind} is {enforced}, but request is {r}"))
}

fn ratio_constraint(
    kind: &str,
    name: &str,
    enforced: Qty,
    req: &List,
    lim: &List,
) -> Option<String> {
    let r = req.get(name).map(|q| q.milli).unwrap_or(0);
    if r == 0 {
        return Some(format!("{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"));
    }
    let l = lim.get(name).map(|q| q.milli).unwrap_or(0);
    if l == 0 {
        return Some(format!("{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"));
    }
    let observed = l as f64 / r as f64;
    let max = enforced.milli as f64 / 1000.0;
    (observed > max).then(|| {
        format!("{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {observed:.6}")
    })
}

/// Every bound of `item` against one requests/limits pair.
fn check(item: &Value, kind: &str, req: &List, lim: &List, errs: &mut Vec<String>) {
    for (name, q) in res(item, "min") {
        errs.extend(min_constraint(kind, &name, q, req, lim));
    }
    for (name, q) in res(item, "max") {
        errs.extend(max_constraint(kind, &name, q, req, lim));
    }
    for (name, q) in res(item, "maxLimitRequestRatio") {
        errs.extend(ratio_constraint(kind, &name, q, req, lim));
    }
}

fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The pod's requests or limits: containers summed, then the largest of that
/// and each init container (upstream's `podRequests` / `podLimits`).
fn pod_total(pod: &Value, field: &str) -> List {
    let mut sum = List::new();
    for c in containers(pod, "containers") {
        for (k, v) in quantity::list(c.pointer(&format!("/resources/{field}"))) {
            let e = sum.entry(k).or_default();
            *e = e.plus(v);
        }
    }
    for c in containers(pod, "initContainers") {
        for (k, v) in quantity::list(c.pointer(&format!("/resources/{field}"))) {
            let e = sum.entry(k).or_default();
            if v.milli > e.milli {
                *e = v;
            }
        }
    }
    sum
}

fn validate_pod(items: &[Value], pod: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for c in containers(pod, "initContainers").chain(containers(pod, "containers")) {
                    let req = quantity::list(c.pointer("/resources/requests"));
                    let lim = quantity::list(c.pointer("/resources/limits"));
                    check(item, "Container", &req, &lim, &mut errs);
                }
            }
            Some("Pod") => {
                let (req, lim) = (pod_total(pod, "requests"), pod_total(pod, "limits"));
                check(item, "Pod", &req, &lim, &mut errs);
            }
            _ => {}
        }
    }
    errs
}

fn validate_claim(items: &[Value], pvc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let req = quantity::list(pvc.pointer("/spec/resources/requests"));
    for item in items {
        if item.get("type").and_then(Value::as_str) != Some("PersistentVolumeClaim") {
            continue;
        }
        for (name, q) in res(item, "min") {
            errs.extend(min_constraint(
                "PersistentVolumeClaim",
                &name,
                q,
                &req,
                &List::new(),
            ));
        }
        for (name, q) in res(item, "max") {
            errs.extend(max_request_constraint(
                "PersistentVolumeClaim",
                &name,
                q,
                &req,
            ));
        }
    }
    errs
}

/// Upstream's error aggregate: one message, or `[a, b]`.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn applies(a: &Attributes) -> bool {
    (a.is("", "pods") && a.operation == Operation::Create) || a.is("", "persistentvolumeclaims")
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn concerns(&self, a: &Attributes) -> bool {
        applies(a)
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !applies(a) || !a.is("", "pods") {
            return Ok(());
        }
        let items = items(cx, &a.namespace).await?;
        let (mut requests, mut limits) = (Map::new(), Map::new());
        for item in items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("Container"))
        {
            requests.extend(
                item.get("defaultRequest")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            );
            limits.extend(
                item.get("default")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        if requests.is_empty() && limits.is_empty() {
            return Ok(());
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let mut notes = Vec::new();
        for (list, kind) in [
            ("initContainers", "init container"),
            ("containers", "container"),
        ] {
            if let Some(cs) = pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut)
            {
                for c in cs {
                    notes.extend(default_container(c, &requests, &limits, kind));
                }
            }
        }
        if !notes.is_empty() {
            let m = kapi_registry::meta::meta_mut(pod);
            let ann = m.entry("annotations").or_insert_with(|| json!({}));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(
                    ANNOTATION.into(),
                    json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
                );
            }
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !applies(a) {
            return Ok(());
        }
        let Some(obj) = &a.object else {
            return Ok(());
        };
        let items = items(cx, &a.namespace).await?;
        if items.is_empty() {
            return Ok(());
        }
        let errs = if a.resource == "pods" {
            validate_pod(&items, obj)
        } else {
            validate_claim(&items, obj)
        };
        if errs.is_empty() {
            Ok(())
        } else {
            Err(a.forbidden(aggregate(&errs)))
        }
    }
}
