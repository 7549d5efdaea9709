//! The gRPC client of one KMS v2 plugin: `Status`, `Encrypt` and `Decrypt`
//! over its unix socket (`unix:///path`, or `unix:///@name` for an abstract
//! socket), each call bounded by the provider's `timeout` — a plugin that
//! hangs is an error after that long, never a stuck request. The connection
//! is made on first use and again after the plugin restarts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use kapi_egress::unix::UnixSocket;
use tonic::transport::{Channel, Endpoint, Uri};

use super::api::key_management_service_client::KeyManagementServiceClient;
use super::api::{DecryptRequest, EncryptRequest, EncryptResponse, StatusRequest, StatusResponse};

#[derive(Clone)]
pub struct KmsClient {
    name: String,
    timeout: Duration,
    client: KeyManagementServiceClient<Channel>,
}

fn parse_endpoint(endpoint: &str) -> Result<UnixSocket, String> {
    let rest = endpoint.strip_prefix("unix:").ok_or_else(|| {
        format!(
            "unsupported scheme in {endpoint:?} for remote KMS provider, only unix is supported"
        )
    })?;
    // `unix:///path` (empty host) or `unix:/path`; `unix://host/path` is no socket.
    let path = match rest.strip_prefix("//") {
        Some(after) if after.starts_with('/') => after,
        Some(_) => {
            return Err(format!(
                "invalid endpoint {endpoint:?} for remote KMS provider"
            ))
        }
        None => rest,
    };
    if path.is_empty() {
        return Err(format!(
            "invalid endpoint {endpoint:?} for remote KMS provider"
        ));
    }
    match path.strip_prefix("/@") {
        Some(name) => Ok(UnixSocket::Abstract(name.to_owned())),
        None => Ok(UnixSocket::Path(PathBuf::from(path))),
    }
}

/// A gRPC failure as Go's grpc names it.
fn rpc_error(status: tonic::Status) -> String {
    format!(
        "rpc error: code = {:?} desc = {}",
        status.code(),
        status.message()
    )
}

impl KmsClient {
    /// A client of the plugin at `endpoint`; nothing is dialled yet.
    pub fn new(name: &str, endpoint: &str, timeout: Duration) -> Result<Self, String> {
        let socket = parse_endpoint(endpoint)?;
        // The URI only fills the request's authority; the connector dials the socket.
        let channel = Endpoint::from_static("http://localhost").connect_with_connector_lazy(
            tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move { socket.connect().await.map(TokioIo::new) }
            }),
        );
        Ok(KmsClient {
            name: name.to_owned(),
            timeout,
            client: KeyManagementServiceClient::new(channel),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn call<T, F>(&self, what: &str, call: F) -> Result<T, String>
    where
        F: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(resp)) => Ok(resp.into_inner()),
            Ok(Err(status)) => Err(rpc_error(status)),
            Err(_) => Err(format!(
                "rpc error: code = DeadlineExceeded desc = KMS plugin {:?} did not answer {what} within {:?}",
                self.name, self.timeout
            )),
        }
    }

    pub async fn status(&self) -> Result<StatusResponse, String> {
        let mut client = self.client.clone();
        self.call("Status", client.status(StatusRequest {})).await
    }

    pub async fn encrypt(&self, uid: &str, plaintext: &[u8]) -> Result<EncryptResponse, String> {
        let mut client = self.client.clone();
        let req = EncryptRequest {
            plaintext: plaintext.to_vec(),
            uid: uid.to_owned(),
        };
        self.call("Encrypt", client.encrypt(req)).await
    }

    pub async fn decrypt(
        &self,
        uid: &str,
        ciphertext: &[u8],
        key_id: &str,
        annotations: &HashMap<String, Vec<u8>>,
    ) -> Result<Vec<u8>, String> {
        let mut client = self.client.clone();
        let req = DecryptRequest {
            ciphertext: ciphertext.to_vec(),
            uid: uid.to_owned(),
            key_id: key_id.to_owned(),
            annotations: annotations.clone(),
        };
        Ok(self.call("Decrypt", client.decrypt(req)).await?.plaintext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            parse_endpoint("unix:///var/run/kms.sock"),
            Ok(UnixSocket::Path("/var/run/kms.sock".into()))
        );
        assert_eq!(
            parse_endpoint("unix:///@kms"),
            Ok(UnixSocket::Abstract("kms".into()))
        );
        assert!(parse_endpoint("tcp://x:1").is_err());
        assert!(parse_endpoint("unix://host/x").is_err());
        assert_eq!(
            parse_endpoint("unix:/k.sock"),
            Ok(UnixSocket::Path("/k.sock".into()))
        );
    }
}
