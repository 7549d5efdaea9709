//! Auditing: every request gets an `Audit-ID` (the client's, or a new one) in
//! its response headers ([`id_layer`], outside authentication as upstream's
//! `WithAuditInit`); after authentication, [`layer`] asks the policy
//! (`policy.rs`) for the request's level and emits audit.k8s.io/v1 `Event`s for
//! the stages RequestReceived, ResponseStarted (long-running requests only),
//! ResponseComplete and Panic to the sink (`sink.rs`), as upstream's
//! `endpoints/filters/audit.go`.
//!
//! Levels: `Metadata` records who did what to which object and the outcome;
//! `Request` adds the request body (`requestObject`); `RequestResponse` adds
//! the response body (`responseObject`). A Secret's data is therefore never in
//! a Metadata event. Bodies are buffered only when the level needs them.
//!
//! Later filters can add to the event through [`AuditHandle`] in the request
//! extensions: the impersonation filter sets the impersonated user, the
//! authorizer adds annotations, and admission (through the handlers' `Ctx`
//! and admission's `Attributes`) adds the annotations of webhooks, policies
//! and built-in plugins ([`AuditHandle::annotate_admission`]: upstream's
//! rules for admission annotations).

pub mod logfile;
pub mod output;
pub mod policy;
pub mod sink;

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::Response;
use futures::FutureExt;
use kapi_http::next::Next;
use serde_json::{json, Map, Value};

use kapi_http::limits::{self, Kind};
use kapi_http::metrics::Metrics;
use kapi_http::user::UserInfo;
use policy::{Attributes, Decision, Level, Policy, ResourceAttrs};
use sink::{LogOptions, Sink, WebhookOptions};

/// `--audit-policy-file`, `--audit-log-*` and `--audit-webhook-*`.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    pub policy: Policy,
    pub log: Option<LogOptions>,
    pub webhook: Option<WebhookOptions>,
}

/// The audit ID of a request (request extension).
#[derive(Debug, Clone)]
pub struct AuditId(pub String);

/// What later filters add to a request's audit event.
#[derive(Debug, Default)]
pub struct Additions {
    pub impersonated_user: Option<UserInfo>,
    pub annotations: BTreeMap<String, String>,
    /// The event's level (`None` for a handle no event reads).
    pub level: Option<Level>,
}

/// The response header naming the request's audit ID.
const AUDIT_ID: HeaderName = HeaderName::from_static("audit-id");

/// Admission annotations with this prefix need the Request level: a mutating
/// webhook's patch shows what was in the request body (upstream's
/// `PatchAuditAnnotationPrefix`).
const PATCH_PREFIX: &str = "patch.webhook.admission.k8s.io/";

/// Request extension through which later filters add to the event.
#[derive(Debug, Clone, Default)]
pub struct AuditHandle(pub Arc<Mutex<Additions>>);

impl AuditHandle {
    pub fn set_impersonated_user(&self, user: UserInfo) {
        self.0.lock().expect("audit lock").impersonated_user = Some(user);
    }

    pub fn annotate(&self, key: impl Into<String>, value: impl Into<String>) {
        let mut a = self.0.lock().expect("audit lock");
        a.annotations.insert(key.into(), value.into());
    }

    /// An annotation from admission, as upstream's `AddAnnotation` and the
    /// admission audit handler: the key must be `<prefix>/<name>` and a
    /// qualified name; the first value of a key stays; annotations above the
    /// event's level (a webhook's patch below Request) are left out.
    pub fn annotate_admission(&self, key: &str, value: &str) {
        if key.split('/').count() != 2
            || !kapi_machinery::validation::is_qualified_name(key).is_empty()
        {
            tracing::warn!(%key, "admission audit annotation with an invalid key left out");
            return;
        }
        let needs = if key.starts_with(PATCH_PREFIX) {
            Level::Request
        } else {
            Level::Metadata
        };
        let mut a = self.0.lock().expect("audit lock");
        if a.level.is_none_or(|l| l < needs) {
            return;
        }
        match a.annotations.get(key) {
            Some(v) if v != value => {
                tracing::warn!(%key, "admission audit annotation already set; new value left out")
            }
            Some(_) => {}
            None => {
                a.annotations.insert(key.to_owned(), value.to_owned());
            }
        }
    }
}

/// The auditing state of a server.
#[derive(Clone)]
pub struct Audit {
    policy: Arc<Policy>,
    sink: Sink,
}

impl Audit {
    pub fn open(cfg: &AuditConfig, metrics: Metrics) -> std::io::Result<Audit> {
        Ok(Audit {
            policy: Arc::new(cfg.policy.clone()),
            sink: Sink::open(cfg.log.as_ref(), cfg.webhook.as_ref(), metrics)?,
        })
    }
}

/// Give every request an audit ID and every response an `Audit-ID` header;
/// record requests that failed authentication (the audit filter proper runs
/// after authentication and never sees them), as upstream's
/// `WithFailedAuthenticationAudit`: one ResponseStarted event, no user.
pub async fn id_layer<N: Next>(
    State(audit): State<Option<Audit>>,
    mut req: Request,
    next: N,
) -> Response {
    let id = req
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty())
        .map(str::to_owned)
        .unwrap_or_else(kapi_registry::meta::new_uid);
    req.extensions_mut().insert(AuditId(id.clone()));
    let failed = audit.and_then(|a| failed_authn_event(&a, &req).map(|ev| (a, ev)));
    let mut resp = next.run(req).await;
    if let (Some((audit, mut ev)), 401) = (failed, resp.status().as_u16()) {
        ev.insert("stage".into(), "ResponseStarted".into());
        ev.insert(
            "stageTimestamp".into(),
            kapi_registry::meta::now_micro_rfc3339().into(),
        );
        audit.sink.send(Value::Object(ev));
    }
    if let Ok(mut v) = HeaderValue::from_str(&id) {
        // Unique to this response: over HTTP/2 it is sent as a literal that
        // is never indexed, rather than entered into the connection's HPACK
        // table, where it would only push out the entries every response
        // reuses (the flow-control headers, the content type).
        v.set_sensitive(true);
        resp.headers_mut().insert(AUDIT_ID, v);
    }
    resp
}

/// The event for the request should authentication fail: the policy's level
/// for a request with no user (`None` when that level is None).
fn failed_authn_event(audit: &Audit, req: &Request) -> Option<Map<String, Value>> {
    let kind = Kind::of(req);
    let nobody = UserInfo::default();
    let decision = audit.policy.evaluate(&Attributes {
        user: &nobody,
        verb: &kind.verb,
        resource: resource_attrs(&kind),
        path: req.uri().path(),
    });
    if decision.level == Level::None || decision.omit_stages.iter().any(|s| s == "ResponseStarted")
    {
        return None;
    }
    let mut attempted = Vec::new();
    if req.headers().contains_key(header::AUTHORIZATION) {
        attempted.push("bearer");
    }
    if matches!(
        req.extensions()
            .get::<Option<kapi_http::tls::PeerIdentity>>(),
        Some(Some(_))
    ) {
        attempted.push("x509");
    }
    let mut ev = base_event(req, &kind, &nobody, decision.level);
    ev.insert(
        "responseStatus".into(),
        json!({"metadata": {}, "code": 401,
            "message": format!("Authentication failed, attempted: {}", attempted.join(", "))}),
    );
    Some(ev)
}

fn resource_attrs(kind: &Kind) -> Option<ResourceAttrs<'_>> {
    kind.info.as_ref().map(|i| ResourceAttrs {
        group: &i.group,
        resource: &i.resource,
        subresource: i.subresource.as_deref().unwrap_or(""),
        namespace: i.namespace.as_deref().unwrap_or(""),
        name: i.name.as_deref().unwrap_or(""),
    })
}

fn user_json(u: &UserInfo) -> Value {
    let mut m = Map::new();
    if !u.name.is_empty() {
        m.insert("username".into(), u.name.clone().into());
    }
    if !u.uid.is_empty() {
        m.insert("uid".into(), u.uid.clone().into());
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

/// One request's event as it builds up.
struct Event {
    audit: Audit,
    decision: Decision,
    base: Map<String, Value>,
    handle: AuditHandle,
}

impl Event {
    fn emit(&self, stage: &str, extra: impl FnOnce(&mut Map<String, Value>)) {
        if let Some(ev) = self.event(stage, extra) {
            self.audit.sink.send(ev);
        }
    }

    /// Emit the RequestReceived stage, waiting for blocking backends; false
    /// when a `blocking-strict` backend could not record it.
    async fn emit_received(&self) -> bool {
        match self.event("RequestReceived", |_| {}) {
            Some(ev) => self.audit.sink.send_and_wait(ev).await,
            None => true,
        }
    }

    fn event(&self, stage: &str, extra: impl FnOnce(&mut Map<String, Value>)) -> Option<Value> {
        if self.decision.omit_stages.iter().any(|s| s == stage) {
            return None;
        }
        let mut ev = self.base.clone();
        ev.insert("stage".into(), stage.into());
        {
            let add = self.handle.0.lock().expect("audit lock");
            if let Some(u) = &add.impersonated_user {
                ev.insert("impersonatedUser".into(), user_json(u));
            }
            if !add.annotations.is_empty() {
                ev.insert("annotations".into(), json!(add.annotations));
            }
        }
        extra(&mut ev);
        ev.insert(
            "stageTimestamp".into(),
            kapi_registry::meta::now_micro_rfc3339().into(),
        );
        Some(Value::Object(ev))
    }
}

fn source_ips(req: &Request) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let mut push = |ip: &str| {
        let ip = ip.trim();
        if ip.parse::<std::net::IpAddr>().is_ok() && !ips.iter().any(|i| i == ip) {
            ips.push(ip.to_owned());
        }
    };
    if let Some(v) = req
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
    {
        v.split(',').for_each(&mut push);
    }
    if let Some(v) = req.headers().get("x-real-ip").and_then(|v| v.to_str().ok()) {
        push(v);
    }
    if let Some(ConnectInfo(addr)) = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>() {
        push(&addr.ip().to_string());
    }
    ips
}

fn base_event(req: &Request, kind: &Kind, user: &UserInfo, level: Level) -> Map<String, Value> {
    let id = req
        .extensions()
        .get::<AuditId>()
        .map_or_else(kapi_registry::meta::new_uid, |a| a.0.clone());
    let uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned());
    let mut ev = Map::new();
    ev.insert("kind".into(), "Event".into());
    ev.insert("apiVersion".into(), "audit.k8s.io/v1".into());
    ev.insert("level".into(), level.as_str().into());
    ev.insert("auditID".into(), id.into());
    ev.insert("requestURI".into(), uri.into());
    ev.insert("verb".into(), kind.verb.clone().into());
    ev.insert("user".into(), user_json(user));
    ev.insert("sourceIPs".into(), json!(source_ips(req)));
    if let Some(ua) = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
    {
        ev.insert("userAgent".into(), ua.into());
    }
    if let Some(i) = &kind.info {
        let mut r = Map::new();
        r.insert("resource".into(), i.resource.clone().into());
        if let Some(ns) = &i.namespace {
            r.insert("namespace".into(), ns.clone().into());
        } else if i.resource == "namespaces" {
            if let Some(n) = &i.name {
                r.insert("namespace".into(), n.clone().into());
            }
        }
        if let Some(n) = &i.name {
            r.insert("name".into(), n.clone().into());
        }
        if !i.group.is_empty() {
            r.insert("apiGroup".into(), i.group.clone().into());
        }
        r.insert("apiVersion".into(), i.version.clone().into());
        if let Some(s) = &i.subresource {
            r.insert("subresource".into(), s.clone().into());
        }
        ev.insert("objectRef".into(), Value::Object(r));
    }
    ev.insert(
        "requestReceivedTimestamp".into(),
        kapi_registry::meta::now_micro_rfc3339().into(),
    );
    ev
}

/// A body as an object for the event: JSON or YAML; `None` otherwise.
fn body_object(bytes: &[u8], omit_managed_fields: bool) -> Option<Value> {
    let mut v: Value = serde_json::from_slice(bytes)
        .ok()
        .or_else(|| serde_saphyr::from_str(std::str::from_utf8(bytes).ok()?).ok())?;
    if !v.is_object() {
        return None;
    }
    if omit_managed_fields {
        strip_managed_fields(&mut v);
    }
    Some(v)
}

fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

fn response_status(code: u16, status_body: Option<&Value>) -> Value {
    let mut s = json!({"metadata": {}, "code": code});
    if let Some(b) = status_body.filter(|b| b["kind"] == "Status") {
        for k in ["status", "message", "reason", "details"] {
            if let Some(v) = b.get(k) {
                s[k] = v.clone();
            }
        }
    }
    s
}

/// The audit filter (after authentication).
pub async fn layer<N: Next>(State(audit): State<Audit>, mut req: Request, next: N) -> Response {
    let kind = Kind::of(&req);
    let user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let resource = resource_attrs(&kind);
    let decision = audit.policy.evaluate(&Attributes {
        user: &user,
        verb: &kind.verb,
        resource,
        path: req.uri().path(),
    });
    if decision.level == Level::None {
        return next.run(req).await;
    }
    let handle = AuditHandle::default();
    handle.0.lock().expect("audit lock").level = Some(decision.level);
    req.extensions_mut().insert(handle.clone());
    let event = Arc::new(Event {
        base: base_event(&req, &kind, &user, decision.level),
        audit,
        decision,
        handle,
    });
    if !event.emit_received().await {
        // As upstream with a blocking-strict backend.
        let err = kapi_machinery::status::ApiError::internal("failed to store audit event");
        return kapi_http::negotiate::error_response(&err);
    }
    let omit_mf = event.decision.omit_managed_fields;
    let mut request_object = None;
    if event.decision.level >= Level::Request && kind.mutating {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, kapi_http::body::MAX_BODY).await {
            Ok(b) => b,
            Err(_) => {
                let err = kapi_machinery::status::ApiError::request_entity_too_large(format!(
                    "limit is {}",
                    kapi_http::body::MAX_BODY
                ));
                event.emit("ResponseComplete", |ev| {
                    ev.insert(
                        "responseStatus".into(),
                        response_status(413, Some(&err.to_status())),
                    );
                });
                return kapi_http::negotiate::error_response(&err);
            }
        };
        request_object = body_object(&bytes, omit_mf);
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let with_request = move |ev: &mut Map<String, Value>| {
        if let Some(o) = request_object {
            ev.insert("requestObject".into(), o);
        }
    };
    let resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            let msg = panic_message(&panic);
            event.emit("Panic", |ev| {
                ev.insert(
                    "responseStatus".into(),
                    json!({"metadata": {}, "code": 500,
                    "status": "Failure", "message": format!("APIServer panic'd: {msg}")}),
                );
            });
            std::panic::resume_unwind(panic);
        }
    };
    let code = resp.status().as_u16();
    if kind.long_running {
        event.emit("ResponseStarted", |ev| {
            ev.insert("responseStatus".into(), response_status(code, None));
        });
        let ev = event.clone();
        return limits::on_body_end(resp, limits::NO_FRAMES, move || {
            ev.emit("ResponseComplete", |e| {
                with_request(e);
                e.insert("responseStatus".into(), response_status(code, None));
            })
        });
    }
    let json_body = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    // Errors for their Status; creates for the name the server gave (upstream
    // completes objectRef from the object).
    let want_body = json_body
        && (code >= 400
            || event.decision.level == Level::RequestResponse
            || (kind.verb == "create" && code < 300));
    if !want_body {
        let ev = event.clone();
        return limits::on_body_end(resp, limits::NO_FRAMES, move || {
            ev.emit("ResponseComplete", |e| {
                with_request(e);
                e.insert("responseStatus".into(), response_status(code, None));
            })
        });
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let object = body_object(&bytes, omit_mf);
    event.emit("ResponseComplete", |e| {
        with_request(e);
        if code < 300 {
            complete_object_ref(e, object.as_ref());
        }
        e.insert(
            "responseStatus".into(),
            response_status(code, object.as_ref()),
        );
        if event.decision.level == Level::RequestResponse {
            if let Some(o) = object.clone() {
                e.insert("responseObject".into(), o);
            }
        }
    });
    Response::from_parts(parts, Body::from(bytes))
}

/// Fill `objectRef.name` / `namespace` from the object when the URL had none.
fn complete_object_ref(ev: &mut Map<String, Value>, object: Option<&Value>) {
    let (Some(obj), Some(Value::Object(r))) = (object, ev.get_mut("objectRef")) else {
        return;
    };
    for key in ["name", "namespace"] {
        if let Some(v) = obj
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
        {
            r.entry(key).or_insert_with(|| v.into());
        }
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}
