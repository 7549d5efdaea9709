//! The HTTP side: a kube-rs client built from any kubeconfig (client certificate
//! or token, whatever the kubeconfig says), used only for raw requests so the
//! same bytes go to kapi and to kube-apiserver.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;

#[derive(Clone)]
pub struct Api {
    client: kube::Client,
    pub ns: String,
    kubeconfig: Option<std::path::PathBuf>,
}

impl Api {
    pub async fn connect(kubeconfig: Option<&std::path::Path>, ns: &str) -> Result<Api, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = match kubeconfig {
            Some(path) => {
                let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
                kube::Config::from_custom_kubeconfig(kc, &Default::default())
                    .await
                    .map_err(|e| e.to_string())?
            }
            None => kube::Config::infer().await.map_err(|e| e.to_string())?,
        };
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        Ok(Api {
            client,
            ns: ns.to_owned(),
            kubeconfig: kubeconfig.map(std::path::Path::to_path_buf),
        })
    }

    /// The same server through a client of its own (its own connection).
    pub async fn reconnect(&self) -> Result<Api, String> {
        Api::connect(self.kubeconfig.as_deref(), &self.ns).await
    }

    pub fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.ns)
    }

    /// One request; the status and the whole body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(u16, Bytes), String> {
        let resp = self.open(method, path, body).await?;
        let code = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((code, bytes))
    }

    /// A request whose body is read by the caller (watches).
    pub async fn open(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Response<kube::client::Body>, String> {
        let mut req = Request::builder().method(method).uri(path);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(kube::client::Body::from(body.unwrap_or_default()))
            .map_err(|e| e.to_string())?;
        self.client.send(req).await.map_err(|e| e.to_string())
    }

    /// Make sure the namespace exists.
    pub async fn ensure_namespace(&self) -> Result<(), String> {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": self.ns}});
        let (code, text) = self
            .send(
                Method::POST,
                "/api/v1/namespaces",
                Some(body.to_string().into_bytes()),
            )
            .await?;
        match code {
            201 | 409 => Ok(()),
            _ => Err(format!(
                "creating namespace: {code} {}",
                String::from_utf8_lossy(&text)
            )),
        }
    }
}

/// A ConfigMap named `name` with a payload of `size` bytes.
pub fn configmap(name: &str, size: usize) -> Vec<u8> {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"bench": "kapi"}},
        "data": {"payload": "x".repeat(size)},
    })
    .to_string()
    .into_bytes()
}

/// The value of the first `"field":"…"` in a JSON text (no parsing; enough for
/// the metadata of watch events of objects this tool wrote).
pub fn first_string<'a>(text: &'a [u8], field: &str) -> Option<&'a str> {
    let pat = format!("\"{field}\":\"");
    let start = find(text, pat.as_bytes())? + pat.len();
    let end = start + text[start..].iter().position(|b| *b == b'"')?;
    std::str::from_utf8(&text[start..end]).ok()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
