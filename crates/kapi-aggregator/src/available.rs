//! The `Available` condition of every APIService, as kube-aggregator's local
//! and remote availability controllers: a local APIService is always
//! available (reason `Local`); a remote one is checked — its Service exists
//! and listens on the port (`ServiceNotFound`, `ServicePortError`), has ready
//! endpoints (`EndpointsNotFound`, `MissingEndpoints`), and its server answers
//! `GET /apis/<group>/<version>` with a 2xx (`FailedDiscoveryCheck`) — then
//! `Passed`. The check runs on every change of the APIService, of its Service,
//! Endpoints or EndpointSlices, and every resync period (upstream 30 s).
//!
//! After a passed check the group-version's `APIResourceList` is fetched
//! again over the verified connection and kept for discovery (`discovery.rs`),
//! so remote groups show up in `/apis` and aggregated discovery and stay
//! (marked stale) while their server is down.
//!
//! Invariants: the condition's `lastTransitionTime` only moves when its
//! status does; a status write happens only when the condition changed; the
//! remote table (`Aggregator`) is updated before the status is written.

use kapi_registry::store::options::WriteOptions;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, StatusCode};
use base64::Engine as _;
use http_body_util::BodyExt;
use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::client::{self, ClientError};
use super::{condition, Remote};
use crate::Aggregator;
use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};
use kapi_client::service_resolver::{self, Endpoint, Routing};

const MANAGER: &str = "kube-apiserver";
/// How long the discovery check may take (upstream's client timeout).
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a discovery document read from an extension server.
const MAX_DISCOVERY: usize = 8 << 20;

/// What the check found.
struct Outcome {
    status: &'static str,
    reason: String,
    message: String,
}

impl Outcome {
    fn new(status: &'static str, reason: &str, message: impl Into<String>) -> Outcome {
        Outcome {
            status,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

type Known = Arc<Mutex<HashMap<String, Value>>>;

pub fn spawn(agg: Arc<Aggregator>) {
    let Some(apiservices) = agg
        .apis
        .lookup(super::discovery::GROUP, "v1", "apiservices")
    else {
        return;
    };
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(apiservices, FieldSelector::everything(), tx.clone());
    for (group, resource) in [
        ("", "services"),
        ("", "endpoints"),
        ("discovery.k8s.io", "endpointslices"),
    ] {
        if let Some(entry) = agg.apis.lookup(group, "v1", resource) {
            informer::spawn(entry, FieldSelector::everything(), tx.clone());
        }
    }
    drop(tx);
    let known: Known = Arc::default();
    let queue = WorkQueue::<String>::new();
    let (q, k) = (queue.clone(), known.clone());
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let resource = ev.entry.def.resource.as_str();
            let (obj, deleted) = match ev.change {
                Change::Upsert(obj) => (obj, false),
                Change::Deleted(obj) => (obj, true),
                Change::Synced => continue,
            };
            if resource == "apiservices" {
                let name = meta::name(&obj).to_owned();
                let mut known = k.lock().unwrap_or_else(PoisonError::into_inner);
                if deleted {
                    known.remove(&name);
                } else {
                    known.insert(name.clone(), obj);
                }
                q.add(name);
                continue;
            }
            let ns = meta::namespace(&obj).unwrap_or("");
            let svc = if resource == "endpointslices" {
                obj.pointer("/metadata/labels/kubernetes.io~1service-name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            } else {
                meta::name(&obj)
            };
            for name in referencing(&k, ns, svc) {
                q.add(name);
            }
        }
    });
    let (q, k, resync_agg) = (queue.clone(), known, agg.clone());
    tokio::spawn(async move {
        let mut last = tokio::time::Instant::now();
        loop {
            // Short naps, so a changed resync period applies at once.
            tokio::time::sleep(Duration::from_millis(250)).await;
            if last.elapsed() < resync_agg.resync() {
                continue;
            }
            last = tokio::time::Instant::now();
            let names: Vec<String> = k
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .keys()
                .cloned()
                .collect();
            for name in names {
                q.add(name);
            }
        }
    });
    run_workers(queue, 2, move |name: String| {
        let agg = agg.clone();
        async move { sync(&agg, &name).await.map_err(|e| e.to_string()) }
    });
}

/// The remote APIServices whose service is `ns/svc`.
fn referencing(known: &Known, ns: &str, svc: &str) -> Vec<String> {
    if svc.is_empty() {
        return Vec::new();
    }
    known
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(_, o)| {
            o.pointer("/spec/service/namespace").and_then(Value::as_str) == Some(ns)
                && o.pointer("/spec/service/name").and_then(Value::as_str) == Some(svc)
        })
        .map(|(n, _)| n.clone())
        .collect()
}

async fn sync(agg: &Aggregator, name: &str) -> Result<(), ApiError> {
    let apiservices = agg
        .apis
        .lookup(super::discovery::GROUP, "v1", "apiservices")
        .ok_or_else(|| ApiError::internal("apiservices are not served"))?;
    let obj = match apiservices.store.get(None, name, None).await {
        Ok(o) => o,
        Err(e) if e.is_not_found() => {
            agg.forget(name);
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let outcome = match obj.pointer("/spec/service").filter(|s| s.is_object()) {
        None => {
            agg.forget(name);
            Outcome::new("True", "Local", "Local APIServices are always available")
        }
        Some(_) => check_remote(agg, name, &obj).await,
    };
    write_condition(agg, name, &obj, outcome).await
}

/// Check a remote APIService and update the remote table.
async fn check_remote(agg: &Aggregator, name: &str, obj: &Value) -> Outcome {
    let s = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let n = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let ca = base64::engine::general_purpose::STANDARD
        .decode(s("/spec/caBundle"))
        .unwrap_or_default();
    let insecure = obj
        .pointer("/spec/insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let proxy_client = agg.proxy_client();
    let tls = client::tls_config(&ca, insecure, proxy_client.as_ref());
    let previous = agg.remote(&s("/spec/group"), &s("/spec/version"));
    let mut remote = Remote {
        name: name.to_owned(),
        group: s("/spec/group"),
        version: s("/spec/version"),
        group_priority: n("/spec/groupPriorityMinimum"),
        version_priority: n("/spec/versionPriority"),
        namespace: s("/spec/service/namespace"),
        service: s("/spec/service/name"),
        port: obj
            .pointer("/spec/service/port")
            .and_then(Value::as_i64)
            .unwrap_or(443),
        tls: match &tls {
            Ok(t) => t.clone(),
            Err(_) => client::tls_config(&[], true, None).expect("an insecure config builds"),
        },
        dialer: agg.settings.egress.cluster(),
        available: false,
        discovery: None,
        openapi_v2: None,
        openapi_v3: None,
    };
    if let Some(p) = previous.filter(|p| p.name == name) {
        remote.discovery = p.discovery;
        remote.openapi_v2 = p.openapi_v2;
        remote.openapi_v3 = p.openapi_v3;
    }
    let outcome = match tls {
        Err(e) => Outcome::new("False", "FailedDiscoveryCheck", e),
        Ok(_) => probe(agg, &mut remote, proxy_client.as_ref()).await,
    };
    remote.available = outcome.status == "True";
    agg.put(remote);
    outcome
}

async fn probe(
    agg: &Aggregator,
    remote: &mut Remote,
    proxy_client: Option<&(String, String)>,
) -> Outcome {
    // The Service and its endpoints are checked whatever the routing, as
    // upstream's availability controller does; the discovery check then
    // dials what requests will.
    let (ns, svc) = (&remote.namespace, &remote.service);
    let checked = service_resolver::resolve(&agg.apis, ns, svc, remote.port).await;
    let dialled = match (checked, agg.routing()) {
        (Ok(_), Routing::ClusterIp) => {
            service_resolver::resolve_with(&agg.apis, Routing::ClusterIp, ns, svc, remote.port)
                .await
        }
        (endpoint, _) => endpoint,
    };
    let endpoint = match dialled {
        Ok(e) => e,
        Err(e) => {
            let status = if e.is_definite() { "False" } else { "Unknown" };
            return Outcome::new(status, e.reason(), e.to_string());
        }
    };
    let path = if remote.group.is_empty() {
        format!("/api/{}", remote.version)
    } else {
        format!("/apis/{}/{}", remote.group, remote.version)
    };
    let url = format!("https://{}{path}", endpoint.authority());
    // As upstream, the check itself does not verify the serving certificate
    // (a best-effort reachability check); what is served is fetched verified.
    let insecure = client::tls_config(&[], true, proxy_client).expect("an insecure config builds");
    match get(&endpoint, remote, insecure, &path).await {
        Ok((status, _)) if status.is_success() || status.is_redirection() => {}
        Ok((status, _)) => {
            return Outcome::new(
                "False",
                "FailedDiscoveryCheck",
                format!(
                    "failing or missing response from {url}: bad status from {url}: {}",
                    status.as_u16()
                ),
            )
        }
        Err(e) => {
            return Outcome::new(
                "False",
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: Get \"{url}\": {e}"),
            )
        }
    }
    match get(&endpoint, remote, remote.tls.clone(), &path).await {
        Ok((status, body)) if status.is_success() => match serde_json::from_slice(&body) {
            Ok(list) => remote.discovery = Some(Arc::new(list)),
            Err(e) => tracing::debug!(apiservice = %remote.name, error = %e, "discovery document"),
        },
        Ok((status, _)) => {
            tracing::debug!(apiservice = %remote.name, %status, "discovery fetch failed")
        }
        Err(e) => tracing::debug!(apiservice = %remote.name, error = %e, "discovery fetch failed"),
    }
    fetch_openapi(&endpoint, remote).await;
    Outcome::new("True", "Passed", "all checks passed")
}

/// Refresh the remote's OpenAPI documents (kept as they were on failure).
async fn fetch_openapi(endpoint: &Endpoint, remote: &mut Remote) {
    if let Ok((status, body)) = get(endpoint, remote, remote.tls.clone(), "/openapi/v2").await {
        if status.is_success() {
            if let Ok(doc) = serde_json::from_slice::<Value>(&body) {
                remote.openapi_v2 = Some(Arc::new(doc));
            }
        }
    }
    if remote.group.is_empty() {
        return;
    }
    let path = format!("/openapi/v3/apis/{}/{}", remote.group, remote.version);
    if let Ok((status, body)) = get(endpoint, remote, remote.tls.clone(), &path).await {
        if status.is_success() && serde_json::from_slice::<Value>(&body).is_ok() {
            let hash = kapi_resources::openapi::hash(&body);
            remote.openapi_v3 = Some((body, hash));
        }
    }
}

/// `GET path` as `system:kube-aggregator` in `system:masters`, as upstream's check.
pub(crate) async fn get(
    endpoint: &Endpoint,
    remote: &Remote,
    tls: Arc<rustls::ClientConfig>,
    path: &str,
) -> Result<(StatusCode, bytes::Bytes), ClientError> {
    let server_name = &remote.server_name();
    let req = hyper::Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::HOST, format!("{server_name}:{}", endpoint.port))
        .header(header::ACCEPT, HeaderValue::from_static("application/json"))
        .header("x-remote-user", "system:kube-aggregator")
        .header("x-remote-group", "system:masters")
        .body(Body::empty())
        .map_err(|e| ClientError::Http(e.to_string()))?;
    let fetch = async {
        let resp = client::send(endpoint, server_name, tls, &remote.dialer, req).await?;
        let status = resp.status();
        let body = http_body_util::Limited::new(resp.into_body(), MAX_DISCOVERY)
            .collect()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(CHECK_TIMEOUT, fetch)
        .await
        .map_err(|_| ClientError::Http("context deadline exceeded".into()))?
}

/// Write the `Available` condition when it changed.
async fn write_condition(
    agg: &Aggregator,
    name: &str,
    obj: &Value,
    o: Outcome,
) -> Result<(), ApiError> {
    let same = condition(obj).is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(o.status)
            && c.get("reason").and_then(Value::as_str) == Some(o.reason.as_str())
            && c.get("message").and_then(Value::as_str) == Some(o.message.as_str())
    });
    if same {
        return Ok(());
    }
    let apiservices = agg
        .apis
        .lookup(super::discovery::GROUP, "v1", "apiservices")
        .ok_or_else(|| ApiError::internal("apiservices are not served"))?;
    let opts = WriteOptions::for_manager(MANAGER);
    let result = apiservices
        .store
        .update_with(None, name, UpdateTarget::Status, &opts, false, |cur| {
            let mut cur = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
            set_condition(&mut cur, &o);
            Ok(cur)
        })
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Upstream's `SetAPIServiceCondition`.
fn set_condition(obj: &mut Value, o: &Outcome) {
    let now = kapi_registry::meta::now_rfc3339();
    let old = condition(obj).cloned();
    let transition = match &old {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(o.status) => c
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(now)),
        _ => json!(now),
    };
    let new = json!({"type": "Available", "status": o.status, "lastTransitionTime": transition,
                     "reason": o.reason, "message": o.message});
    let root = obj.as_object_mut().expect("objects");
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .expect("set above")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("set above");
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
    {
        Some(c) => *c = new,
        None => list.push(new),
    }
}
