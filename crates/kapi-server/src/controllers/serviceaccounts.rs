//! The ServiceAccounts controller, as kube-controller-manager's: every active
//! namespace has a ServiceAccount `default`; deleted, it comes back.

use kapi_registry::store::options::WriteOptions;
use std::sync::Arc;

use kapi_machinery::status::ApiError;
use serde_json::json;

use super::{ignore_exists, perns, CONTROLLER_MANAGER};
use crate::Server;

const NAME: &str = "default";

pub fn spawn(srv: Arc<Server>) {
    perns::spawn(srv, "serviceaccounts", NAME, ensure);
}

async fn ensure(srv: Arc<Server>, ns: String) -> Result<(), ApiError> {
    let accounts = srv
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
