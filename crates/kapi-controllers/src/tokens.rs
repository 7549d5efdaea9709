//! The service account tokens controller, as kube-controller-manager's
//! (`serviceaccount-token-controller`): a Secret of type
//! `kubernetes.io/service-account-token` naming an account in its
//! `kubernetes.io/service-account.name` annotation gets `data.token` (a legacy
//! JWT signed with the server's service account key, see
//! `authn/serviceaccount.rs`), `data["ca.crt"]` (the cluster CA, as the root-CA
//! publisher carries it) and `data.namespace`, and the account's uid in
//! `kubernetes.io/service-account.uid`. Only what is missing is filled: a token
//! already there is kept, a different CA is replaced.
//!
//! As upstream: a token secret whose account does not exist (by name, and by
//! uid when the annotation has one — checked against the cache, then the
//! store) is deleted, with a uid precondition; when an account is deleted,
//! every token secret naming it goes too; when a token secret goes, it is
//! dropped from its account's `secrets` list. A secret is filled only when it
//! is still the version the sync looked at — a newer one brings its own event.
//! A failed sync is retried with a growing delay (5 ms doubling), at most
//! [`MAX_RETRIES`] times, then dropped until the object changes again.

use kapi_registry::store::options::WriteOptions;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, ListOptions, Preconditions};
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::CONTROLLER_MANAGER;
use crate::Context;
use kapi_client::informer::{self, Change};
use kapi_client::queue::WorkQueue;

const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const NAME_KEY: &str = "kubernetes.io/service-account.name";
const UID_KEY: &str = "kubernetes.io/service-account.uid";
/// Upstream `TokensControllerOptions.MaxRetries`' default.
const MAX_RETRIES: u32 = 10;
/// Workers (upstream's `--concurrent-serviceaccount-token-syncs` defaults to
/// 5; two keep one slow write from blocking the rest in-process).
const WORKERS: usize = 2;

/// What the queue holds: enough to act even when the object is gone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// A deleted service account: its token secrets go.
    Account {
        ns: String,
        name: String,
        uid: String,
    },
    /// A token secret, with the account (and uid, when annotated) it names.
    Secret {
        ns: String,
        name: String,
        uid: String,
        sa_name: String,
        sa_uid: String,
    },
}

/// Start the controller; `ca` is the cluster CA bundle (PEM) put in every
/// token secret (none: `ca.crt` is left alone).
pub fn spawn(cx: Arc<Context>, ca: Option<String>) {
    let (Some(accounts), Some(secrets)) = (
        cx.apis.lookup("", "v1", "serviceaccounts"),
        cx.apis.lookup("", "v1", "secrets"),
    ) else {
        return;
    };
    let queue = WorkQueue::<Key>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(accounts, FieldSelector::everything(), tx.clone());
    informer::spawn(
        secrets,
        FieldSelector::one_term_equal("type", TOKEN_TYPE),
        tx,
    );
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let (obj, deleted) = match &ev.change {
                Change::Upsert(o) => (o, false),
                Change::Deleted(o) => (o, true),
                Change::Synced => continue,
            };
            if let Some(key) = key_of(&ev.entry.def.resource, obj, deleted) {
                q.add(key);
            }
        }
    });
    let ca = Arc::new(ca.map(|c| b64(c.as_bytes())));
    let failures: Arc<Mutex<HashMap<Key, u32>>> = Arc::default();
    for _ in 0..WORKERS {
        let (cx, queue, ca, failures) = (cx.clone(), queue.clone(), ca.clone(), failures.clone());
        tokio::spawn(async move {
            loop {
                let key = queue.get().await;
                let retry = sync(&cx, ca.as_deref(), &key).await;
                queue.done(&key);
                let mut f = failures.lock().expect("failures lock");
                if !retry {
                    f.remove(&key);
                    continue;
                }
                let n = f.entry(key.clone()).or_insert(0);
                *n += 1;
                if *n > MAX_RETRIES {
                    tracing::warn!(
                        ?key,
                        "tokens controller gives up after {MAX_RETRIES} retries"
                    );
                    f.remove(&key);
                    continue;
                }
                let delay = Duration::from_millis(5 << (*n - 1));
                queue.add_after(key, delay);
            }
        });
    }
}

/// The queue key for an event: deleted accounts, and token secrets naming one.
fn key_of(resource: &str, obj: &Value, deleted: bool) -> Option<Key> {
    let ns = meta::namespace(obj)?.to_owned();
    let name = meta::name(obj).to_owned();
    let uid = meta::uid(obj)?.to_owned();
    if resource == "serviceaccounts" {
        return deleted.then_some(Key::Account { ns, name, uid });
    }
    if obj.get("type").and_then(Value::as_str) != Some(TOKEN_TYPE) {
        return None;
    }
    let sa_name = annotation(obj, NAME_KEY).to_owned();
    if sa_name.is_empty() {
        return None;
    }
    let sa_uid = annotation(obj, UID_KEY).to_owned();
    Some(Key::Secret {
        ns,
        name,
        uid,
        sa_name,
        sa_uid,
    })
}

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Whether `secret` is a token of the account `name` (with `uid`), as
/// upstream's `IsServiceAccountToken`: an unannotated uid matches any.
fn is_token_of(secret: &Value, name: &str, uid: &str) -> bool {
    let annotated = annotation(secret, UID_KEY);
    secret.get("type").and_then(Value::as_str) == Some(TOKEN_TYPE)
        && annotation(secret, NAME_KEY) == name
        && (annotated.is_empty() || annotated == uid)
}

/// Handle one key; `true` asks for a retry.
async fn sync(cx: &Context, ca: Option<&str>, key: &Key) -> bool {
    let result = match key {
        Key::Account { ns, name, uid } => sync_account(cx, ns, name, uid).await,
        Key::Secret {
            ns,
            name,
            uid,
            sa_name,
            sa_uid,
        } => sync_secret(cx, ca, ns, name, uid, sa_name, sa_uid).await,
    };
    match result {
        Ok(()) => false,
        Err(Failure::Retry(e)) => {
            tracing::debug!(?key, error = %e, "tokens controller retries");
            true
        }
        Err(Failure::Final(e)) => {
            tracing::debug!(?key, error = %e, "tokens controller");
            false
        }
    }
}

/// A failed sync: worth retrying, or not (upstream's `retriable`).
enum Failure {
    Retry(ApiError),
    Final(ApiError),
}

/// `Retry` for everything but "gone" and "changed meanwhile" (an event follows).
fn classify(e: ApiError) -> Failure {
    if e.is_not_found() || e.is_conflict() {
        Failure::Final(e)
    } else {
        Failure::Retry(e)
    }
}

/// `name` of `resource` (core/v1) with `uid` when given: from the watch cache,
/// and with `live` from the store when the cache does not have it (yet).
async fn get(
    cx: &Context,
    resource: &str,
    ns: &str,
    name: &str,
    uid: &str,
    live: bool,
) -> Result<Option<Value>, ApiError> {
    let entry = cx
        .apis
        .lookup("", "v1", resource)
        .ok_or_else(|| ApiError::internal(format!("{resource} are not served")))?;
    let matches = |o: &Value| uid.is_empty() || meta::uid(o) == Some(uid);
    match entry.store.get(Some(ns), name, Some("0")).await {
        Ok(o) if matches(&o) => return Ok(Some(o)),
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    if !live {
        return Ok(None);
    }
    match entry.store.get(Some(ns), name, None).await {
        Ok(o) => Ok(matches(&o).then_some(o)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// A deleted account: delete the token secrets that name it.
async fn sync_account(cx: &Context, ns: &str, name: &str, uid: &str) -> Result<(), Failure> {
    if get(cx, "serviceaccounts", ns, name, uid, false)
        .await
        .map_err(Failure::Retry)?
        .is_some()
    {
        return Ok(());
    }
    let secrets = cx
        .apis
        .lookup("", "v1", "secrets")
        .ok_or_else(|| Failure::Final(ApiError::internal("secrets are not served")))?;
    let opts = ListOptions {
        field: FieldSelector::one_term_equal("type", TOKEN_TYPE),
        ..ListOptions::default()
    };
    let list = secrets
        .store
        .list(Some(ns), &opts)
        .await
        .map_err(Failure::Final)?;
    let mut retry = None;
    for secret in list.items.iter().filter(|s| is_token_of(s, name, uid)) {
        let secret_uid = meta::uid(secret).unwrap_or("");
        if let Err(Failure::Retry(e)) = delete_token(cx, ns, meta::name(secret), secret_uid).await {
            retry = Some(e);
        }
    }
    retry.map_or(Ok(()), |e| Err(Failure::Retry(e)))
}

async fn sync_secret(
    cx: &Context,
    ca: Option<&str>,
    ns: &str,
    name: &str,
    uid: &str,
    sa_name: &str,
    sa_uid: &str,
) -> Result<(), Failure> {
    let secret = get(cx, "secrets", ns, name, uid, false)
        .await
        .map_err(Failure::Retry)?;
    let Some(secret) = secret else {
        // Gone: the account (if it is still there) no longer lists it.
        return remove_reference(cx, ns, sa_name, sa_uid, name)
            .await
            .map_err(Failure::Final);
    };
    match get(cx, "serviceaccounts", ns, sa_name, sa_uid, true)
        .await
        .map_err(Failure::Retry)?
    {
        None => delete_token(cx, ns, name, uid).await,
        Some(account) => fill(cx, ca, &account, &secret).await,
    }
}

/// Delete a token secret if it still has `uid`.
async fn delete_token(cx: &Context, ns: &str, name: &str, uid: &str) -> Result<(), Failure> {
    let secrets = cx
        .apis
        .lookup("", "v1", "secrets")
        .ok_or_else(|| Failure::Final(ApiError::internal("secrets are not served")))?;
    let opts = DeleteOptions {
        preconditions: Preconditions {
            uid: (!uid.is_empty()).then(|| uid.to_owned()),
            resource_version: None,
        },
        ..DeleteOptions::default()
    };
    tracing::debug!(
        namespace = ns,
        name,
        "service account does not exist, deleting token"
    );
    secrets
        .store
        .delete(Some(ns), name, &opts)
        .await
        .map(|_| ())
        .map_err(classify)
}

/// What `secret` lacks: `(ca.crt, namespace, token)`.
fn needs(secret: &Value, ca: Option<&str>) -> (bool, bool, bool) {
    let data = |k: &str| {
        secret
            .get("data")
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let ca_needed = ca.is_some_and(|ca| !ca.is_empty() && data("ca.crt") != ca);
    (
        ca_needed,
        data("namespace").is_empty(),
        data("token").is_empty(),
    )
}

/// Fill what `cached` lacks, on the stored secret if it is still that version.
async fn fill(
    cx: &Context,
    ca: Option<&str>,
    account: &Value,
    cached: &Value,
) -> Result<(), Failure> {
    if needs(cached, ca) == (false, false, false) {
        return Ok(());
    }
    let secrets = cx
        .apis
        .lookup("", "v1", "secrets")
        .ok_or_else(|| Failure::Final(ApiError::internal("secrets are not served")))?;
    let ns = meta::namespace(cached).unwrap_or("").to_owned();
    let name = meta::name(cached).to_owned();
    let version = meta::resource_version(cached).map(str::to_owned);
    let (sa_name, sa_uid) = (meta::name(account), meta::uid(account).unwrap_or(""));
    // Signed before the update (an external signer answers asynchronously);
    // used only when the stored secret still lacks a token.
    let token = if needs(cached, ca).2 {
        let signed = cx
            .service_accounts
            .legacy_token(&ns, (sa_name, sa_uid), &name)
            .await;
        Some(signed.map_err(|e| Failure::Final(ApiError::internal(e)))?)
    } else {
        None
    };
    let gr = secrets.def.group_resource();
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let updated = secrets
        .store
        .update_with(Some(&ns), &name, UpdateTarget::Main, &opts, false, |cur| {
            let stale = || ApiError::optimistic_lock_conflict(gr.clone(), &name);
            let cur = cur.ok_or_else(stale)?;
            // Changed since the sync looked: its own event comes.
            if meta::resource_version(cur).map(str::to_owned) != version
                || !is_token_of(cur, sa_name, sa_uid)
            {
                return Err(stale());
            }
            let (ca_needed, ns_needed, token_needed) = needs(cur, ca);
            let mut secret = cur.clone();
            let root = secret.as_object_mut().expect("objects");
            let data = root.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            if let (true, Some(ca)) = (ca_needed, ca) {
                data["ca.crt"] = json!(ca);
            }
            if ns_needed {
                data["namespace"] = json!(b64(ns.as_bytes()));
            }
            if token_needed {
                let Some(token) = &token else {
                    return Err(stale());
                };
                data["token"] = json!(b64(token.as_bytes()));
            }
            let m = meta::meta_mut(&mut secret);
            let annotations = m.entry("annotations").or_insert_with(|| json!({}));
            if !annotations.is_object() {
                *annotations = json!({});
            }
            annotations[NAME_KEY] = json!(sa_name);
            annotations[UID_KEY] = json!(sa_uid);
            Ok(secret)
        })
        .await;
    updated.map(|_| ()).map_err(classify)
}

/// Drop `secret` from the `secrets` of the account `(sa_name, sa_uid)`.
async fn remove_reference(
    cx: &Context,
    ns: &str,
    sa_name: &str,
    sa_uid: &str,
    secret: &str,
) -> Result<(), ApiError> {
    let Some(account) = get(cx, "serviceaccounts", ns, sa_name, sa_uid, false).await? else {
        return Ok(());
    };
    let listed = |a: &Value| {
        a.get("secrets").and_then(Value::as_array).is_some_and(|l| {
            l.iter()
                .any(|r| r.get("name").and_then(Value::as_str) == Some(secret))
        })
    };
    if !listed(&account) {
        return Ok(());
    }
    let accounts = cx
        .apis
        .lookup("", "v1", "serviceaccounts")
        .ok_or_else(|| ApiError::internal("serviceaccounts are not served"))?;
    let gr = accounts.def.group_resource();
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let uid = meta::uid(&account).unwrap_or("").to_owned();
    let updated = accounts
        .store
        .update_with(Some(ns), sa_name, UpdateTarget::Main, &opts, false, |cur| {
            let stale = || ApiError::optimistic_lock_conflict(gr.clone(), sa_name);
            let cur = cur.ok_or_else(stale)?;
            if meta::uid(cur) != Some(uid.as_str()) || !listed(cur) {
                return Err(stale());
            }
            let mut sa = cur.clone();
            if let Some(list) = sa.get_mut("secrets").and_then(Value::as_array_mut) {
                list.retain(|r| r.get("name").and_then(Value::as_str) != Some(secret));
            }
            Ok(sa)
        })
        .await;
    match updated {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(annotations: Value, data: Value) -> Value {
        json!({"metadata": {"name": "t", "namespace": "ns", "uid": "s1", "annotations": annotations},
               "type": TOKEN_TYPE, "data": data})
    }

    #[test]
    fn token_ownership_as_upstream() {
        let named = secret(json!({NAME_KEY: "robot"}), json!({}));
        assert!(is_token_of(&named, "robot", "u1"));
        assert!(!is_token_of(&named, "other", "u1"));
        let pinned = secret(json!({NAME_KEY: "robot", UID_KEY: "u1"}), json!({}));
        assert!(is_token_of(&pinned, "robot", "u1"));
        assert!(!is_token_of(&pinned, "robot", "u2"));
        let mut opaque = pinned.clone();
        opaque["type"] = json!("Opaque");
        assert!(!is_token_of(&opaque, "robot", "u1"));
    }

    #[test]
    fn only_missing_data_is_needed() {
        let ca = b64(b"CA");
        let empty = secret(json!({NAME_KEY: "robot"}), json!({}));
        assert_eq!(needs(&empty, Some(&ca)), (true, true, true));
        assert_eq!(needs(&empty, None), (false, true, true));
        let full = secret(
            json!({NAME_KEY: "robot"}),
            json!({"ca.crt": ca, "namespace": b64(b"ns"), "token": b64(b"x")}),
        );
        assert_eq!(needs(&full, Some(&ca)), (false, false, false));
        assert_eq!(needs(&full, Some(&b64(b"other CA"))), (true, false, false));
    }

    #[test]
    fn keys_for_deleted_accounts_and_named_token_secrets() {
        let sa = json!({"metadata": {"name": "robot", "namespace": "ns", "uid": "u1"}});
        assert_eq!(key_of("serviceaccounts", &sa, false), None);
        assert!(matches!(
            key_of("serviceaccounts", &sa, true),
            Some(Key::Account { .. })
        ));
        let unnamed = secret(json!({}), json!({}));
        assert_eq!(key_of("secrets", &unnamed, false), None);
        let named = secret(json!({NAME_KEY: "robot"}), json!({}));
        assert_eq!(
            key_of("secrets", &named, true),
            Some(Key::Secret {
                ns: "ns".into(),
                name: "t".into(),
                uid: "s1".into(),
                sa_name: "robot".into(),
                sa_uid: String::new()
            })
        );
    }
}
