//! How the objects of a definition served at several versions reach their
//! storage version and back (upstream: `apiserver/conversion/`): with
//! `strategy: None` only `apiVersion` changes; with `strategy: Webhook` the
//! objects go to the definition's conversion webhook in one `ConversionReview`
//! (a list page or a watch event in one request), and the answer is checked
//! as upstream checks it — the request's uid, the count, each object's
//! apiVersion, kind, name, namespace and uid; only labels and annotations may
//! change in metadata, the rest is restored from the original. Objects read
//! from storage are defaulted with their stored version's schema first
//! (upstream's defaulting on read); converted objects are pruned against the
//! target version's schema (upstream's schema coercion after conversion).
//!
//! No I/O here: the server hands in a [`ReviewClient`] that POSTs a review
//! (`kapi-server/src/apiextensions/webhook.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use kapi_machinery::status::{ApiError, Reason};
use kapi_machinery::validation::{aggregate, validate_annotations, validate_labels, FieldPath};
use kapi_registry::{meta, Conversion};
use serde_json::{json, Map, Value};

use super::schema::Schema;

/// Sends one `ConversionReview` to a definition's webhook and returns the
/// decoded response body; the error is what failed, as upstream's client
/// words it (`Post "https://…": …`).
pub trait ReviewClient: Send + Sync {
    fn post(&self, review: &Value) -> Result<Value, String>;
}

/// A definition's conversion, shared by all its served versions.
pub struct CrdConversion {
    storage: String,
    /// Version name → its schema, for defaulting on read and pruning.
    schemas: HashMap<String, Arc<Schema>>,
    webhook: Option<Webhook>,
}

struct Webhook {
    client: Arc<dyn ReviewClient>,
    review_versions: Vec<String>,
}

impl CrdConversion {
    /// `storage` is the storage apiVersion (`group/version`).
    pub fn new(storage: String, schemas: HashMap<String, Arc<Schema>>) -> CrdConversion {
        CrdConversion {
            storage,
            schemas,
            webhook: None,
        }
    }

    /// Convert through `client` (the definition's `conversionReviewVersions`
    /// pick the review's version, first supported wins).
    pub fn with_webhook(
        mut self,
        client: Arc<dyn ReviewClient>,
        review_versions: Vec<String>,
    ) -> CrdConversion {
        self.webhook = Some(Webhook {
            client,
            review_versions,
        });
        self
    }

    fn schema_of(&self, obj: &Value) -> Option<&Arc<Schema>> {
        let av = obj.get("apiVersion").and_then(Value::as_str)?;
        self.schemas.get(av.rsplit('/').next()?)
    }
}

impl Conversion for CrdConversion {
    fn storage_api_version(&self) -> &str {
        &self.storage
    }

    /// The conversion without a webhook: only `apiVersion` changes.
    fn convert(&self, mut obj: Value, api_version: &str) -> Value {
        if let Some(root) = obj.as_object_mut() {
            root.insert("apiVersion".into(), api_version.into());
        }
        obj
    }

    fn try_convert(&self, objs: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError> {
        let mut out = match &self.webhook {
            None => objs
                .into_iter()
                .map(|o| self.convert(o, api_version))
                .collect(),
            Some(hook) => hook.convert(objs, api_version)?,
        };
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if let Some(schema) = self.schemas.get(version) {
            for obj in &mut out {
                schema.prune(obj);
            }
        }
        Ok(out)
    }

    fn on_read(&self, obj: &mut Value) {
        if let Some(schema) = self.schema_of(obj) {
            schema.default(obj);
        }
    }
}

/// A conversion failure as upstream answers it: 500 with the message alone.
fn failed(msg: String) -> ApiError {
    ApiError::new(500, Reason::Unknown, msg)
}

/// Upstream's `schema.GroupVersionKind` string.
fn gvk_of(obj: &Value, list: bool) -> String {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let suffix = if list { "List" } else { "" };
    match av.split_once('/') {
        Some((g, v)) => format!("{g}/{v}, Kind={kind}{suffix}"),
        None => format!("/{av}, Kind={kind}{suffix}"),
    }
}

/// Only `apiVersion` and `kind`: upstream converts these without the webhook.
fn is_empty_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"))
}

impl Webhook {
    fn convert(&self, objs: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError> {
        if objs.is_empty() {
            return Ok(objs);
        }
        if objs.len() == 1 && is_empty_object(&objs[0]) {
            let mut obj = objs.into_iter().next().expect("one");
            obj["apiVersion"] = api_version.into();
            return Ok(vec![obj]);
        }
        let list = objs.len() > 1;
        let gvk = gvk_of(&objs[0], list);
        let review_version = self
            .review_versions
            .iter()
            .find(|v| *v == "v1" || *v == "v1beta1")
            .ok_or_else(|| failed("no supported conversion review versions".into()))?;
        let uid = meta::new_uid();
        let review = json!({
            "kind": "ConversionReview",
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objs},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let response = self
            .client
            .post(&review)
            .map_err(|e| failed(format!("conversion webhook for {gvk} failed: {e}")))?;
        let converted = converted_objects(review_version, &uid, &response)
            .map_err(|e| failed(format!("conversion webhook for {gvk} failed: {e}")))?;
        if converted.len() != objs.len() {
            return Err(failed(format!(
                "conversion webhook for {gvk} returned {} objects, expected {}",
                converted.len(),
                objs.len()
            )));
        }
        let (what, meta_what) = if list {
            ("invalid converted object", "invalid metadata in object")
        } else {
            ("invalid object", "invalid metadata")
        };
        objs.iter()
            .zip(converted)
            .enumerate()
            .map(|(i, (original, out))| {
                // Upstream counts list items from 1 here, single objects from 0.
                let at = if list {
                    format!(" at index {}", i + 1)
                } else {
                    " at index 0".to_owned()
                };
                check_converted(original, &out, api_version).map_err(|e| {
                    let at = if e.starts_with("must") && !list {
                        ""
                    } else {
                        &at
                    };
                    failed(format!(
                        "conversion webhook for {gvk} returned {what}{at}: {e}"
                    ))
                })?;
                let meta_at = if list {
                    format!(" at index {i}")
                } else {
                    String::new()
                };
                restore_meta(original, out).map_err(|e| {
                    failed(format!(
                        "conversion webhook for {gvk} returned {meta_what}{meta_at}: {e}"
                    ))
                })
            })
            .collect()
    }
}

/// The objects of a successful response, after upstream's checks.
fn converted_objects(version: &str, uid: &str, response: &Value) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let av = response
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = response.get("kind").and_then(Value::as_str).unwrap_or("");
        if (av, kind) != ("apiextensions.k8s.io/v1", "ConversionReview") {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_of(response, false)
            ));
        }
    }
    let Some(resp) = response.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    let got_uid = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if version == "v1" && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let status = resp
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let msg = resp
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !msg.is_empty() {
            return Err(msg.to_owned());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Upstream's group-version, kind and `validateConvertedObject` checks.
fn check_converted(original: &Value, out: &Value, api_version: &str) -> Result<(), String> {
    let str_at = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    if !out.is_object() {
        return Err("invalid type, expected=Unstructured".into());
    }
    let got = str_at(out, "/apiVersion");
    if got != api_version {
        return Err(format!(
            "invalid groupVersion (expected {api_version}, received {got})"
        ));
    }
    let (want, got) = (str_at(original, "/kind"), str_at(out, "/kind"));
    if want != got {
        return Err(format!("invalid kind (expected {want}, received {got})"));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let p = format!("/metadata/{field}");
        let (a, b) = (str_at(original, &p), str_at(out, &p));
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    Ok(())
}

/// `original`'s metadata with the converted labels and annotations
/// (validated when they changed), upstream's `restoreObjectMeta`.
fn restore_meta(original: &Value, mut out: Value) -> Result<Value, String> {
    let response_meta = match out.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ))
        }
    };
    let mut restored = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        let response = match response_meta.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        };
        let empty = Map::new();
        let before = restored
            .get(field)
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut changed = before.len() != response.len();
        for (k, v) in response {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= before.get(k) != Some(v);
        }
        if changed {
            let value = Value::Object(response.clone());
            // Upstream's path for annotations is `metadata.annotation`.
            let errs = if field == "labels" {
                validate_labels(Some(&value), &FieldPath::new("metadata").child("labels"))
            } else {
                validate_annotations(
                    Some(&value),
                    &FieldPath::new("metadata").child("annotation"),
                )
            };
            if let Some(msg) = aggregate(&errs) {
                return Err(msg);
            }
        }
        restored.insert(field.into(), Value::Object(response.clone()));
    }
    out["metadata"] = Value::Object(restored);
    Ok(out)
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers each review with `answer(request)`, recording the requests.
    struct Fake {
        seen: Mutex<Vec<Value>>,
        answer: fn(&Value) -> Value,
    }

    impl ReviewClient for Fake {
        fn post(&self, review: &Value) -> Result<Value, String> {
            self.seen.lock().unwrap().push(review.clone());
            Ok((self.answer)(review))
        }
    }

    fn conversion(answer: fn(&Value) -> Value) -> (CrdConversion, Arc<Fake>) {
        let fake = Arc::new(Fake {
            seen: Mutex::new(Vec::new()),
            answer,
        });
        let conv = CrdConversion::new("g.example.com/v1".into(), HashMap::new())
            .with_webhook(fake.clone(), vec!["v1beta1".into(), "v1".into()]);
        (conv, fake)
    }

    fn obj(version: &str, name: &str) -> Value {
        json!({"apiVersion": format!("g.example.com/{version}"), "kind": "W",
               "metadata": {"name": name, "uid": "u", "labels": {"a": "b"}}, "spec": {}})
    }

    fn echo(review: &Value) -> Value {
        let desired = review["request"]["desiredAPIVersion"].clone();
        let objects: Vec<Value> = review["request"]["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = desired.clone();
                o["metadata"]["labels"] = json!({"c": "d"});
                o["metadata"]["generation"] = json!(99);
                o
            })
            .collect();
        json!({"response": {"uid": review["request"]["uid"], "convertedObjects": objects,
                            "result": {"status": "Success"}}})
    }

    #[test]
    fn first_supported_review_version_and_metadata_restored_but_labels() {
        let (conv, fake) = conversion(echo);
        let out = conv
            .try_convert(vec![obj("v1", "a"), obj("v1", "b")], "g.example.com/v2")
            .unwrap();
        let review = &fake.seen.lock().unwrap()[0];
        // v1beta1 is listed first; its answers are not checked for GVK or uid.
        assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1beta1");
        assert_eq!(review["request"]["objects"].as_array().unwrap().len(), 2);
        assert_eq!(out[1]["apiVersion"], "g.example.com/v2");
        assert_eq!(out[1]["metadata"]["labels"], json!({"c": "d"}));
        assert!(out[1]["metadata"].get("generation").is_none());
        assert_eq!(out[1]["metadata"]["name"], "b");
    }

    #[test]
    fn invalid_labels_from_the_webhook_are_refused() {
        fn bad_labels(review: &Value) -> Value {
            let mut answer = echo(review);
            answer["response"]["convertedObjects"][0]["metadata"]["labels"] =
                json!({"bad key!": "x"});
            answer
        }
        let (conv, _) = conversion(bad_labels);
        let err = conv
            .try_convert(vec![obj("v1", "a")], "g.example.com/v2")
            .unwrap_err();
        assert_eq!(err.code, 500);
        assert!(
            err.message.starts_with(
                "conversion webhook for g.example.com/v1, Kind=W returned invalid metadata: metadata.labels: Invalid value: \"bad key!\""
            ),
            "{}",
            err.message
        );
    }
}
