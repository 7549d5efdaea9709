//! The JWT authenticators of a server and where they come from: the
//! `--oidc-*` flags (one issuer, fixed for the server's life) or
//! `--authentication-config` (an `AuthenticationConfiguration` file, whose
//! `jwt` list is reloaded when the file changes).
//!
//! [`Jwt`] is the set requests ask: an `Arc` of the current authenticators,
//! swapped whole by a reload, so a request sees one consistent set.
//! [`ConfigFile`] owns the reloading: it polls the file every second; new
//! contents that decode and validate (and keep the `anonymous` section as it
//! was at start, as upstream demands) become the current set once every new
//! issuer has answered discovery (retried on the next poll otherwise); contents
//! that can never work (bad YAML, invalid fields) are logged once and the old
//! set stays. Errors at start stop the start, naming the field.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use kapi_http::user::UserInfo;

use super::jose;
use super::oidc::config::{Anonymous, AuthenticationConfiguration, JwtAuthenticator as Config};
use super::oidc::{validate, JwtAuthenticator};

/// How often the file is read for changes.
const POLL: Duration = Duration::from_secs(1);
/// How long a reload waits for the new issuers' discovery.
const UPDATE_TIMEOUT: Duration = Duration::from_secs(10);

/// The current JWT authenticators.
#[derive(Debug, Default)]
pub struct Jwt {
    current: RwLock<Arc<Vec<JwtAuthenticator>>>,
}

impl Jwt {
    /// Validate `configs` (with `service_account_issuers` off limits) and
    /// build their authenticators accepting `algorithms`.
    pub fn build(
        configs: &[Config],
        service_account_issuers: &[String],
        algorithms: &[String],
    ) -> Result<Vec<JwtAuthenticator>, String> {
        let config = AuthenticationConfiguration {
            jwt: configs.to_vec(),
            anonymous: None,
        };
        build_validated(&config, service_account_issuers, algorithms)
    }

    /// A set that never changes (the `--oidc-*` flags).
    pub fn fixed(authenticators: Vec<JwtAuthenticator>) -> Arc<Jwt> {
        Arc::new(Jwt {
            current: RwLock::new(Arc::new(authenticators)),
        })
    }

    pub fn current(&self) -> Arc<Vec<JwtAuthenticator>> {
        self.current.read().expect("jwt lock").clone()
    }

    fn replace(&self, authenticators: Vec<JwtAuthenticator>) {
        *self.current.write().expect("jwt lock") = Arc::new(authenticators);
    }

    /// `None` when no authenticator claims the token's issuer (or it is not
    /// a JWT); else the user or why the token is refused.
    pub async fn authenticate(&self, token: &str) -> Option<Result<UserInfo, String>> {
        let current = self.current();
        if current.is_empty() {
            return None;
        }
        let parsed = jose::parse(token).ok()?;
        let a = current.iter().find(|a| a.claims_issuer(&parsed))?;
        Some(a.authenticate(&parsed).await)
    }
}

/// `--authentication-config`: the file, its JWT authenticators and its
/// anonymous section.
#[derive(Debug)]
pub struct ConfigFile {
    path: PathBuf,
    jwt: Arc<Jwt>,
    anonymous: Option<Anonymous>,
    service_account_issuers: Vec<String>,
    /// The contents last acted on (applied, or refused for good).
    tracked: Mutex<String>,
}

/// Validate the whole of `config` and build its JWT authenticators.
fn build_validated(
    config: &AuthenticationConfiguration,
    sa_issuers: &[String],
    algorithms: &[String],
) -> Result<Vec<JwtAuthenticator>, String> {
    let (compiled, errs) = validate::validate(config, sa_issuers);
    if let Some(msg) = kapi_machinery::validation::aggregate(&errs) {
        return Err(format!("invalid authentication configuration: {msg}"));
    }
    config
        .jwt
        .iter()
        .zip(compiled)
        .map(|(c, comp)| JwtAuthenticator::new(c.clone(), comp, algorithms.to_vec()))
        .collect()
}

fn all_algorithms() -> Vec<String> {
    jose::ALL_ALGORITHMS.iter().map(|s| s.to_string()).collect()
}

impl ConfigFile {
    /// Read and validate the file at `path`; its issuers may not be
    /// `service_account_issuers`. Watch it with [`ConfigFile::watch`].
    pub fn load(
        path: &Path,
        service_account_issuers: &[String],
    ) -> Result<Arc<ConfigFile>, String> {
        let shown = path.display();
        let data = std::fs::read_to_string(path).map_err(|e| {
            format!("failed to load authentication configuration from file {shown:?}: {e}")
        })?;
        let config = AuthenticationConfiguration::parse(&data).map_err(|e| {
            format!("failed to load authentication configuration from file {shown:?}: {e}")
        })?;
        let authenticators = build_validated(&config, service_account_issuers, &all_algorithms())?;
        Ok(Arc::new(ConfigFile {
            path: path.to_path_buf(),
            jwt: Jwt::fixed(authenticators),
            anonymous: config.anonymous.clone(),
            service_account_issuers: service_account_issuers.to_vec(),
            tracked: Mutex::new(data),
        }))
    }

    /// The JWT authenticators, current as of the last reload.
    pub fn jwt(&self) -> &Arc<Jwt> {
        &self.jwt
    }

    /// The anonymous section, as loaded at start.
    pub fn anonymous(&self) -> Option<&Anonymous> {
        self.anonymous.as_ref()
    }

    /// Poll the file for changes until `self` is dropped.
    pub fn watch(self: &Arc<Self>) {
        crate::config_file::poll_while_alive(self, POLL, |me| async move { me.reload().await });
    }

    /// Act on the file's contents if they changed.
    async fn reload(&self) {
        let data = match tokio::fs::read_to_string(&self.path).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "failed to read authentication config file");
                return;
            }
        };
        if *self.tracked.lock().expect("tracked lock") == data {
            return;
        }
        match self.apply(&data).await {
            Ok(()) => tracing::info!(path = %self.path.display(), "reloaded authentication config"),
            Err((e, retry)) => {
                tracing::error!(error = %e, "failed to reload authentication config");
                if retry {
                    return;
                }
            }
        }
        *self.tracked.lock().expect("tracked lock") = data;
    }

    /// Switch to `data`; the error says whether a later poll may succeed.
    async fn apply(&self, data: &str) -> Result<(), (String, bool)> {
        let config = AuthenticationConfiguration::parse(data).map_err(|e| (e, false))?;
        if config.anonymous != self.anonymous {
            let msg = "anonymous: Forbidden: changed from initial configuration file";
            return Err((msg.to_string(), false));
        }
        let fresh = build_validated(&config, &self.service_account_issuers, &all_algorithms())
            .map_err(|e| (e, false))?;
        for a in &fresh {
            match tokio::time::timeout(UPDATE_TIMEOUT, a.initialize()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err((e, true)),
                Err(_) => {
                    let msg = format!("issuer {:?}: discovery timed out", a.issuer());
                    return Err((msg, true));
                }
            }
        }
        self.jwt.replace(fresh);
        Ok(())
    }
}
