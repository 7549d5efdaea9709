//! Request bodies: upstream's 3 MiB limit and reading a body under it.

use axum::body::Body;
use kapi_machinery::status::ApiError;

/// Request bodies above this are refused with 413, as upstream's 3 MiB limit.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The whole body, or 413 when it is larger than [`MAX_BODY`].
pub async fn read_body(body: Body) -> Result<bytes::Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::request_entity_too_large(format!("limit is {MAX_BODY}")))
}
