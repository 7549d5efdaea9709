//! A KMS v2 plugin for tests (feature `testing`), as upstream ships a mock
//! plugin beside its KMS code: the real `v2.KeyManagementService` over gRPC on
//! a unix socket, wrapping DEKs with AES-256-GCM under a key-encryption key per
//! key ID. Tests rotate its key ID, make it unhealthy, make it hang, stop and
//! restart it, and count its calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::aes::Gcm;
use crate::kms::api::key_management_service_server::{
    KeyManagementService, KeyManagementServiceServer,
};
use crate::kms::api::{
    DecryptRequest, DecryptResponse, EncryptRequest, EncryptResponse, StatusRequest, StatusResponse,
};

/// The plugin's keys and behaviour, shared by every socket it serves.
#[derive(Default)]
struct Inner {
    /// The key ID new DEKs are wrapped with, and every key ID's KEK.
    current: Mutex<String>,
    keks: Mutex<HashMap<String, [u8; 32]>>,
    healthz: Mutex<String>,
    hang: AtomicBool,
    status_calls: AtomicUsize,
    encrypt_calls: AtomicUsize,
    decrypt_calls: AtomicUsize,
}

/// A KMS v2 plugin; [`MockKmsPlugin::serve`] puts it on a socket.
#[derive(Clone, Default)]
pub struct MockKmsPlugin {
    inner: Arc<Inner>,
}

/// The plugin serving on a socket; dropping it stops serving, closes every
/// connection (as a plugin process exiting would) and removes the socket.
pub struct Serving {
    task: tokio::task::JoinHandle<()>,
    path: PathBuf,
    connections: Arc<Mutex<Vec<std::os::unix::net::UnixStream>>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
        for conn in self.connections.lock().expect("lock").drain(..) {
            let _ = conn.shutdown(std::net::Shutdown::Both);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl MockKmsPlugin {
    /// A healthy plugin wrapping with key ID `key_id`.
    pub fn new(key_id: &str) -> Self {
        let plugin = MockKmsPlugin::default();
        plugin.rotate(key_id);
        *plugin.inner.healthz.lock().expect("lock") = "ok".into();
        plugin
    }

    /// Wrap new DEKs with `key_id` from now on (old key IDs still unwrap).
    pub fn rotate(&self, key_id: &str) {
        let mut kek = [0u8; 32];
        crate::transformer::random(&mut kek).expect("random");
        self.inner
            .keks
            .lock()
            .expect("lock")
            .entry(key_id.to_owned())
            .or_insert(kek);
        *self.inner.current.lock().expect("lock") = key_id.to_owned();
    }

    /// What `Status` answers as `healthz` (`ok` is healthy).
    pub fn set_healthz(&self, healthz: &str) {
        *self.inner.healthz.lock().expect("lock") = healthz.to_owned();
    }

    /// Never answer any call while set.
    pub fn set_hang(&self, hang: bool) {
        self.inner.hang.store(hang, Ordering::SeqCst);
    }

    pub fn status_calls(&self) -> usize {
        self.inner.status_calls.load(Ordering::SeqCst)
    }

    pub fn encrypt_calls(&self) -> usize {
        self.inner.encrypt_calls.load(Ordering::SeqCst)
    }

    pub fn decrypt_calls(&self) -> usize {
        self.inner.decrypt_calls.load(Ordering::SeqCst)
    }

    /// Serve on a new unix socket at `path`.
    pub fn serve(&self, path: &Path) -> Serving {
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path).expect("bind the plugin's socket");
        let connections = Arc::new(Mutex::new(Vec::new()));
        let kept = connections.clone();
        // Each accepted connection's twin is kept to close it on drop.
        let incoming = UnixListenerStream::new(listener).map(move |conn| {
            let std = conn?.into_std()?;
            kept.lock().expect("lock").push(std.try_clone()?);
            tokio::net::UnixStream::from_std(std)
        });
        let service = KeyManagementServiceServer::new(self.clone());
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Serving {
            task,
            path: path.to_owned(),
            connections,
        }
    }

    async fn hang_if_asked(&self) {
        if self.inner.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }

    fn kek(&self, key_id: &str) -> Result<Gcm, Status> {
        let keks = self.inner.keks.lock().expect("lock");
        let kek = keks
            .get(key_id)
            .ok_or_else(|| Status::not_found(format!("unknown key ID {key_id:?}")))?;
        Gcm::new(kek).map_err(|e| Status::internal(e.0))
    }
}

#[tonic::async_trait]
impl KeyManagementService for MockKmsPlugin {
    async fn status(&self, _: Request<StatusRequest>) -> Result<Response<StatusResponse>, Status> {
        self.inner.status_calls.fetch_add(1, Ordering::SeqCst);
        self.hang_if_asked().await;
        Ok(Response::new(StatusResponse {
            version: "v2".into(),
            healthz: self.inner.healthz.lock().expect("lock").clone(),
            key_id: self.inner.current.lock().expect("lock").clone(),
        }))
    }

    async fn encrypt(
        &self,
        req: Request<EncryptRequest>,
    ) -> Result<Response<EncryptResponse>, Status> {
        self.inner.encrypt_calls.fetch_add(1, Ordering::SeqCst);
        self.hang_if_asked().await;
        let key_id = self.inner.current.lock().expect("lock").clone();
        let ciphertext = self
            .kek(&key_id)?
            .seal(&req.into_inner().plaintext, key_id.as_bytes())
            .map_err(|e| Status::internal(e.0))?;
        let annotations = HashMap::from([("kms.kapi.test".to_owned(), b"mock".to_vec())]);
        Ok(Response::new(EncryptResponse {
            ciphertext,
            key_id,
            annotations,
        }))
    }

    async fn decrypt(
        &self,
        req: Request<DecryptRequest>,
    ) -> Result<Response<DecryptResponse>, Status> {
        self.inner.decrypt_calls.fetch_add(1, Ordering::SeqCst);
        self.hang_if_asked().await;
        let req = req.into_inner();
        if req.annotations.get("kms.kapi.test").map(Vec::as_slice) != Some(b"mock") {
            return Err(Status::invalid_argument(
                "the annotations did not come back",
            ));
        }
        let plaintext = self
            .kek(&req.key_id)?
            .open(&req.ciphertext, req.key_id.as_bytes())
            .map_err(|e| Status::invalid_argument(e.0))?;
        Ok(Response::new(DecryptResponse { plaintext }))
    }
}
