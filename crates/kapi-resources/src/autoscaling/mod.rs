//! The `autoscaling` group: HorizontalPodAutoscalers served as `v2` (stored, and
//! preferred in discovery, as upstream) and `v1`, one set of objects converted on
//! every read and write through [`HpaConversion`].
//!
//! Where to look next: `convert.rs` (the v1 ⇄ v2 mapping), `hpa.rs` (strategies),
//! `kapi_registry::Conversion` (where the store applies it).

pub mod convert;
pub mod hpa;

pub use hpa::{HpaV1Strategy, HpaV2Strategy};

use kapi_registry::Conversion;
use serde_json::Value;

/// HorizontalPodAutoscalers are stored as `autoscaling/v2`.
pub struct HpaConversion;

impl Conversion for HpaConversion {
    fn storage_api_version(&self) -> &str {
        "autoscaling/v2"
    }

    fn convert(&self, obj: Value, api_version: &str) -> Value {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        match (from, api_version) {
            ("autoscaling/v1", "autoscaling/v2") => convert::v1_to_v2(obj),
            ("autoscaling/v2", "autoscaling/v1") => convert::v2_to_v1(obj),
            _ => obj,
        }
    }
}
