//! The `storage.k8s.io/v1` group: storageclasses (`classes.rs`), csidrivers and
//! csinodes (`csi.rs`), csistoragecapacities and volumeattachments
//! (`attachments.rs`), with upstream's defaults, validation
//! (`pkg/apis/storage/validation`) and tables.
//!
//! This file holds the CSI driver-name rule every kind shares.

pub mod attachments;
pub mod classes;
pub mod csi;

pub use attachments::{CsiStorageCapacityStrategy, VolumeAttachmentStrategy};
pub use classes::StorageClassStrategy;
pub use csi::{CsiDriverStrategy, CsiNodeStrategy};

use kapi_machinery::validation::{is_dns1123_subdomain, ErrorList, FieldError, FieldPath};

pub const GROUP: &str = "storage.k8s.io";

/// Upstream `ValidateCSIDriverName`.
pub fn validate_csi_driver_name(name: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if name.len() > 63 {
        errs.push(FieldError::too_long(path, name, 63));
    }
    for msg in is_dns1123_subdomain(&name.to_lowercase()) {
        errs.push(FieldError::invalid(path, name, msg));
    }
    errs
}
