//! The CEL `authorizer` library of admission expressions (upstream
//! `apiserver/pkg/cel/library/authz.go`): `authorizer.path(p).check(verb)`,
//! `authorizer.group(g).resource(r).subresource(s).namespace(ns).name(n).check(verb)`,
//! `authorizer.serviceAccount(ns, name)` (the same checks for that service
//! account) and `authorizer.requestResource` (a resource check of the request's
//! own resource, subresource, namespace and name). A check answers a Decision
//! with `allowed()`, `reason()`, `errored()` and `error()`.
//!
//! Each step is an opaque CEL value and each method a function registered once
//! in the root context that dispatches on the receiver's type, so the member
//! chains of upstream's object types work unchanged. A check asks the server's
//! `--authorization-mode` chain ([`kapi_auth::authz::Authorizer`]) for the
//! request's user; that call is async while CEL evaluation is synchronous, so
//! expressions that name `authorizer` are evaluated on a blocking thread
//! (`cel::evaluate`), where the check waits for the answer.
//! `fieldSelector`/`labelSelector` are accepted and recorded; no
//! authorization mode kapi offers looks at selectors (RBAC ignores them
//! upstream too).

use std::fmt;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, ResolveResult, Value as Cel};

use kapi_auth::authn::{UserDetails, UserInfo};
use kapi_auth::authz::{Attributes, Authorizer, ResourceAttrs, Verdict};

/// `kubernetes.authorization.Authorizer`: checks for one user.
#[derive(Clone)]
pub struct AuthorizerVal {
    authorizer: Arc<dyn Authorizer>,
    user: UserInfo,
}

impl AuthorizerVal {
    pub fn new(authorizer: Arc<dyn Authorizer>, user: UserInfo) -> AuthorizerVal {
        AuthorizerVal { authorizer, user }
    }

    /// `authorizer.requestResource`: upstream's `NewResourceAuthorizerVal`.
    pub fn request_resource(&self, r: ResourceAttrs) -> Cel {
        opaque(ResourceCheck {
            authz: self.clone(),
            attrs: r,
            field_selector: String::new(),
            label_selector: String::new(),
        })
    }

    pub fn into_cel(self) -> Cel {
        opaque(self)
    }

    /// Ask the chain; runs on a blocking thread (see the module comment).
    fn decide(&self, verb: &str, resource: Option<ResourceAttrs>, path: Option<String>) -> Cel {
        let attrs = Attributes {
            user: self.user.clone(),
            verb: verb.to_string(),
            resource,
            path,
        };
        let decision = match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let d = rt.block_on(self.authorizer.authorize(&attrs));
                DecisionVal {
                    allowed: d.verdict == Verdict::Allow,
                    reason: d.reason,
                    error: String::new(),
                }
            }
            Err(e) => DecisionVal {
                allowed: false,
                reason: String::new(),
                error: e.to_string(),
            },
        };
        opaque(decision)
    }
}

impl PartialEq for AuthorizerVal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authorizer, &other.authorizer) && self.user == other.user
    }
}

impl Eq for AuthorizerVal {}

impl fmt::Debug for AuthorizerVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Authorizer({})", self.user.name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PathCheck {
    authz: AuthorizerVal,
    path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupCheck {
    authz: AuthorizerVal,
    group: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ResourceCheck {
    authz: AuthorizerVal,
    attrs: ResourceAttrs,
    field_selector: String,
    label_selector: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct DecisionVal {
    allowed: bool,
    reason: String,
    error: String,
}

macro_rules! opaque_type {
    ($t:ty, $name:literal) => {
        impl Opaque for $t {
            fn runtime_type_name(&self) -> &str {
                $name
            }
        }
    };
}

opaque_type!(AuthorizerVal, "kubernetes.authorization.Authorizer");
opaque_type!(PathCheck, "kubernetes.authorization.PathCheck");
opaque_type!(GroupCheck, "kubernetes.authorization.GroupCheck");
opaque_type!(ResourceCheck, "kubernetes.authorization.ResourceCheck");
opaque_type!(DecisionVal, "kubernetes.authorization.Decision");

fn opaque<T: Opaque>(v: T) -> Cel {
    Cel::Opaque(Arc::new(v))
}

/// The receiver as `T`, or cel-go's "no such overload".
fn recv<T: Opaque + Clone>(this: &Cel) -> Result<T, ExecutionError> {
    match this {
        Cel::Opaque(o) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or(ExecutionError::NoSuchOverload),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn fail(function: &str, message: &str) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

fn path(This(this): This<Cel>, p: Arc<String>) -> ResolveResult {
    let authz: AuthorizerVal = recv(&this)?;
    if p.trim().is_empty() {
        return Err(fail("path", "path must not be empty"));
    }
    Ok(opaque(PathCheck {
        authz,
        path: p.to_string(),
    }))
}

fn group(This(this): This<Cel>, g: Arc<String>) -> ResolveResult {
    let authz: AuthorizerVal = recv(&this)?;
    Ok(opaque(GroupCheck {
        authz,
        group: g.to_string(),
    }))
}

fn service_account(This(this): This<Cel>, ns: Arc<String>, name: Arc<String>) -> ResolveResult {
    let authz: AuthorizerVal = recv(&this)?;
    if !kapi_machinery::validation::is_dns1123_subdomain(&name).is_empty() {
        return Err(fail("serviceAccount", "Invalid service account name"));
    }
    if !kapi_machinery::validation::is_dns1123_label(&ns).is_empty() {
        return Err(fail("serviceAccount", "Invalid service account namespace"));
    }
    // Upstream `serviceaccount.ServiceAccountInfo.UserInfo`.
    let user = UserInfo::from(UserDetails {
        name: format!("system:serviceaccount:{ns}:{name}"),
        groups: vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{ns}"),
        ],
        ..UserDetails::default()
    });
    Ok(AuthorizerVal::new(authz.authorizer, user).into_cel())
}

fn resource(This(this): This<Cel>, r: Arc<String>) -> ResolveResult {
    let g: GroupCheck = recv(&this)?;
    if r.trim().is_empty() {
        return Err(fail("resource", "resource must not be empty"));
    }
    Ok(opaque(ResourceCheck {
        authz: g.authz,
        attrs: ResourceAttrs {
            group: g.group,
            resource: r.to_string(),
            ..ResourceAttrs::default()
        },
        field_selector: String::new(),
        label_selector: String::new(),
    }))
}

/// A `ResourceCheck` method that sets one field.
fn with(this: &Cel, set: impl FnOnce(&mut ResourceCheck)) -> ResolveResult {
    let mut r: ResourceCheck = recv(this)?;
    set(&mut r);
    Ok(opaque(r))
}

fn subresource(This(this): This<Cel>, s: Arc<String>) -> ResolveResult {
    with(&this, |r| r.attrs.subresource = s.to_string())
}

fn namespace(This(this): This<Cel>, s: Arc<String>) -> ResolveResult {
    with(&this, |r| r.attrs.namespace = s.to_string())
}

fn name(This(this): This<Cel>, s: Arc<String>) -> ResolveResult {
    with(&this, |r| r.attrs.name = s.to_string())
}

fn field_selector(This(this): This<Cel>, s: Arc<String>) -> ResolveResult {
    with(&this, |r| r.field_selector = s.to_string())
}

fn label_selector(This(this): This<Cel>, s: Arc<String>) -> ResolveResult {
    with(&this, |r| r.label_selector = s.to_string())
}

fn check(This(this): This<Cel>, verb: Arc<String>) -> ResolveResult {
    if let Ok(p) = recv::<PathCheck>(&this) {
        return Ok(p.authz.decide(&verb, None, Some(p.path)));
    }
    let r: ResourceCheck = recv(&this)?;
    Ok(r.authz.decide(&verb, Some(r.attrs), None))
}

fn allowed(This(this): This<Cel>) -> ResolveResult {
    Ok(Cel::Bool(recv::<DecisionVal>(&this)?.allowed))
}

fn reason(This(this): This<Cel>) -> ResolveResult {
    Ok(Cel::String(Arc::new(recv::<DecisionVal>(&this)?.reason)))
}

fn errored(This(this): This<Cel>) -> ResolveResult {
    Ok(Cel::Bool(!recv::<DecisionVal>(&this)?.error.is_empty()))
}

fn error(This(this): This<Cel>) -> ResolveResult {
    Ok(Cel::String(Arc::new(recv::<DecisionVal>(&this)?.error)))
}

/// Add the library's functions to a root context.
pub fn register(ctx: &mut Context<'_>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", subresource);
    ctx.add_function("namespace", namespace);
    ctx.add_function("name", name);
    ctx.add_function("fieldSelector", field_selector);
    ctx.add_function("labelSelector", label_selector);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}

impl crate::Context {
    /// Bind `authorizer` (for the request's user) and
    /// `authorizer.requestResource` (`a`'s resource) in `act`.
    pub(crate) fn bind_authorizer(&self, act: &mut super::cel::Activation, a: &super::Attrs) {
        let authz = AuthorizerVal::new(self.authz.clone(), a.user.clone());
        act.set(
            "authorizer.requestResource",
            authz.request_resource(ResourceAttrs {
                group: a.gvr.0.clone(),
                version: a.gvr.1.clone(),
                resource: a.gvr.2.clone(),
                subresource: a.subresource.clone(),
                namespace: a.namespace.clone(),
                name: a.name.clone(),
            }),
        );
        act.set("authorizer", authz.into_cel());
    }
}
