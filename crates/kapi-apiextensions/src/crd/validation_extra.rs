//! The parts of CRD validation `validation.rs` hands off: `spec.conversion`
//! (strategy, the webhook's client config — exactly one of `url` (https, a
//! host, no user, query or fragment) and `service` (name, namespace, port,
//! path segments) — its `caBundle` (PEM certificates) and
//! `conversionReviewVersions`), and the root of a schema whose version has the
//! status subresource (only upstream's allowed keywords, type `object`).
//!
//! Upstream validates the internal form of a definition, so conversion errors
//! name the internal fields (`spec.conversion.webhookClientConfig…`); the
//! messages are upstream's.

use base64::Engine;
use kapi_machinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_port_num, ErrorList, FieldError, FieldPath,
};
use serde_json::Value;

use super::types::Crd;

const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// `spec.conversion` (`path` is `spec.conversion`).
pub fn validate_conversion(crd: &Crd, path: &FieldPath) -> ErrorList {
    let Some(conv) = &crd.spec.conversion else {
        return Vec::new();
    };
    let mut errs = ErrorList::new();
    let webhook = conv.webhook.as_ref().filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions: Vec<&str> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    let cc_path = path.child("webhookClientConfig");
    match conv.strategy.as_str() {
        "Webhook" => {
            match client {
                None => errs.push(FieldError::required(
                    &cc_path,
                    "required when strategy is set to Webhook",
                )),
                Some(cc) => errs.extend(validate_client_config(cc, &cc_path)),
            }
            errs.extend(validate_review_versions(
                &versions,
                &path.child("conversionReviewVersions"),
            ));
        }
        strategy => {
            if strategy != "None" {
                errs.push(FieldError::not_supported(
                    &path.child("strategy"),
                    strategy.to_owned(),
                    &["None", "Webhook"],
                ));
            }
            if client.is_some() {
                errs.push(FieldError::forbidden(
                    &cc_path,
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !versions.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("conversionReviewVersions"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
    }
    errs
}

fn validate_client_config(cc: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let url = cc.get("url").filter(|u| !u.is_null());
    let service = cc.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => {
            errs.extend(validate_url(url.as_str().unwrap_or(""), &path.child("url")))
        }
        (None, Some(svc)) => errs.extend(validate_service(svc, &path.child("service"))),
        _ => errs.push(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
    }
    if let Some(ca) = cc.get("caBundle").and_then(Value::as_str) {
        if let Err(e) = parse_ca_bundle(ca) {
            errs.push(FieldError::invalid(&path.child("caBundle"), ca, e));
        }
    }
    errs
}

/// The certificates of a `caBundle` (base64 of PEM); an empty one is allowed.
fn parse_ca_bundle(ca: &str) -> Result<(), String> {
    if ca.is_empty() {
        return Ok(());
    }
    let none = || "data does not contain any valid RSA or ECDSA certificates".to_owned();
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca)
        .map_err(|_| none())?;
    let text = String::from_utf8(pem).map_err(|_| none())?;
    if text.contains("-----BEGIN CERTIFICATE-----") && text.contains("-----END CERTIFICATE-----") {
        Ok(())
    } else {
        Err(none())
    }
}

/// Upstream's `ValidateWebhookURL` with https forced.
fn validate_url(url: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme,
            format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if url.contains("://") {
        rest.split('/').next().unwrap_or("")
    } else {
        ""
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be provided{URL_FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// Upstream's `ValidateWebhookService`.
fn validate_service(svc: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
    if s("name").is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if s("namespace").is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let bad_port = is_valid_port_num(port);
    if !bad_port.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            format!("port is not valid: {}", bad_port.join(", ")),
        ));
    }
    let url_path = s("path");
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    let path_field = path.child("path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &path_field,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(
            &path_field,
            url_path,
            "must start with a '/'",
        ));
    }
    let check = url_path.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &path_field,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &path_field,
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

fn validate_review_versions(versions: &[&str], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut seen = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            errs.push(FieldError::invalid(&path.index(i), *v, "duplicate version"));
            continue;
        }
        seen.push(v);
        for e in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), *v, e));
        }
    }
    if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        errs.push(FieldError::invalid(
            path,
            Value::from(versions.to_vec()),
            "must include at least one of v1, v1beta1",
        ));
    }
    errs
}

/// Keywords upstream allows at the root of a schema whose version has the
/// status subresource (its Go field names, in its order).
const ROOT_ALLOWED: [(&str, &str); 22] = [
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("required", "Required"),
    ("items", "Items"),
    ("properties", "Properties"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-validations", "XValidations"),
];

/// The root of `schema` when its version has the status subresource
/// (`path` is the version's `schema`).
pub fn validate_status_root(schema: &Value, path: &FieldPath) -> ErrorList {
    let Some(root) = schema.as_object() else {
        return Vec::new();
    };
    let zero = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    };
    for (key, value) in root {
        if zero(value) {
            continue;
        }
        if key == "type" {
            if value.as_str() != Some("object") {
                return vec![FieldError::invalid(
                    &path.child("openAPIV3Schema.type"),
                    value.clone(),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                )];
            }
            continue;
        }
        if !ROOT_ALLOWED.iter().any(|(k, _)| k == key) {
            let names: Vec<&str> = ROOT_ALLOWED.iter().map(|(_, go)| *go).collect();
            return vec![FieldError::invalid(
                &path.child("openAPIV3Schema"),
                schema.clone(),
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    names.join(" ")
                ),
            )];
        }
    }
    Vec::new()
}
