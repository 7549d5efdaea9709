//! The ServiceAccounts controller, as kube-controller-manager's: every active
//! namespace has a ServiceAccount `default`; deleted, it comes back.

use kapi_registry::store::options::WriteOptions;
use std::sync::Arc;

use kapi_machinery::status::ApiError;
use serde_json::json;

use super::{ignore_exists, perns, CONTROLLER_MANAGER};
use crate::Context;

const NAME: &str = "default";

pub fn spawn(cx: Arc<Context>) {
    perns::spawn(cx, "serviceaccounts", NAME, ensure);
}

async fn ensure(cx: Arc<Context>, ns: String) -> Result<(), ApiError> {
    let accounts = cx
        .apis
        .lookup("", "v1", "serviceaccounts")
        .ok_or_else(|| ApiError::internal("serviceaccounts are not served"))?;
    match accounts.store.get(Some(&ns), NAME, None).await {
        Ok(_) => return Ok(()),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": NAME, "namespace": ns}});
    let created = accounts
        .store
        .create(sa, &WriteOptions::for_manager(CONTROLLER_MANAGER))
        .await;
    ignore_exists(created)
}
