//! First-start objects, as kube-apiserver creates them: the namespaces `default`,
//! `kube-system`, `kube-public`, `kube-node-lease`, and the `default/kubernetes`
//! Service on the first address of the service range. Idempotent: existing
//! objects are left alone.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::WriteOptions;
use serde_json::json;

use crate::Server;

pub async fn run(srv: &Server) -> Result<(), ApiError> {
    let namespaces = srv
        .apis
        .lookup("", "v1", "namespaces")
        .expect("namespaces served");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        ignore_exists(namespaces.store.create(obj, &WriteOptions::default()).await)?;
    }
    let services = srv
        .apis
        .lookup("", "v1", "services")
        .expect("services served");
    let svc = crate::controllers::kubernetes_service_object(srv);
    ignore_exists(services.store.create(svc, &WriteOptions::default()).await)?;
    Ok(())
}

fn ignore_exists<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}
