//! CertificateSigningRequest validation, as upstream's
//! `pkg/apis/certificates/validation`: the PEM `CERTIFICATE REQUEST` in
//! `spec.request` must parse and carry a valid self-signature; usages are
//! required, known and unique; the signer name is `domain/path`; conditions
//! follow the Approved/Denied rules; subresource updates may not drop them.
//!
//! The request is checked with `x509-parser` (signature via ring), so parse
//! error texts are that crate's, not Go's `crypto/x509` wording.

use std::collections::BTreeSet;

use base64::Engine as _;
use kapi_machinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, ErrorList, FieldError, FieldPath,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
};
use serde_json::Value;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use crate::core::util::{arr_at, i64_at, str_at};

/// Upstream `allValidUsages`, sorted as `sets.List` returns them.
pub const VALID_USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Decode a JSON `[]byte` (base64) holding PEM, returning the first block's
/// label and DER bytes.
fn pem_block(field: &str) -> Result<(String, Vec<u8>), String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(field)
        .map_err(|e| format!("illegal base64 data: {e}"))?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&raw)
        .map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    Ok((pem.label, pem.contents))
}

/// Upstream `validateCSR`: parse, then check the self-signature.
fn check_request(request: &str) -> Result<(), String> {
    let (label, der) = pem_block(request)?;
    if label != "CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    let (_, csr) = X509CertificationRequest::from_der(&der).map_err(|e| format!("x509: {e}"))?;
    csr.verify_signature()
        .map_err(|e| format!("x509: signature verification failed: {e}"))
}

/// Upstream `ValidateSignerName`.
pub fn validate_signer_name(path: &FieldPath, name: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() != 2 {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    }
    let (domain, rest) = (segments[0], segments[1]);
    if domain.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(FieldError::too_long(
            path,
            domain,
            DNS1123_SUBDOMAIN_MAX_LENGTH,
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, msgs)) = labels
        .iter()
        .map(|l| (l, is_dns1123_label(l)))
        .find(|(_, m)| !m.is_empty())
    {
        for msg in msgs {
            errs.push(FieldError::invalid(
                path,
                domain,
                format!("validating label {label:?}: {msg}"),
            ));
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    let parts = rest.split('.');
    if let Some((part, msgs)) = parts
        .map(|p| (p, is_dns1123_subdomain(p)))
        .find(|(_, m)| !m.is_empty())
    {
        for msg in msgs {
            errs.push(FieldError::invalid(
                path,
                rest,
                format!("validating component {part:?}: {msg}"),
            ));
        }
    }
    let max_rest = DNS1123_SUBDOMAIN_MAX_LENGTH.saturating_sub(domain.len() + 1);
    if rest.len() > max_rest {
        errs.push(FieldError::too_long(path, rest, max_rest));
    }
    errs
}

fn validate_conditions(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("status").child("conditions");
    let mut seen = BTreeSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in arr_at(obj, "/status/conditions").iter().enumerate() {
        let p = path.index(i);
        let kind = str_at(c, "/type");
        if kind.is_empty() {
            errs.push(FieldError::required(&p.child("type"), ""));
        }
        let status = str_at(c, "/status");
        if !["True", "False", "Unknown"].contains(&status) {
            errs.push(FieldError::not_supported(
                &p.child("status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
        match kind {
            "Approved" => {
                approved = true;
                if denied {
                    errs.push(FieldError::invalid(
                        &p.child("type"),
                        kind,
                        "Approved condition may not be set once the Denied condition is set",
                    ));
                }
            }
            "Denied" => {
                denied = true;
                if approved {
                    errs.push(FieldError::invalid(
                        &p.child("type"),
                        kind,
                        "Denied condition may not be set once the Approved condition is set",
                    ));
                }
            }
            _ => {}
        }
        if !seen.insert(kind) {
            errs.push(FieldError::duplicate(&p.child("type"), kind));
        }
    }
    errs
}

/// Upstream `validateCertificateSigningRequest` with the v1 options.
pub fn validate_csr(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = FieldPath::new("spec");
    let request = str_at(obj, "/spec/request");
    if let Err(msg) = check_request(request) {
        errs.push(FieldError::invalid(&spec.child("request"), request, msg));
    }
    let usages = arr_at(obj, "/spec/usages");
    if usages.is_empty() {
        errs.push(FieldError::required(&spec.child("usages"), ""));
    }
    let mut seen = BTreeSet::new();
    for (i, u) in usages.iter().enumerate() {
        let usage = u.as_str().unwrap_or("");
        if !VALID_USAGES.contains(&usage) {
            errs.push(FieldError::not_supported(
                &spec.child("usages").index(i),
                usage,
                VALID_USAGES,
            ));
        }
        if !seen.insert(usage) {
            errs.push(FieldError::duplicate(&spec.child("usages").index(i), usage));
        }
    }
    let signer = str_at(obj, "/spec/signerName");
    if signer == LEGACY_SIGNER {
        errs.push(FieldError::invalid(
            &spec.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(&spec.child("signerName"), signer));
    }
    if let Some(secs) = i64_at(obj, "/spec/expirationSeconds").filter(|s| *s < 600) {
        errs.push(FieldError::invalid(
            &spec.child("expirationSeconds"),
            secs,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(validate_conditions(obj));
    errs
}

fn count(obj: &Value, kind: &str) -> usize {
    arr_at(obj, "/status/conditions")
        .iter()
        .filter(|c| str_at(c, "/type") == kind)
        .count()
}

/// Approval may add Approved/Denied but never remove them.
pub fn approval_update(new: &Value, old: &Value) -> ErrorList {
    ["Approved", "Denied"]
        .iter()
        .filter(|t| count(new, t) < count(old, t))
        .map(|t| {
            FieldError::forbidden(
                &FieldPath::new("status").child("conditions"),
                format!("updates may not remove a condition of type {t:?}"),
            )
        })
        .collect()
}

/// Status updates may neither add nor remove Approved/Denied, nor remove
/// Failed, nor change an issued certificate.
pub fn status_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("status").child("conditions");
    for t in ["Approved", "Denied"] {
        if count(new, t) > count(old, t) {
            errs.push(FieldError::forbidden(
                &path,
                format!("updates may not add a condition of type {t:?}"),
            ));
        }
    }
    for t in ["Approved", "Denied", "Failed"] {
        if count(new, t) < count(old, t) {
            errs.push(FieldError::forbidden(
                &path,
                format!("updates may not remove a condition of type {t:?}"),
            ));
        }
    }
    let (new_cert, old_cert) = (
        str_at(new, "/status/certificate"),
        str_at(old, "/status/certificate"),
    );
    if !old_cert.is_empty() && new_cert != old_cert {
        errs.push(FieldError::forbidden(
            &FieldPath::new("status").child("certificate"),
            "updates may not modify existing certificate content",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn signer_names() {
        let p = FieldPath::new("spec").child("signerName");
        assert!(validate_signer_name(&p, "example.com/my-signer").is_empty());
        assert_eq!(
            msgs(validate_signer_name(&p, "nope")),
            vec!["spec.signerName: Invalid value: \"nope\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
        );
        assert_eq!(
            msgs(validate_signer_name(&p, "example/x")),
            vec!["spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"]
        );
    }

    #[test]
    fn request_usages_and_conditions() {
        let csr = json!({"spec": {"request": "bm90IHBlbQ==", "usages": ["client auth", "client auth", "flying"],
            "signerName": "example.com/s", "expirationSeconds": 60},
            "status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        let errs = msgs(validate_csr(&csr));
        assert_eq!(errs[0], "spec.request: Invalid value: \"bm90IHBlbQ==\": PEM block type must be CERTIFICATE REQUEST");
        assert_eq!(errs[1], "spec.usages[1]: Duplicate value: \"client auth\"");
        assert!(errs[2].starts_with(
            "spec.usages[2]: Unsupported value: \"flying\": supported values: \"any\""
        ));
        assert_eq!(errs[3], "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)");
        assert_eq!(errs[4], "status.conditions[1].type: Invalid value: \"Denied\": Denied condition may not be set once the Approved condition is set");
    }

    #[test]
    fn subresource_rules() {
        let approved = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let pending = json!({"status": {}});
        assert_eq!(
            msgs(status_update(&approved, &pending)),
            vec!["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        assert_eq!(
            msgs(approval_update(&pending, &approved)),
            vec!["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
        );
        assert!(approval_update(&approved, &pending).is_empty());
    }
}
