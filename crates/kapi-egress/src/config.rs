//! The `EgressSelectorConfiguration` file: decoded strictly as upstream's
//! universal decoder does (YAML or JSON; `apiVersion` `apiserver.k8s.io/v1beta1`
//! or `v1alpha1` — 1.33 has no `v1` of this kind; a field the type lacks is
//! refused with its path), the deprecated name `master` read as
//! `controlplane` (upstream's conversion of both versions), then validated
//! with upstream's `ValidateEgressSelectorConfiguration` rules and messages.
//!
//! Upstream's messages name the fields as `service.connection.<field>`
//! whatever the selection's index (its paths start from a fixed
//! `service.connection`); they are kept so, for people who search them.

use std::path::Path;

use kapi_machinery::validation::{aggregate_messages, go_quote, FieldError, FieldPath};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

const GROUP: &str = "apiserver.k8s.io";
const KIND: &str = "EgressSelectorConfiguration";
const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
/// upstream's `validEgressSelectorNames`, sorted as `sets.List` prints them.
const NAMES: [&str; 3] = ["cluster", "controlplane", "etcd"];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EgressSelectorConfiguration {
    #[serde(default, deserialize_with = "nullable")]
    pub egress_selections: Vec<EgressSelection>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EgressSelection {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub connection: Connection,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Connection {
    #[serde(default)]
    pub proxy_protocol: String,
    #[serde(default)]
    pub transport: Option<Transport>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Transport {
    #[serde(default)]
    pub tcp: Option<TcpTransport>,
    #[serde(default)]
    pub uds: Option<UdsTransport>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpTransport {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub tls_config: Option<TlsConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UdsTransport {
    #[serde(default)]
    pub uds_name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsConfig {
    #[serde(default)]
    pub ca_bundle: String,
    #[serde(default)]
    pub client_key: String,
    #[serde(default)]
    pub client_cert: String,
}

/// How a selection reaches its network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Direct,
    HttpConnect,
    Grpc,
}

impl Protocol {
    /// The protocol a `proxyProtocol` names (exact case, as upstream compares).
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "Direct" => Some(Protocol::Direct),
            "HTTPConnect" => Some(Protocol::HttpConnect),
            "GRPC" => Some(Protocol::Grpc),
            _ => None,
        }
    }
}

/// A field that may be `null` in the file (Go decodes null as the zero value).
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// Decode a file's text, with `master` renamed `controlplane`.
pub fn parse(data: &str) -> Result<EgressSelectorConfiguration, String> {
    if data.trim().is_empty() {
        return Err("Object 'Kind' is missing in ''".into());
    }
    let mut doc: Value = serde_saphyr::from_str(data).map_err(|e| e.to_string())?;
    let obj = doc
        .as_object_mut()
        .ok_or("couldn't get version/kind; json parse error: not an object")?;
    kapi_machinery::config_file::check_type(obj, GROUP, KIND, &VERSIONS, true)?;
    let mut config: EgressSelectorConfiguration =
        serde_path_to_error::deserialize(doc).map_err(strict_error)?;
    for s in &mut config.egress_selections {
        if s.name == "master" {
            s.name = "controlplane".into();
        }
    }
    Ok(config)
}

/// serde's error as upstream's strict decoder words it.
fn strict_error(e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    kapi_machinery::config_file::strict_error(&path, &e.into_inner().to_string())
}

/// Upstream's `ValidateEgressSelectorConfiguration`: the aggregated message,
/// or `None` when the configuration is valid.
pub fn validate(config: &EgressSelectorConfiguration) -> Option<String> {
    let base = FieldPath::new("service").child("connection");
    let mut errs: Vec<String> = Vec::new();
    for s in &config.egress_selections {
        let c = &s.connection;
        match Protocol::parse(&c.proxy_protocol) {
            Some(Protocol::Direct) => {
                if c.transport.is_some() {
                    errs.push(
                        FieldError::invalid(
                            &base.child("transport"),
                            "direct",
                            "config must be absent for direct connect",
                        )
                        .to_string(),
                    );
                }
            }
            Some(Protocol::HttpConnect) => http_connect(c.transport.as_ref(), &base, &mut errs),
            Some(Protocol::Grpc) => grpc(c.transport.as_ref(), &base, &mut errs),
            None => errs.push(
                FieldError::not_supported(
                    &base.child("protocol"),
                    c.proxy_protocol.as_str(),
                    &["Direct", "HTTPConnect", "GRPC"],
                )
                .to_string(),
            ),
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for (i, s) in config.egress_selections.iter().enumerate() {
        let name = s.name.to_ascii_lowercase();
        if seen.contains(&name) {
            errs.push(FieldError::duplicate(&base.index(i), name.as_str()).to_string());
            continue;
        }
        if !NAMES.contains(&name.as_str()) {
            errs.push(FieldError::not_supported(&base, name.as_str(), &NAMES).to_string());
        }
        seen.push(name);
    }
    aggregate_messages(&errs)
}

fn http_connect(t: Option<&Transport>, base: &FieldPath, errs: &mut Vec<String>) {
    let Some(t) = t else {
        let e = FieldError::required(
            &base.child("transport"),
            "transport must be set for HTTPConnect",
        );
        errs.push(e.to_string());
        return;
    };
    match (&t.tcp, &t.uds) {
        (Some(tcp), Some(_)) => errs.push(format!(
            "{}: Invalid value: {}: TCP and UDS cannot both be set",
            base.child("tcp"),
            go_tcp_transport(tcp)
        )),
        (None, None) => errs.push(
            FieldError::required(&base.child("tcp"), "One of TCP or UDS must be set").to_string(),
        ),
        (Some(tcp), None) => tcp_connection(tcp, base, errs),
        (None, Some(uds)) => uds_connection(uds, base, errs),
    }
}

fn grpc(t: Option<&Transport>, base: &FieldPath, errs: &mut Vec<String>) {
    let Some(t) = t else {
        let e = FieldError::required(&base.child("transport"), "transport must be set for GRPC");
        errs.push(e.to_string());
        return;
    };
    match &t.uds {
        Some(uds) => uds_connection(uds, base, errs),
        None => errs.push(
            FieldError::required(&base.child("uds"), "UDS must be set with GRPC").to_string(),
        ),
    }
}

fn uds_connection(uds: &UdsTransport, base: &FieldPath, errs: &mut Vec<String>) {
    if uds.uds_name.is_empty() {
        let e = FieldError::invalid(
            &base.child("udsName"),
            "nil",
            "must be present for UDS connections",
        );
        errs.push(e.to_string());
    }
}

fn tcp_connection(tcp: &TcpTransport, base: &FieldPath, errs: &mut Vec<String>) {
    if tcp.url.starts_with("http://") {
        if tcp.tls_config.is_some() {
            let e = FieldError::invalid(
                &base.child("tlsConfig"),
                "nil",
                "config must not be present when using HTTP",
            );
            errs.push(e.to_string());
        }
    } else if tcp.url.starts_with("https://") {
        tls_config(tcp.tls_config.as_ref(), base, errs);
    } else {
        let e = FieldError::invalid(
            &base.child("url"),
            tcp.url.as_str(),
            "supported connection protocols are http:// and https://",
        );
        errs.push(e.to_string());
    }
}

fn tls_config(tls: Option<&TlsConfig>, base: &FieldPath, errs: &mut Vec<String>) {
    let Some(tls) = tls else {
        let e = FieldError::required(
            &base.child("tlsConfig"),
            "TLSConfig must be present when using HTTPS",
        );
        errs.push(e.to_string());
        return;
    };
    let path = |f: &str| base.child("tlsConfig").child(f);
    if !tls.ca_bundle.is_empty() && !Path::new(&tls.ca_bundle).exists() {
        let e = FieldError::invalid(
            &path("caBundle"),
            tls.ca_bundle.as_str(),
            "TLS config ca bundle does not exist",
        );
        errs.push(e.to_string());
    }
    let files = [
        (
            "clientCert",
            &tls.client_cert,
            "Using TLS requires clientCert",
            "TLS client cert does not exist",
        ),
        // "requires requires" is upstream's wording.
        (
            "clientKey",
            &tls.client_key,
            "Using TLS requires requires clientKey",
            "TLS client key does not exist",
        ),
    ];
    for (field, value, empty, missing) in files {
        if value.is_empty() {
            errs.push(FieldError::invalid(&path(field), "nil", empty).to_string());
        } else if !Path::new(value).exists() {
            errs.push(FieldError::invalid(&path(field), value.as_str(), missing).to_string());
        }
    }
}

/// The TCP transport as Go's `%#v` prints the value (upstream's message
/// embeds it; Go prints the TLS config's address, shown here by its fields).
fn go_tcp_transport(tcp: &TcpTransport) -> String {
    let tls = match &tcp.tls_config {
        None => "(*apiserver.TLSConfig)(nil)".to_string(),
        Some(t) => format!(
            "&apiserver.TLSConfig{{CABundle:{}, ClientKey:{}, ClientCert:{}}}",
            go_quote(&t.ca_bundle),
            go_quote(&t.client_key),
            go_quote(&t.client_cert)
        ),
    };
    format!(
        "apiserver.TCPTransport{{URL:{}, TLSConfig:{tls}}}",
        go_quote(&tcp.url)
    )
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
