//! The `certificates.k8s.io/v1` group: certificatesigningrequests with the
//! `approval` and `status` subresources — request parsing and signature check,
//! usages, signer names, condition rules, an immutable spec (the main resource
//! cannot change it, as upstream silently keeps the stored one), and the
//! `NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION` table.
//!
//! Invariants: the requestor fields (`spec.username`, `uid`, `groups`, `extra`)
//! are the authenticated user's, filled by the server's admission (strategies
//! never see the request); `approval` changes only `status.conditions`;
//! `status` may neither add nor remove Approved/Denied.
//!
//! Layout: `validation.rs` holds the rules; this file the strategy and table.

mod validation;

use kapi_machinery::validation::ErrorList;
use kapi_registry::meta::now_rfc3339;
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::table::{
    age_cell, age_column, human_duration, name_cell, name_column, string_column,
};
use crate::core::util::{arr_at, for_each_item, i64_at, set_default_str, str_at};

pub use validation::{validate_signer_name, VALID_USAGES};

pub const GROUP: &str = "certificates.k8s.io";

pub struct CertificateSigningRequestStrategy;

/// Upstream `populateConditionTimestamps`: new conditions get `now`; a condition
/// whose type and status already existed keeps its transition time.
fn populate_condition_timestamps(new: &mut Value, old: &Value) {
    let now = now_rfc3339();
    let old_conditions = arr_at(old, "/status/conditions").to_vec();
    let Some(status) = new.get_mut("status") else {
        return;
    };
    for_each_item(status, "conditions", |c| {
        if str_at(c, "/lastUpdateTime").is_empty() {
            c["lastUpdateTime"] = now.clone().into();
        }
        if str_at(c, "/lastTransitionTime").is_empty() {
            let kept = old_conditions.iter().find(|o| {
                str_at(o, "/type") == str_at(c, "/type")
                    && str_at(o, "/status") == str_at(c, "/status")
                    && !str_at(o, "/lastTransitionTime").is_empty()
            });
            c["lastTransitionTime"] = match kept {
                Some(o) => o["lastTransitionTime"].clone(),
                None => now.clone().into(),
            };
        }
    });
}

/// Upstream `extractCSRStatus`.
pub fn condition_summary(obj: &Value) -> String {
    let has = |t: &str| {
        arr_at(obj, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == t)
    };
    let mut out = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        out.push_str(",Failed");
    }
    if !str_at(obj, "/status/certificate").is_empty() {
        out.push_str(",Issued");
    }
    out
}

impl Strategy for CertificateSigningRequestStrategy {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }

    /// Upstream `SetDefaults_CertificateSigningRequestCondition`.
    fn default(&self, obj: &mut Value) {
        if let Some(status) = obj.get_mut("status") {
            for_each_item(status, "conditions", |c| {
                set_default_str(c, "status", "True")
            });
        }
    }

    /// The spec is fixed at creation; status changes go through subresources.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        match old.get("spec") {
            Some(spec) => new["spec"] = spec.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("spec");
                }
            }
        }
    }

    fn prepare_for_subresource_update(&self, _sub: &str, new: &mut Value, old: &Value) {
        self.prepare_for_update(new, old);
        populate_condition_timestamps(new, old);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validation::validate_csr(obj)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> ErrorList {
        validation::validate_csr(new)
    }

    fn validate_subresource_update(&self, sub: &str, new: &Value, old: &Value) -> ErrorList {
        let mut errs = validation::validate_csr(new);
        errs.extend(match sub {
            "approval" => validation::approval_update(new, old),
            _ => validation::status_update(new, old),
        });
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            age_column(),
            string_column("SignerName", "signerName indicates the requested signer, and is a qualified name."),
            string_column("Requestor", "username contains the name of the user that created the CertificateSigningRequest. Populated by the API server on creation and immutable."),
            string_column("RequestedDuration", "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration."),
            string_column("Condition", "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\"."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let duration = match i64_at(obj, "/spec/expirationSeconds") {
            Some(secs) => human_duration(secs),
            None => "<none>".to_string(),
        };
        vec![
            name_cell(obj),
            age_cell(obj),
            json!(str_at(obj, "/spec/signerName")),
            json!(str_at(obj, "/spec/username")),
            json!(duration),
            json!(condition_summary(obj)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_cells() {
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "example.com/s", "username": "alice", "expirationSeconds": 3600},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "AA=="}});
        let cells = CertificateSigningRequestStrategy.cells(&csr);
        assert_eq!(cells[3], "alice");
        assert_eq!(cells[4], "60m");
        assert_eq!(cells[5], "Approved,Issued");
        assert_eq!(condition_summary(&json!({})), "Pending");
    }

    #[test]
    fn approval_keeps_spec_and_stamps_conditions() {
        let old = json!({"spec": {"signerName": "a/b"}, "status": {}});
        let mut new = json!({"spec": {"signerName": "x/y"}, "status": {"conditions": [{"type": "Approved"}]}});
        CertificateSigningRequestStrategy.default(&mut new);
        CertificateSigningRequestStrategy
            .prepare_for_subresource_update("approval", &mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        let c = &new["status"]["conditions"][0];
        assert_eq!(c["status"], "True");
        assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());
    }
}
