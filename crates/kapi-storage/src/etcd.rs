//! The etcd backend: real etcd v3 over gRPC (`etcd-client`).
//!
//! Every key is stored under `prefix` (default `/registry`, as kube-apiserver).
//! Creates, updates and conditional deletes are single transactions comparing
//! `create_revision` / `mod_revision`, whose else-branch reads the current value so
//! a conflict carries it back (no second round trip). Watches ask for previous
//! values and request progress every `progress_interval`, so an idle watch still
//! learns the current revision. Compaction is etcd's own. A write with a TTL
//! attaches the key to an etcd lease (`etcd_lease.rs`), one shared by writes
//! with the same TTL a little apart; a write without one detaches it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
    TxnResponse, WatchOptions,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::backend::{
    Backend, Deleted, KeyValue, ListOptions, ListPage, Result, Revision, StorageError, WatchStream,
};
use crate::etcd_dial::EtcdDialer;
use crate::etcd_lease::LeaseManager;

/// How to reach etcd.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    pub endpoints: Vec<String>,
    pub prefix: String,
    /// PEM files: the CA that signed etcd's certificate, and our client pair.
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub request_timeout: Duration,
    pub progress_interval: Duration,
    /// How long a lease granted for a TTL is reused by later writes with the
    /// same TTL (upstream `--lease-reuse-duration-seconds`).
    pub lease_reuse: Duration,
    /// Opens the connections to the members (the `etcd` egress selection);
    /// `None`: `etcd-client` connects by itself.
    pub dialer: Option<EtcdDialer>,
}

impl EtcdConfig {
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            prefix: "/registry".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            request_timeout: Duration::from_secs(10),
            progress_interval: Duration::from_secs(5),
            lease_reuse: Duration::from_secs(60),
            dialer: None,
        }
    }
}

#[derive(Clone)]
pub struct EtcdBackend {
    client: Client,
    prefix: String,
    pub(crate) progress_interval: Duration,
    leases: Arc<LeaseManager>,
    /// One client per endpoint, opened when first asked for its Status
    /// ([`Backend::db_sizes`]; the balanced client cannot pick a member).
    members: Arc<Members>,
}

/// The endpoints and a client to each, opened lazily.
struct Members {
    config: EtcdConfig,
    clients: tokio::sync::Mutex<Vec<Option<Client>>>,
}

impl Members {
    /// Every endpoint's `dbSize`; `None` where the member did not answer.
    async fn db_sizes(&self) -> Vec<crate::DbSize> {
        let mut clients = self.clients.lock().await;
        let mut out = Vec::with_capacity(self.config.endpoints.len());
        for (endpoint, slot) in self.config.endpoints.iter().zip(clients.iter_mut()) {
            if slot.is_none() {
                *slot = open(&self.config, std::slice::from_ref(endpoint))
                    .await
                    .ok();
            }
            let bytes = match slot.as_mut() {
                Some(client) => match client.status().await {
                    Ok(status) => Some(status.db_size()),
                    Err(_) => {
                        *slot = None;
                        None
                    }
                },
                None => None,
            };
            out.push(crate::DbSize {
                endpoint: endpoint.clone(),
                bytes,
            });
        }
        out
    }
}

/// How often a request is sent when the connection to the member the balanced
/// channel picked cannot even be opened (a member is down). The channel picks a
/// member at random per request and keeps picking the dead one, so without this
/// every third request fails while the cluster itself is healthy.
const SEND_ATTEMPTS: usize = 8;

/// The connection could not be opened, so the request never reached etcd and
/// sending it again cannot apply it twice (writes included).
fn never_sent(e: &etcd_client::Error) -> bool {
    let text = e.to_string();
    text.contains("tcp connect error") || text.contains("error trying to connect")
}

pub(crate) fn map_err(e: etcd_client::Error) -> StorageError {
    let text = e.to_string();
    if text.contains("required revision has been compacted") {
        return StorageError::Compacted {
            requested: 0,
            compacted: 0,
        };
    }
    if text.contains("future revision") {
        return StorageError::FutureRevision {
            requested: 0,
            current: 0,
        };
    }
    StorageError::Unavailable(format!("etcd: {text}"))
}

fn tls_options(cfg: &EtcdConfig) -> Result<Option<etcd_client::TlsOptions>> {
    if cfg.ca_file.is_none() && cfg.cert_file.is_none() {
        return Ok(None);
    }
    let read =
        |p: &str| std::fs::read(p).map_err(|e| StorageError::Internal(format!("reading {p}: {e}")));
    let mut tls = etcd_client::TlsOptions::new();
    if let Some(ca) = &cfg.ca_file {
        tls = tls.ca_certificate(etcd_client::Certificate::from_pem(read(ca)?));
    }
    if let (Some(cert), Some(key)) = (&cfg.cert_file, &cfg.key_file) {
        tls = tls.identity(etcd_client::Identity::from_pem(read(cert)?, read(key)?));
    }
    Ok(Some(tls))
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// HTTP/2 keep-alive: the ping interval and how long its answer may take.
const KEEP_ALIVE: (Duration, Duration) = (Duration::from_secs(10), Duration::from_secs(5));

/// How every client of `cfg` connects.
fn connect_options(cfg: &EtcdConfig) -> Result<ConnectOptions> {
    let mut opts = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_timeout(cfg.request_timeout)
        .with_keep_alive(KEEP_ALIVE.0, KEEP_ALIVE.1);
    if let Some(tls) = tls_options(cfg)? {
        opts = opts.with_tls(tls);
    }
    Ok(opts)
}

/// A client of `endpoints` (all of `cfg`'s, or one member's), through
/// `cfg`'s dialer when it has one.
async fn open(cfg: &EtcdConfig, endpoints: &[String]) -> Result<Client> {
    let opts = connect_options(cfg)?;
    let Some(dialer) = &cfg.dialer else {
        return Client::connect(endpoints, Some(opts))
            .await
            .map_err(map_err);
    };
    let settings = crate::etcd_dial::Settings {
        connect_timeout: CONNECT_TIMEOUT,
        request_timeout: cfg.request_timeout,
        keep_alive: KEEP_ALIVE,
    };
    crate::etcd_dial::client(dialer, endpoints, tls_options(cfg)?, &settings, opts).await
}

impl EtcdBackend {
    /// Connect and prove the connection with one read.
    pub async fn connect(cfg: &EtcdConfig) -> Result<Self> {
        let client = open(cfg, &cfg.endpoints).await?;
        let backend = EtcdBackend {
            client,
            prefix: cfg.prefix.trim_end_matches('/').to_owned(),
            progress_interval: cfg.progress_interval,
            leases: Arc::new(LeaseManager::new(cfg.lease_reuse)),
            members: Arc::new(Members {
                config: cfg.clone(),
                clients: tokio::sync::Mutex::new(vec![None; cfg.endpoints.len()]),
            }),
        };
        backend.current_revision().await?;
        Ok(backend)
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn leases(&self) -> &LeaseManager {
        &self.leases
    }

    /// A KV client that accepts responses as large as kube-apiserver does
    /// (a LIST of many large objects easily exceeds gRPC's 4 MiB default).
    pub(crate) fn kv(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(i32::MAX as usize)
    }

    pub(crate) fn full(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) fn convert(&self, kv: &etcd_client::KeyValue) -> KeyValue {
        let key = String::from_utf8_lossy(kv.key());
        KeyValue {
            key: key.strip_prefix(&self.prefix).unwrap_or(&key).to_owned(),
            value: Bytes::copy_from_slice(kv.value()),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            version: kv.version(),
        }
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        let mut attempt = 0;
        loop {
            match self.kv().txn(txn.clone()).await {
                Err(e) if never_sent(&e) && attempt + 1 < SEND_ATTEMPTS => attempt += 1,
                r => return r.map_err(map_err),
            }
        }
    }

    /// A range read, sent again like [`Self::txn`] when it never left.
    async fn range(&self, key: String, opts: GetOptions) -> Result<etcd_client::GetResponse> {
        let mut attempt = 0;
        loop {
            match self.kv().get(key.clone(), Some(opts.clone())).await {
                Err(e) if never_sent(&e) && attempt + 1 < SEND_ATTEMPTS => attempt += 1,
                r => return r.map_err(map_err),
            }
        }
    }

    /// The options of a put: attached to a lease for `ttl`, or to none.
    async fn put_options(&self, ttl: Option<Duration>) -> Result<Option<PutOptions>> {
        match ttl {
            Some(ttl) => {
                let id = self.leases.lease(&self.client, ttl).await?;
                Ok(Some(PutOptions::new().with_lease(id)))
            }
            None => Ok(None),
        }
    }

    /// Run a write transaction built with a lease for `ttl`; when etcd no
    /// longer knows the reused lease (revoked, or expired early), once more
    /// with a new one.
    async fn txn_with_ttl(
        &self,
        ttl: Option<Duration>,
        build: impl Fn(Option<PutOptions>) -> Txn,
    ) -> Result<TxnResponse> {
        let first = self.txn(build(self.put_options(ttl).await?)).await;
        match (first, ttl) {
            (Err(e), Some(ttl)) if e.to_string().contains("lease not found") => {
                self.leases.forget(ttl);
                self.txn(build(self.put_options(Some(ttl)).await?)).await
            }
            (r, _) => r,
        }
    }

    /// The value the else-branch `get` of a failed transaction read.
    fn current_from(&self, resp: &TxnResponse) -> Option<KeyValue> {
        resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| self.convert(kv)),
            _ => None,
        })
    }

    fn revision_of(resp: &TxnResponse) -> Revision {
        resp.header().map_or(0, |h| h.revision())
    }

    /// Why a compare-and-swap failed: the key is gone, or it changed.
    fn cas_failure(&self, key: &str, resp: &TxnResponse) -> StorageError {
        match self.current_from(resp) {
            None => StorageError::NotFound { key: key.into() },
            Some(kv) => StorageError::Conflict {
                key: key.into(),
                current: Some(Box::new(kv)),
            },
        }
    }
}

/// The first key after every key that starts with `prefix`.
pub(crate) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let mut opts = GetOptions::new();
        if let Some(rev) = revision.filter(|r| *r > 0) {
            opts = opts.with_revision(rev);
        }
        let resp = self.range(self.full(key), opts).await?;
        Ok(resp.kvs().first().map(|kv| self.convert(kv)))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        let full_prefix = self.full(prefix);
        let start = match &opts.continue_from {
            Some(k) if k.as_str() > prefix => self.full(k),
            _ => full_prefix.clone(),
        };
        let mut get = GetOptions::new().with_range(prefix_end(&full_prefix));
        if opts.limit > 0 {
            get = get.with_limit(opts.limit as i64);
        }
        if let Some(rev) = opts.revision.filter(|r| *r > 0) {
            get = get.with_revision(rev);
        }
        let resp = self.range(start, get).await?;
        let kvs: Vec<KeyValue> = resp.kvs().iter().map(|kv| self.convert(kv)).collect();
        let revision = opts
            .revision
            .filter(|r| *r > 0)
            .unwrap_or_else(|| resp.header().map_or(0, |h| h.revision()));
        let remaining = (resp.count() - kvs.len() as i64).max(0);
        Ok(ListPage {
            more: resp.more(),
            remaining,
            kvs,
            revision,
        })
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let full = self.full(prefix);
        let opts = GetOptions::new()
            .with_range(prefix_end(&full))
            .with_count_only();
        let resp = self.range(full, opts).await?;
        Ok(resp.count())
    }

    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let full = self.full(key);
        let build = |opts: Option<PutOptions>| {
            Txn::new()
                .when([Compare::create_revision(full.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(full.clone(), value.to_vec(), opts)])
        };
        let resp = self.txn_with_ttl(ttl, build).await?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists { key: key.into() });
        }
        let rev = Self::revision_of(&resp);
        Ok(KeyValue {
            key: key.into(),
            value,
            create_revision: rev,
            mod_revision: rev,
            version: 1,
        })
    }

    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let full = self.full(key);
        let build = |opts: Option<PutOptions>| {
            Txn::new()
                .when([Compare::mod_revision(
                    full.clone(),
                    CompareOp::Equal,
                    expected,
                )])
                .and_then([
                    TxnOp::put(full.clone(), value.to_vec(), opts),
                    TxnOp::get(full.clone(), None),
                ])
                .or_else([TxnOp::get(full.clone(), None)])
        };
        let resp = self.txn_with_ttl(ttl, build).await?;
        if !resp.succeeded() {
            return Err(self.cas_failure(key, &resp));
        }
        self.current_from(&resp)
            .ok_or_else(|| StorageError::Internal("etcd: updated key vanished".into()))
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        let full = self.full(key);
        let opts = etcd_client::DeleteOptions::new().with_prev_key();
        let compare = match expected {
            Some(rev) => Compare::mod_revision(full.clone(), CompareOp::Equal, rev),
            None => Compare::create_revision(full.clone(), CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([compare])
            .and_then([TxnOp::delete(full.clone(), Some(opts))])
            .or_else([TxnOp::get(full, None)]);
        let resp = self.txn(txn).await?;
        if !resp.succeeded() {
            return Err(self.cas_failure(key, &resp));
        }
        let prev = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Delete(d) => d.prev_kvs().first().map(|kv| self.convert(kv)),
            _ => None,
        });
        let prev = prev.ok_or_else(|| StorageError::NotFound { key: key.into() })?;
        Ok(Deleted {
            prev,
            revision: Self::revision_of(&resp),
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let full = self.full(prefix);
        let mut opts = WatchOptions::new()
            .with_range(prefix_end(&full))
            .with_prev_key()
            .with_progress_notify();
        if after > 0 {
            opts = opts.with_start_revision(after + 1);
        }
        let stream = self
            .client
            .watch_client()
            .max_decoding_message_size(i32::MAX as usize)
            .watch(full, Some(opts))
            .await
            .map_err(map_err)?;
        let (tx, rx) = mpsc::channel(256);
        let pump = crate::etcd_watch::WatchPump {
            backend: self.clone(),
            requested: after + 1,
            tx,
        };
        tokio::spawn(pump.run(stream));
        Ok(Box::pin(ReceiverStream::new(rx)))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.client
            .kv_client()
            .compact(revision, None)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn current_revision(&self) -> Result<Revision> {
        let resp = self
            .range(self.full("/"), GetOptions::new().with_count_only())
            .await?;
        Ok(resp.header().map_or(0, |h| h.revision()))
    }

    async fn health(&self) -> Result<()> {
        let probe = self.current_revision();
        match tokio::time::timeout(Duration::from_secs(2), probe).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(StorageError::Unavailable(
                "etcd: health probe timed out".into(),
            )),
        }
    }

    async fn db_sizes(&self) -> Result<Vec<crate::DbSize>> {
        Ok(self.members.db_sizes().await)
    }

    fn name(&self) -> &'static str {
        "etcd"
    }
}
