//! Admission webhooks (MutatingAdmissionWebhook, ValidatingAdmissionWebhook) and
//! what ValidatingAdmissionPolicies share with them, as upstream's
//! `admission/plugin/webhook`: the request attributes they see ([`Attrs`]),
//! matching (`rules.rs`), CEL (`cel.rs`, with the `authorizer` library in
//! `cel_authz.rs` and lazy policy variables in `cel_vars.rs`), the HTTPS client (`client.rs`), the
//! AdmissionReview exchange (`review.rs`) and the two dispatchers
//! (`dispatch.rs`), and their places in the admission chain (`plugins.rs`).
//! Policies live in `policy/`.
//!
//! Configurations are read from the store (served from the watch cache) on every
//! request they could apply to, so a new webhook applies to the next request.

pub mod cel;
pub mod cel_authz;
pub mod cel_vars;
pub mod dispatch;
pub mod plugins;
pub mod review;
pub mod rules;

use serde_json::Value;

use kapi_auth::authn::UserInfo;

pub use kapi_admission::Operation;

/// One request as admission sees it. For a namespace itself, `namespace` is the
/// namespace's name, as upstream sets it.
#[derive(Debug, Clone)]
pub struct Attrs {
    pub operation: Operation,
    /// Group, version, resource.
    pub gvr: (String, String, String),
    /// Group, version, kind.
    pub gvk: (String, String, String),
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    /// CreateOptions / UpdateOptions / DeleteOptions (a patch's are UpdateOptions).
    pub options: Option<Value>,
    pub dry_run: bool,
    pub user: UserInfo,
}

/// What admission hands back besides success or a denial.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// `Warning` headers.
    pub warnings: Vec<String>,
    /// Audit annotations (key, value).
    pub annotations: Vec<(String, String)>,
}

/// A version 4 UUID (AdmissionReview request uids).
pub(crate) fn new_uid() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    // The system RNG failing leaves zeros, still a well-formed uid.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
