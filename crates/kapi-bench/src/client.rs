//! The HTTP side: a kube-rs client built from any kubeconfig (client certificate
//! or token, whatever the kubeconfig says), used only for raw requests so the
//! same bytes go to kapi and to kube-apiserver. With `protobuf` the client talks
//! as Go clients configured for protobuf do: protobuf request bodies and
//! `Accept: application/vnd.kubernetes.protobuf, application/json`.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::Value;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

#[derive(Clone)]
pub struct Api {
    client: kube::Client,
    /// What the client was built from (`lean.rs` builds its own connections).
    pub config: kube::Config,
    pub ns: String,
    pub protobuf: bool,
    /// Whole LISTs are read by a lean reader (`lean.rs`), not kube-rs's client.
    pub lean: bool,
}

impl Api {
    pub async fn connect(
        kubeconfig: Option<&std::path::Path>,
        ns: &str,
        protobuf: bool,
    ) -> Result<Api, String> {
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
        Api::from_config(config, ns.to_owned(), protobuf)
    }

    fn from_config(config: kube::Config, ns: String, protobuf: bool) -> Result<Api, String> {
        let client = kube::Client::try_from(config.clone()).map_err(|e| e.to_string())?;
        Ok(Api {
            client,
            config,
            ns,
            protobuf,
            lean: false,
        })
    }

    /// The same server through a client of its own (its own connection), from
    /// the configuration already read.
    pub fn reconnect(&self) -> Result<Api, String> {
        let mut api = Api::from_config(self.config.clone(), self.ns.clone(), self.protobuf)?;
        api.lean = self.lean;
        Ok(api)
    }

    /// The `Accept` header of a GET in the client's encoding.
    pub fn accept(&self) -> String {
        if self.protobuf {
            format!("{PROTOBUF}, application/json")
        } else {
            "application/json".to_owned()
        }
    }

    /// A request body for `obj` in the client's encoding.
    pub fn body(&self, obj: &Value) -> Vec<u8> {
        if self.protobuf {
            kapi_protobuf::encode_object(obj).expect("a built-in kind")
        } else {
            serde_json::to_vec(obj).expect("JSON values serialize")
        }
    }

    /// A response body, whichever encoding the server chose.
    pub fn decode(&self, body: &[u8]) -> Result<Value, String> {
        if body.starts_with(b"k8s\0") {
            kapi_protobuf::decode_object(body, None).map_err(|e| e.to_string())
        } else {
            serde_json::from_slice(body).map_err(|e| e.to_string())
        }
    }

    pub fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.ns)
    }

    /// The path of a watch of the namespace's ConfigMaps from now, at the
    /// revision of a one-item LIST. A watch without a `resourceVersion` first
    /// replays every object already there as ADDED (upstream's semantics), so
    /// each run in a namespace used before would start with a burst of them.
    pub async fn watch_from_now(&self) -> Result<String, String> {
        let mut json = self.clone();
        json.protobuf = false;
        let base = self.configmaps();
        let (status, body) = json
            .send(Method::GET, &format!("{base}?limit=1"), None)
            .await?;
        if status != 200 {
            return Err(format!("LIST for the watch's revision: HTTP {status}"));
        }
        let rv = first_string(&body, "resourceVersion").ok_or("the LIST has no resourceVersion")?;
        Ok(format!("{base}?watch=true&resourceVersion={rv}"))
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

    /// One request whose body is read to the end and counted, not kept: the
    /// status and the number of bytes (time to the last byte, as `curl -o
    /// /dev/null` measures it, without the client's own copy into one buffer).
    pub async fn drain(&self, method: Method, path: &str) -> Result<(u16, usize), String> {
        let resp = self.open(method, path, None).await?;
        let code = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut total = 0;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Some(data) = frame.data_ref() {
                total += data.len();
            }
        }
        Ok((code, total))
    }

    /// A request whose body is read by the caller (watches).
    pub async fn open(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Response<kube::client::Body>, String> {
        // Watches stay JSON: the watch scenarios read events as JSON lines.
        let protobuf = self.protobuf && !path.contains("watch=true");
        let mut req = Request::builder().method(method).uri(path);
        if body.is_some() {
            let ct = if protobuf {
                PROTOBUF
            } else {
                "application/json"
            };
            req = req.header("content-type", ct);
        }
        if protobuf {
            req = req.header("accept", self.accept());
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
            .send(Method::POST, "/api/v1/namespaces", Some(self.body(&body)))
            .await?;
        match code {
            201 | 409 => Ok(()),
            _ => Err(format!(
                "creating namespace: {code} {}",
                String::from_utf8_lossy(&text)
            )),
        }
    }

    /// A ConfigMap named `name` with a payload of `size` bytes, as a request body.
    pub fn configmap(&self, name: &str, size: usize) -> Vec<u8> {
        self.body(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"bench": "kapi"}},
            "data": {"payload": "x".repeat(size)},
        }))
    }
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
