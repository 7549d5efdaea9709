//! The AdmissionReview v1 exchange: the request a webhook receives, built from
//! the attributes at the version the webhook matched (`kind`/`resource`) and the
//! version the client used (`requestKind`/`requestResource`), and the checks
//! upstream's `VerifyAdmissionResponse` makes on the answer. A malformed answer
//! is an error calling the webhook (the failure policy applies), not a denial.

use base64::Engine;
use serde_json::{json, Map, Value};

use super::Attrs;

/// The `request` of an AdmissionReview. `versioned` are the attributes at the
/// matched version, `original` as the client sent them.
pub fn request(uid: &str, versioned: &Attrs, original: &Attrs) -> Value {
    let gvk = |a: &Attrs| json!({"group": a.gvk.0, "version": a.gvk.1, "kind": a.gvk.2});
    let gvr = |a: &Attrs| json!({"group": a.gvr.0, "version": a.gvr.1, "resource": a.gvr.2});
    let mut r = Map::new();
    r.insert("uid".into(), json!(uid));
    r.insert("kind".into(), gvk(versioned));
    r.insert("resource".into(), gvr(versioned));
    if !versioned.subresource.is_empty() {
        r.insert("subResource".into(), json!(versioned.subresource));
    }
    r.insert("requestKind".into(), gvk(original));
    r.insert("requestResource".into(), gvr(original));
    if !original.subresource.is_empty() {
        r.insert("requestSubResource".into(), json!(original.subresource));
    }
    if !versioned.name.is_empty() {
        r.insert("name".into(), json!(versioned.name));
    }
    if !versioned.namespace.is_empty() {
        r.insert("namespace".into(), json!(versioned.namespace));
    }
    r.insert("operation".into(), json!(versioned.operation.as_str()));
    r.insert("userInfo".into(), user_info(versioned));
    for (k, v) in [
        ("object", &versioned.object),
        ("oldObject", &versioned.old_object),
    ] {
        if let Some(v) = v {
            r.insert(k.into(), v.clone());
        }
    }
    r.insert("dryRun".into(), json!(versioned.dry_run));
    if let Some(o) = &versioned.options {
        r.insert("options".into(), o.clone());
    }
    Value::Object(r)
}

/// The `userInfo` of a request (also CEL's `request.userInfo`).
pub fn user_info(a: &Attrs) -> Value {
    let u = &a.user;
    let mut m = Map::new();
    m.insert("username".into(), json!(u.name));
    if !u.uid.is_empty() {
        m.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

/// The whole AdmissionReview sent.
pub fn review(request: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}

/// A webhook's answer.
#[derive(Debug, Default)]
pub struct Reply {
    pub allowed: bool,
    pub status: Option<Value>,
    /// A JSON Patch (mutating webhooks only).
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Parse and check a response to request `uid`.
pub fn parse(body: &[u8], uid: &str, mutating: bool) -> Result<Reply, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let r = v
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let patch = r.get("patch").and_then(Value::as_str).unwrap_or("");
    let patch_type = r.get("patchType").and_then(Value::as_str).unwrap_or("");
    let patch = if patch.is_empty() {
        None
    } else if !mutating {
        return Err("validating webhook may not return response.patch".into());
    } else if patch_type.is_empty() {
        return Err("webhook returned response.patch but not response.patchType".into());
    } else if patch_type != "JSONPatch" {
        return Err(format!(
            "webhook returned invalid response.patchType of {patch_type:?}"
        ));
    } else {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .map_err(|e| format!("received invalid webhook response: {e}"))?;
        Some(serde_json::from_slice(&raw).map_err(|e| e.to_string())?)
    };
    let strings = |k: &str| -> Vec<String> {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let audit_annotations = r
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    Ok(Reply {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: r.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings: strings("warnings"),
        audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(r: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r}),
        )
        .unwrap()
    }

    #[test]
    fn responses_are_checked_as_upstream() {
        let ok = parse(&resp(json!({"uid": "u", "allowed": true})), "u", false).unwrap();
        assert!(ok.allowed);
        let e = parse(&resp(json!({"uid": "x", "allowed": true})), "u", false).unwrap_err();
        assert_eq!(e, r#"expected response.uid="u", got "x""#);
        let p = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let e = parse(
            &resp(json!({"uid": "u", "allowed": true, "patch": p})),
            "u",
            true,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "webhook returned response.patch but not response.patchType"
        );
        let r = json!({"uid": "u", "allowed": true, "patch": p, "patchType": "JSONPatch"});
        assert!(parse(&resp(r.clone()), "u", true).unwrap().patch.is_some());
        assert!(parse(&resp(r), "u", false).is_err());
        assert!(parse(b"{}", "u", false).is_err());
    }
}
