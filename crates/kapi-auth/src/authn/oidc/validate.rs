//! The rules of an `AuthenticationConfiguration`, as upstream's validation
//! states them, each failure a field error naming its path
//! (`jwt[0].claimMappings.username.prefix: Required value: ...`); the CEL
//! expressions are compiled on the way ([`Compiled`]), so a configuration
//! that validates is one that can run.
//!
//! - at most 64 JWT authenticators; issuer URLs and discovery URLs unique;
//! - issuer `url` (and `discoveryURL`, which must differ from it): `https`,
//!   no user info, query or fragment, and not a service account issuer;
//! - at least one audience, no empty or repeated ones, `audienceMatchPolicy`
//!   `MatchAny` (required with several audiences);
//! - `certificateAuthority` must hold a certificate;
//! - claim validation rules: a `claim` (with `requiredValue`, no `message`)
//!   or an `expression` (with an optional `message`), claims and expressions
//!   not repeated;
//! - `username` needs a claim (with a `prefix`, possibly empty) or an
//!   expression; `groups` likewise when set; `uid` a claim or an expression;
//!   `extra` keys are lowercase domain-prefixed paths outside `k8s.io` and
//!   `kubernetes.io`, unique, each with a `valueExpression`;
//! - a username expression reading `claims.email` must be accompanied by a
//!   use of `claims.email_verified` in some expression;
//! - user validation rules need an expression, not repeated;
//! - `anonymous.conditions` only with `enabled: true`.

use kapi_machinery::validation::{is_dns1123_subdomain, FieldError, FieldPath};

use super::config::{AuthenticationConfiguration, ClaimMappings, Issuer, JwtAuthenticator};
use crate::cel::{self, Expression};

/// The expressions of one JWT authenticator, compiled.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    pub username: Option<Expression>,
    pub groups: Option<Expression>,
    pub uid: Option<Expression>,
    pub extra: Vec<(String, Expression)>,
    /// Claim validation expressions with their messages.
    pub claim_rules: Vec<(Expression, String)>,
    /// User validation expressions with their messages.
    pub user_rules: Vec<(Expression, String)>,
}

const CLAIMS: &[&str] = &["claims"];
const USER: &[&str] = &["user"];

/// Validate `c`; `service_account_issuers` may not be JWT issuers. The
/// compiled expressions of every authenticator come back in order.
pub fn validate(
    c: &AuthenticationConfiguration,
    service_account_issuers: &[String],
) -> (Vec<Compiled>, Vec<FieldError>) {
    let root = FieldPath::new("jwt");
    let mut errs = Vec::new();
    if c.jwt.len() > 64 {
        errs.push(FieldError::too_many(&root, Some(c.jwt.len()), Some(64)));
        return (Vec::new(), errs);
    }
    let mut compiled = Vec::new();
    let (mut issuers, mut discovery) = (Vec::new(), Vec::new());
    for (i, a) in c.jwt.iter().enumerate() {
        let path = root.index(i);
        let (one, e) = validate_authenticator(a, &path, service_account_issuers);
        compiled.push(one);
        errs.extend(e);
        let url_path = path.child("issuer");
        if issuers.contains(&&a.issuer.url) {
            errs.push(FieldError::duplicate(
                &url_path.child("url"),
                a.issuer.url.as_str(),
            ));
        }
        issuers.push(&a.issuer.url);
        if !a.issuer.discovery_url.is_empty() {
            if discovery.contains(&&a.issuer.discovery_url) {
                let p = url_path.child("discoveryURL");
                errs.push(FieldError::duplicate(&p, a.issuer.discovery_url.as_str()));
            }
            discovery.push(&a.issuer.discovery_url);
        }
    }
    if let Some(anon) = &c.anonymous {
        if !anon.enabled && !anon.conditions.is_empty() {
            let paths: Vec<&str> = anon.conditions.iter().map(|c| c.path.as_str()).collect();
            errs.push(FieldError::invalid(
                &FieldPath::new("anonymous").child("conditions"),
                serde_json::json!(paths),
                "enabled should be set to true when conditions are defined",
            ));
        }
    }
    (compiled, errs)
}

/// Validate one authenticator at `path` (`jwt[i]`).
pub fn validate_authenticator(
    a: &JwtAuthenticator,
    path: &FieldPath,
    service_account_issuers: &[String],
) -> (Compiled, Vec<FieldError>) {
    let mut errs = issuer(&a.issuer, &path.child("issuer"), service_account_issuers);
    let mut out = Compiled::default();
    claim_rules(a, &path.child("claimValidationRules"), &mut out, &mut errs);
    claim_mappings(
        &a.claim_mappings,
        &path.child("claimMappings"),
        &mut out,
        &mut errs,
    );
    user_rules(a, &path.child("userValidationRules"), &mut out, &mut errs);
    let username_uses_email = out
        .username
        .as_ref()
        .is_some_and(|e| e.selects("claims", "email"));
    let verified = out
        .username
        .iter()
        .any(|e| e.selects("claims", "email_verified"))
        || out
            .extra
            .iter()
            .any(|(_, e)| e.selects("claims", "email_verified"))
        || out
            .claim_rules
            .iter()
            .any(|(e, _)| e.selects("claims", "email_verified"));
    if username_uses_email && !verified {
        errs.push(FieldError::invalid(
            &path.child("claimMappings").child("username").child("expression"),
            a.claim_mappings.username.expression.as_str(),
            "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
        ));
    }
    (out, errs)
}

fn issuer(i: &Issuer, path: &FieldPath, disallowed: &[String]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let url_path = path.child("url");
    if i.url.is_empty() {
        errs.push(FieldError::required(&url_path, ""));
    } else {
        errs.extend(url(&i.url, disallowed, &url_path));
    }
    if !i.discovery_url.is_empty() {
        let p = path.child("discoveryURL");
        if !i.url.is_empty() && i.url.trim_end_matches('/') == i.discovery_url.trim_end_matches('/')
        {
            errs.push(FieldError::invalid(
                &p,
                i.discovery_url.as_str(),
                "discoveryURL must be different from URL",
            ));
        }
        errs.extend(url(&i.discovery_url, &[], &p));
    }
    let aud_path = path.child("audiences");
    if i.audiences.is_empty() {
        let detail = format!("at least one {aud_path} is required");
        errs.push(FieldError::required(&aud_path, detail));
    }
    for (n, a) in i.audiences.iter().enumerate() {
        if a.is_empty() {
            errs.push(FieldError::required(&aud_path.index(n), ""));
        }
        if i.audiences[..n].contains(a) {
            errs.push(FieldError::duplicate(&aud_path.index(n), a.as_str()));
        }
    }
    let policy = &i.audience_match_policy;
    let policy_path = path.child("audienceMatchPolicy");
    if i.audiences.len() > 1 && policy != "MatchAny" {
        errs.push(FieldError::invalid(
            &policy_path,
            policy.as_str(),
            "audienceMatchPolicy must be MatchAny for multiple audiences",
        ));
    }
    if i.audiences.len() == 1 && !policy.is_empty() && policy != "MatchAny" {
        errs.push(FieldError::invalid(
            &policy_path,
            policy.as_str(),
            "audienceMatchPolicy must be empty or MatchAny for single audience",
        ));
    }
    if !i.certificate_authority.is_empty() && pem_certificates(&i.certificate_authority) == 0 {
        errs.push(FieldError::invalid(
            &path.child("certificateAuthority"),
            "<omitted>",
            "data does not contain any valid RSA or ECDSA certificates",
        ));
    }
    errs
}

/// How many certificates `pem` holds.
pub fn pem_certificates(pem: &str) -> usize {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .filter(Result::is_ok)
        .count()
}

fn url(u: &str, disallowed: &[String], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if disallowed.iter().any(|d| d == u) {
        let mut sorted = disallowed.to_vec();
        sorted.sort();
        errs.push(FieldError::invalid(
            path,
            u,
            format!(
                "URL must not overlap with disallowed issuers: [{}]",
                sorted.join(" ")
            ),
        ));
    }
    let (scheme, rest) = u.split_once("://").unwrap_or(("", u));
    if scheme != "https" {
        errs.push(FieldError::invalid(path, u, "URL scheme must be https"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        errs.push(FieldError::invalid(
            path,
            u,
            "URL must not contain a username or password",
        ));
    }
    let before_fragment = rest.split('#').next().unwrap_or("");
    if before_fragment
        .split_once('?')
        .is_some_and(|(_, q)| !q.is_empty())
    {
        errs.push(FieldError::invalid(path, u, "URL must not contain a query"));
    }
    if rest.split_once('#').is_some_and(|(_, f)| !f.is_empty()) {
        errs.push(FieldError::invalid(
            path,
            u,
            "URL must not contain a fragment",
        ));
    }
    errs
}

fn compile_at(
    src: &str,
    vars: &[&str],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Option<Expression> {
    match cel::compile(src, vars) {
        Ok(e) => Some(e),
        Err(detail) => {
            errs.push(FieldError::invalid(path, src, detail));
            None
        }
    }
}

fn claim_rules(
    a: &JwtAuthenticator,
    path: &FieldPath,
    out: &mut Compiled,
    errs: &mut Vec<FieldError>,
) {
    let (mut claims, mut exprs): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (i, r) in a.claim_validation_rules.iter().enumerate() {
        let p = path.index(i);
        match (r.claim.is_empty(), r.expression.is_empty()) {
            (false, false) => errs.push(FieldError::invalid(
                &p,
                r.claim.as_str(),
                "claim and expression can't both be set",
            )),
            (true, true) => errs.push(FieldError::required(&p, "claim or expression is required")),
            (false, true) => {
                if !r.message.is_empty() {
                    errs.push(FieldError::invalid(
                        &p.child("message"),
                        r.message.as_str(),
                        "may not be specified when claim is set",
                    ));
                }
                if claims.contains(&r.claim.as_str()) {
                    errs.push(FieldError::duplicate(&p.child("claim"), r.claim.as_str()));
                }
                claims.push(&r.claim);
            }
            (true, false) => {
                if !r.required_value.is_empty() {
                    errs.push(FieldError::invalid(
                        &p.child("requiredValue"),
                        r.required_value.as_str(),
                        "may not be specified when expression is set",
                    ));
                }
                if exprs.contains(&r.expression.as_str()) {
                    let d = FieldError::duplicate(&p.child("expression"), r.expression.as_str());
                    errs.push(d);
                    continue;
                }
                exprs.push(&r.expression);
                let p = p.child("expression");
                if let Some(e) = compile_at(&r.expression, CLAIMS, &p, errs) {
                    out.claim_rules.push((e, r.message.clone()));
                }
            }
        }
    }
}

fn prefixed(
    m: &super::config::PrefixedClaimOrExpression,
    path: &FieldPath,
    required: bool,
    errs: &mut Vec<FieldError>,
) -> Option<Expression> {
    match (m.claim.is_empty(), m.expression.is_empty()) {
        (false, false) => {
            errs.push(FieldError::invalid(
                path,
                "",
                "claim and expression can't both be set",
            ));
            None
        }
        (true, true) => {
            if required {
                errs.push(FieldError::required(
                    path,
                    "claim or expression is required",
                ));
            }
            None
        }
        (true, false) => {
            if let Some(prefix) = &m.prefix {
                errs.push(FieldError::invalid(
                    &path.child("prefix"),
                    prefix.as_str(),
                    "may not be specified when expression is set",
                ));
            }
            compile_at(&m.expression, CLAIMS, &path.child("expression"), errs)
        }
        (false, true) => {
            if m.prefix.is_none() {
                errs.push(FieldError::required(
                    &path.child("prefix"),
                    "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                ));
            }
            None
        }
    }
}

fn claim_mappings(
    m: &ClaimMappings,
    path: &FieldPath,
    out: &mut Compiled,
    errs: &mut Vec<FieldError>,
) {
    out.username = prefixed(&m.username, &path.child("username"), true, errs);
    out.groups = prefixed(&m.groups, &path.child("groups"), false, errs);
    let uid_path = path.child("uid");
    match (m.uid.claim.is_empty(), m.uid.expression.is_empty()) {
        (false, false) => errs.push(FieldError::invalid(
            &uid_path,
            "",
            "claim and expression can't both be set",
        )),
        (true, false) => {
            out.uid = compile_at(
                &m.uid.expression,
                CLAIMS,
                &uid_path.child("expression"),
                errs,
            )
        }
        _ => {}
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, x) in m.extra.iter().enumerate() {
        let p = path.child("extra").index(i);
        let key_path = p.child("key");
        errs.extend(domain_prefixed_path(&key_path, &x.key));
        if x.key != x.key.to_lowercase() {
            errs.push(FieldError::invalid(
                &key_path,
                x.key.as_str(),
                "must be lowercase",
            ));
        }
        let domain = x.key.split_once('/').map(|(d, _)| d).unwrap_or("");
        let reserved = ["kubernetes.io", "k8s.io"]
            .iter()
            .any(|r| domain == *r || domain.ends_with(&format!(".{r}")));
        if reserved {
            errs.push(FieldError::invalid(
                &key_path,
                x.key.as_str(),
                "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
            ));
        }
        if seen.contains(&x.key.as_str()) {
            errs.push(FieldError::duplicate(&key_path, x.key.as_str()));
            continue;
        }
        seen.push(&x.key);
        if x.value_expression.is_empty() {
            errs.push(FieldError::required(&p.child("valueExpression"), ""));
            continue;
        }
        let vp = p.child("valueExpression");
        if let Some(e) = compile_at(&x.value_expression, CLAIMS, &vp, errs) {
            out.extra.push((x.key.clone(), e));
        }
    }
}

/// Upstream's `IsDomainPrefixedPath`.
fn domain_prefixed_path(path: &FieldPath, key: &str) -> Vec<FieldError> {
    if key.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((domain, rest)) = key
        .split_once('/')
        .filter(|(d, r)| !d.is_empty() && !r.is_empty())
    else {
        return vec![FieldError::invalid(
            path,
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = is_dns1123_subdomain(domain)
        .into_iter()
        .map(|m| FieldError::invalid(path, domain, m))
        .collect();
    if !rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~/!$&'()*+,;=:@%".contains(c))
    {
        errs.push(FieldError::invalid(path, rest, "Invalid path"));
    }
    errs
}

fn user_rules(
    a: &JwtAuthenticator,
    path: &FieldPath,
    out: &mut Compiled,
    errs: &mut Vec<FieldError>,
) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in a.user_validation_rules.iter().enumerate() {
        let p = path.index(i).child("expression");
        if r.expression.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if seen.contains(&r.expression.as_str()) {
            errs.push(FieldError::duplicate(&p, r.expression.as_str()));
            continue;
        }
        seen.push(&r.expression);
        if let Some(e) = compile_at(&r.expression, USER, &p, errs) {
            out.user_rules.push((e, r.message.clone()));
        }
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
