//! Deletes with admission (`Store::delete_admitted`): the delete's admission
//! runs inside the compare-and-swap loop, so an object changed between
//! admission and delete is admitted again as it is then (upstream's
//! `ValidateObjectFunc` in `Storage.Delete`), and a refusal on the newer
//! object leaves it in place.

use std::sync::Mutex;

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::admission::WriteAdmission;
use kapi_registry::store::options::{DeleteOptions, WriteOptions};
use kapi_registry::store::{DeleteOutcome, UpdateTarget};
use kapi_registry::Store;
use serde_json::{json, Value};

use crate::fixtures;
use crate::store::def;

/// Admission that changes the object once, on its first call (a concurrent
/// write), and refuses objects labelled `keep` when `refuse_keep`.
struct Racing {
    other: Store,
    refuse_keep: bool,
    seen: Mutex<Vec<Value>>,
}

#[async_trait]
impl WriteAdmission for Racing {
    async fn mutate(&self, _obj: &mut Value, _old: Option<&Value>) -> Result<(), ApiError> {
        Ok(())
    }
    async fn validate(&self, _obj: &mut Value, _old: Option<&mut Value>) -> Result<(), ApiError> {
        Ok(())
    }
    async fn admit_delete(&self, old: &Value, _grace: Option<i64>) -> Result<(), ApiError> {
        let first = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(old.clone());
            seen.len() == 1
        };
        if first {
            let opts = WriteOptions::default();
            self.other
                .update_with(Some("ns"), "x", UpdateTarget::Main, &opts, false, |cur| {
                    let mut o = cur.expect("exists").clone();
                    o["metadata"]["labels"] = json!({"keep": "yes"});
                    Ok(o)
                })
                .await?;
            return Ok(());
        }
        if self.refuse_keep && old.pointer("/metadata/labels/keep").is_some() {
            return Err(ApiError::bad_request("kept"));
        }
        Ok(())
    }
}

async fn setup(refuse_keep: bool) -> (fixtures::Fixture, Store, Racing) {
    let f = fixtures::embedded().await;
    let below = f.cache.backend().clone();
    let store = Store::new(def(), below.clone());
    let obj = json!({"metadata": {"name": "x", "namespace": "ns"}, "data": {"k": "v"}});
    store.create(obj, &WriteOptions::default()).await.unwrap();
    let racing = Racing {
        other: Store::new(def(), below),
        refuse_keep,
        seen: Mutex::default(),
    };
    (f, store, racing)
}

#[tokio::test]
async fn delete_admission_sees_the_object_changed_since() {
    let (_f, store, racing) = setup(true).await;
    let opts = DeleteOptions::default();
    let err = store
        .delete_admitted(Some("ns"), "x", &opts, &racing)
        .await
        .unwrap_err();
    assert_eq!(err.message, "kept");
    let seen = racing.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "admitted again after the conflicting write");
    assert!(seen[0].pointer("/metadata/labels/keep").is_none());
    assert_eq!(seen[1]["metadata"]["labels"]["keep"], "yes");
    let still = store.get(Some("ns"), "x", None).await.unwrap();
    assert_eq!(still["metadata"]["labels"]["keep"], "yes");
}

#[tokio::test]
async fn delete_admitted_deletes_the_latest_object() {
    let (_f, store, racing) = setup(false).await;
    let opts = DeleteOptions::default();
    let out = store
        .delete_admitted(Some("ns"), "x", &opts, &racing)
        .await
        .unwrap();
    let DeleteOutcome::Deleted(gone) = out else {
        panic!("deleted at once: {out:?}");
    };
    assert_eq!(gone["metadata"]["labels"]["keep"], "yes");
    assert_eq!(racing.seen.lock().unwrap().len(), 2);
    assert!(store.get(Some("ns"), "x", None).await.is_err());

    // Dry-run admits and keeps the object.
    let obj = json!({"metadata": {"name": "y", "namespace": "ns"}});
    store.create(obj, &WriteOptions::default()).await.unwrap();
    let dry = DeleteOptions {
        dry_run: true,
        ..DeleteOptions::default()
    };
    store
        .delete_admitted(Some("ns"), "y", &dry, &racing)
        .await
        .unwrap();
    assert_eq!(racing.seen.lock().unwrap().len(), 3);
    store.get(Some("ns"), "y", None).await.expect("kept");
}
