//! `--authorization-config`: the authorizer chain an
//! `AuthorizationConfiguration` file describes (`config.rs`), reloaded when the
//! file changes.
//!
//! [`ConfigFile::load`] reads and validates the file at start (an error stops
//! the start, naming the field). [`Reloading`] is the authorizer the server
//! asks: an `Arc` of the current chain, swapped whole. It polls the file every
//! second; new contents that decode, validate and whose webhooks' kubeconfig
//! files load become the chain (webhooks start with empty caches, as
//! upstream's rebuilt authorizers do); contents that fail are logged once and
//! the running chain stays. The same RBAC and Node authorizers serve every
//! chain (their compiled views of the watch cache are not rebuilt).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;

use super::config::{self, Validated};
use super::{node, rbac, webhook};
use super::{AlwaysAllow, AlwaysDeny, Attributes, Authorizer, Chain, Decision, RuleSet};
use kapi_egress::Dialer;
use kapi_http::user::UserInfo;

const POLL: Duration = Duration::from_secs(1);

/// The configuration file as loaded at start.
pub struct ConfigFile {
    path: PathBuf,
    data: String,
    authorizers: Vec<Validated>,
    /// The webhooks of `authorizers`, connected, in order.
    hooks: Vec<Arc<webhook::Webhook>>,
    /// Opens the webhooks' connections (the `controlplane` egress selection).
    dialer: Arc<dyn Dialer>,
}

impl std::fmt::Debug for ConfigFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigFile")
            .field("path", &self.path)
            .field("authorizers", &self.authorizers)
            .finish_non_exhaustive()
    }
}

impl ConfigFile {
    /// The file at `path`, its webhooks dialled directly.
    pub fn load(path: &Path) -> Result<ConfigFile, String> {
        ConfigFile::load_via(path, Arc::new(kapi_egress::TcpDialer))
    }

    /// The file at `path`, its webhooks' connections (also after a reload)
    /// opened by `dialer`.
    pub fn load_via(path: &Path, dialer: Arc<dyn Dialer>) -> Result<ConfigFile, String> {
        let data = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "failed to read authorization config file {:?}: {e}",
                path.display()
            )
        })?;
        let authorizers = config::parse(&data).map_err(|e| {
            format!(
                "invalid authorization config file {:?}: {e}",
                path.display()
            )
        })?;
        // The webhooks' kubeconfig files must load too.
        let hooks = webhooks(&authorizers, &dialer).map_err(|e| {
            format!(
                "invalid authorization config file {:?}: {e}",
                path.display()
            )
        })?;
        Ok(ConfigFile {
            path: path.to_path_buf(),
            data,
            authorizers,
            hooks,
            dialer,
        })
    }
}

/// Connect every webhook of `list`.
fn webhooks(
    list: &[Validated],
    dialer: &Arc<dyn Dialer>,
) -> Result<Vec<Arc<webhook::Webhook>>, String> {
    list.iter()
        .filter_map(|a| match a {
            Validated::Webhook(w) => Some(w),
            _ => None,
        })
        .map(|w| {
            let conn = kapi_client::kubeconfig::load(Path::new(&w.kubeconfig))
                .map_err(|e| format!("authorizer {:?}: {e}", w.name))?
                .via(dialer.clone());
            webhook::Webhook::new(conn, w.settings.clone()).map(Arc::new)
        })
        .collect()
}

/// The chain of `list`, its webhooks connected.
fn chain(
    list: &[Validated],
    dialer: &Arc<dyn Dialer>,
    rbac: &Arc<rbac::Rbac>,
    node: &Arc<node::Node>,
) -> Result<Chain, String> {
    Ok(chain_of(list, webhooks(list, dialer)?, rbac, node))
}

/// The chain of `list` with its webhooks `hooks` (in order).
fn chain_of(
    list: &[Validated],
    hooks: Vec<Arc<webhook::Webhook>>,
    rbac: &Arc<rbac::Rbac>,
    node: &Arc<node::Node>,
) -> Chain {
    let mut hooks = hooks.into_iter();
    let authorizers = list
        .iter()
        .map(|a| -> Arc<dyn Authorizer> {
            match a {
                Validated::Node => node.clone(),
                Validated::Rbac => rbac.clone(),
                Validated::AlwaysAllow => Arc::new(AlwaysAllow),
                Validated::AlwaysDeny => Arc::new(AlwaysDeny),
                Validated::Webhook(_) => hooks.next().expect("one webhook per entry"),
            }
        })
        .collect();
    Chain::of(authorizers)
}

/// The chain of a configuration file, current as of the last reload.
pub struct Reloading {
    path: PathBuf,
    dialer: Arc<dyn Dialer>,
    rbac: Arc<rbac::Rbac>,
    node: Arc<node::Node>,
    chain: RwLock<Arc<Chain>>,
    /// The contents last acted on (applied, or refused).
    tracked: Mutex<String>,
}

impl Reloading {
    /// The chain of `file`, watched for changes until dropped.
    pub fn start(file: ConfigFile, rbac: Arc<rbac::Rbac>, node: Arc<node::Node>) -> Arc<Reloading> {
        let current = chain_of(&file.authorizers, file.hooks, &rbac, &node);
        let me = Arc::new(Reloading {
            path: file.path,
            dialer: file.dialer,
            rbac,
            node,
            chain: RwLock::new(Arc::new(current)),
            tracked: Mutex::new(file.data),
        });
        crate::config_file::poll_while_alive(&me, POLL, |me| async move { me.reload().await });
        me
    }

    fn current(&self) -> Arc<Chain> {
        self.chain.read().expect("chain lock").clone()
    }

    async fn reload(&self) {
        let data = match tokio::fs::read_to_string(&self.path).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "failed to read authorization config file");
                return;
            }
        };
        if *self.tracked.lock().expect("tracked lock") == data {
            return;
        }
        let built = config::parse(&data)
            .and_then(|list| chain(&list, &self.dialer, &self.rbac, &self.node));
        match built {
            Ok(c) => {
                *self.chain.write().expect("chain lock") = Arc::new(c);
                tracing::info!(path = %self.path.display(), "reloaded authorization config");
            }
            Err(e) => tracing::error!(error = %e, "failed to reload authorization config"),
        }
        *self.tracked.lock().expect("tracked lock") = data;
    }
}

#[async_trait]
impl Authorizer for Reloading {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        self.current().authorize(attrs).await
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        self.current().rules_for(user, namespace).await
    }
}
