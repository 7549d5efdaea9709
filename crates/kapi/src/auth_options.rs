//! The authentication and authorization flags turned into the parts of
//! [`crate::Options`]: the token authenticators (static tokens, `--oidc-*` or
//! `--authentication-config`, the token webhook), anonymous access, and the
//! authorizers (`--authorization-mode` with its webhook, or
//! `--authorization-config`), with upstream's checks of which flags go
//! together and its error texts. Every file is read and validated here, so a
//! bad one stops the start naming the flag and the field. The webhooks are
//! dialled through the `controlplane` egress selection, as upstream's.

use std::sync::Arc;

use kapi_auth::authn::oidc::config::{JwtAuthenticator, OidcFlags};
use kapi_auth::authn::structured::{ConfigFile, Jwt};
use kapi_auth::authn::webhook::TokenWebhook;
use kapi_auth::authn::Authenticator;
use kapi_auth::authz::{self, Mode};
use kapi_egress::Egress;

use crate::flags::ServeArgs;

fn read(path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Add the token authenticators and anonymous settings the flags ask for to
/// `auth`; `sa_issuers` are the service account issuers (no JWT issuer may
/// be one), `api_audiences` what a token webhook without audiences vouches for.
pub fn authentication(
    a: &ServeArgs,
    mut auth: Authenticator,
    sa_issuers: &[String],
    api_audiences: &[String],
    egress: &Egress,
) -> Result<Authenticator, String> {
    let o = &a.oidc;
    if a.authentication_config.is_some() && o.given {
        return Err("authentication-config file and oidc-* flags are mutually exclusive".into());
    }
    if o.given && (o.issuer_url.is_empty() || o.client_id.is_empty()) {
        return Err(
            "oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set"
                .into(),
        );
    }
    if let Some(path) = &a.authentication_config {
        let file = ConfigFile::load(path, sa_issuers)?;
        if file.anonymous().is_some() && a.anonymous_auth_given {
            return Err("anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file".into());
        }
        auth = auth.with_authentication_config(file);
    } else if !o.issuer_url.is_empty() {
        let flags = OidcFlags {
            issuer_url: o.issuer_url.clone(),
            client_id: o.client_id.clone(),
            ca: match &o.ca_file {
                Some(p) => read(p)?,
                None => String::new(),
            },
            username_claim: o.username_claim.clone(),
            username_prefix: o.username_prefix.clone(),
            groups_claim: o.groups_claim.clone(),
            groups_prefix: o.groups_prefix.clone(),
            required_claims: o.required_claims.clone(),
        };
        let config = JwtAuthenticator::from_oidc_flags(&flags);
        let jwt = Jwt::build(&[config], sa_issuers, &o.signing_algs)?;
        auth = auth.with_jwt(Jwt::fixed(jwt));
    }
    if let Some(path) = &a.authentication_token_webhook_config_file {
        let conn = kapi_client::kubeconfig::load(path)
            .map_err(|e| format!("--authentication-token-webhook-config-file: {e}"))?
            .via(egress.control_plane());
        let hook = TokenWebhook::new(
            conn,
            &a.authentication_token_webhook_version,
            a.authentication_token_webhook_cache_ttl,
            api_audiences.to_vec(),
        )?;
        auth = auth.with_token_webhook(Arc::new(hook));
    }
    Ok(auth)
}

/// The authorizers the flags describe.
pub struct Authorizers {
    pub modes: Vec<Mode>,
    pub webhook: Option<Arc<authz::webhook::Webhook>>,
    pub abac: Option<Arc<authz::abac::Abac>>,
    pub config: Option<authz::structured::ConfigFile>,
}

/// The authorizers the flags ask for.
pub fn authorization(a: &ServeArgs, egress: &Egress) -> Result<Authorizers, String> {
    if let Some(path) = &a.authorization_config {
        if a.authorization_legacy_given {
            return Err("--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined".into());
        }
        let file = authz::structured::ConfigFile::load_via(path, egress.control_plane())?;
        return Ok(Authorizers {
            modes: Vec::new(),
            webhook: None,
            abac: None,
            config: Some(file),
        });
    }
    let modes = Mode::parse_list(&a.authorization_mode)
        .map_err(|e| format!("--authorization-mode: {e}"))?;
    let webhook_mode = modes.contains(&Mode::Webhook);
    let webhook = match (&a.authorization_webhook_config_file, webhook_mode) {
        (None, true) => {
            return Err("authorization-mode Webhook's authorization config file not passed".into())
        }
        (Some(_), false) => {
            return Err(
                "cannot specify --authorization-webhook-config-file without mode Webhook".into(),
            )
        }
        (None, false) => None,
        (Some(path), true) => {
            let conn = kapi_client::kubeconfig::load(path)
                .map_err(|e| format!("--authorization-webhook-config-file: {e}"))?
                .via(egress.control_plane());
            let settings = authz::webhook::Settings::from_flags(
                &a.authorization_webhook_version,
                a.authorization_webhook_cache_authorized_ttl,
                a.authorization_webhook_cache_unauthorized_ttl,
            );
            Some(Arc::new(authz::webhook::Webhook::new(conn, settings)?))
        }
    };
    let abac = match (&a.authorization_policy_file, modes.contains(&Mode::Abac)) {
        (None, true) => {
            return Err("authorization-mode ABAC's authorization policy file not passed".into())
        }
        (Some(_), false) => {
            return Err("cannot specify --authorization-policy-file without mode ABAC".into())
        }
        (None, false) => None,
        (Some(path), true) => Some(Arc::new(authz::abac::Abac::load(path)?)),
    };
    Ok(Authorizers {
        modes,
        webhook,
        abac,
        config: None,
    })
}
