//! The conversions and cross-flag checks behind [`super::ServeArgs`]: one
//! flag's value turned into what `kapi serve` runs with (media type, node
//! port range, admission selection, watch cache sizes, etcd overrides, SNI
//! pairs, …), or the flags refused together as upstream refuses them.

use std::path::PathBuf;

use super::Override;
use crate::flags::Flags;

/// One of the three media types upstream stores in; empty is the default
/// (protobuf). The error is upstream's.
pub(super) fn storage_media_type(f: &Flags) -> Result<kapi_registry::MediaType, String> {
    use kapi_registry::MediaType;
    let given = f.string("storage-media-type");
    if given.is_empty() {
        return Ok(MediaType::default());
    }
    MediaType::parse(&given).ok_or_else(|| {
        let mut allowed: Vec<&str> = MediaType::ALL.iter().map(|m| m.as_str()).collect();
        allowed.sort_unstable();
        format!(
            "--storage-media-type {given:?} invalid, allowed values: {}",
            allowed.join(", ")
        )
    })
}

/// `--service-account-signing-endpoint`, refused as upstream refuses it: with
/// a key file, without the `ExternalServiceAccountTokenSigner` gate, or naming
/// no socket (every error, one per line).
pub(super) fn signing_endpoint(
    f: &Flags,
    gates: &crate::flags::gates::FeatureGates,
) -> Result<Option<String>, String> {
    let Some(endpoint) = f.opt_string("service-account-signing-endpoint") else {
        return Ok(None);
    };
    let mut errors = Vec::new();
    if f.opt_string("service-account-signing-key-file").is_some()
        || !f.list_nonempty("service-account-key-file").is_empty()
    {
        errors.push("can't set `--service-account-signing-key-file` and/or `--service-account-key-file` with `--service-account-signing-endpoint` (They are mutually exclusive)".to_string());
    }
    if !gates.enabled("ExternalServiceAccountTokenSigner") {
        errors.push("setting `--service-account-signing-endpoint` requires enabling ExternalServiceAccountTokenSigner feature gate".into());
    }
    if let Err(e) = kapi_auth::authn::external_signer::check_endpoint(&endpoint) {
        errors.push(e);
    }
    if errors.is_empty() {
        Ok(Some(endpoint))
    } else {
        Err(errors.join("\n"))
    }
}

/// The mixed-version proxy's flags need its gate, and the gate needs
/// `StorageVersionAPI`, as upstream validates them (kapi does not implement
/// the proxy itself: with the gate on the flags are accepted and named in the
/// log as not implemented).
pub(super) fn check_peer_flags(
    f: &Flags,
    gates: &crate::flags::gates::FeatureGates,
) -> Result<(), String> {
    let mut errors = Vec::new();
    if gates.enabled("UnknownVersionInteroperabilityProxy") {
        if !gates.enabled("StorageVersionAPI") {
            errors.push(
                "UnknownVersionInteroperabilityProxy feature requires StorageVersionAPI feature flag to be enabled"
                    .to_string(),
            );
        }
    } else {
        for flag in ["peer-ca-file", "peer-advertise-ip", "peer-advertise-port"] {
            if f.opt_string(flag).is_some() {
                errors.push(format!(
                    "--{flag} requires UnknownVersionInteroperabilityProxy feature to be turned on"
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// The admission chain the admission flags select (see `ServeArgs::admission`).
pub(super) fn admission(f: &Flags) -> Result<kapi_admission_plugins::Selection, String> {
    use kapi_admission_plugins::Selection;
    let enable = implemented_plugins(f.list_nonempty("enable-admission-plugins"));
    let disable = f.list_nonempty("disable-admission-plugins");
    // As upstream, a given flag clashes even when empty.
    let selection = if f.given("admission-control") {
        if f.given("enable-admission-plugins") || f.given("disable-admission-plugins") {
            return Err("admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive".into());
        }
        Selection::from_admission_control(&implemented_plugins(
            f.list_nonempty("admission-control"),
        ))?
    } else {
        Selection::from_flags(&enable, &disable)?
    };
    let selection = selection.with_toleration_seconds(
        f.int_in("default-not-ready-toleration-seconds", i64::MIN, i64::MAX)?,
        f.int_in("default-unreachable-toleration-seconds", i64::MIN, i64::MAX)?,
    );
    match f.opt_path("admission-control-config-file") {
        Some(path) => {
            let configs = kapi_admission_plugins::config::PluginConfigs::load(&path)?;
            selection.with_configs(&configs)
        }
        None => Ok(selection),
    }
}

/// The plugins named without the upstream ones kapi lacks, each named in the
/// log; unknown names stay so that the selection refuses them.
fn implemented_plugins(names: Vec<String>) -> Vec<String> {
    use kapi_admission_plugins::{Selection, ORDER};
    names
        .into_iter()
        .filter(|n| {
            let lacking = ORDER.contains(&n.as_str())
                && Selection::from_flags(std::slice::from_ref(n), &[]).is_err();
            if lacking {
                tracing::warn!("admission plugin {n} accepted, not implemented yet");
            }
            !lacking
        })
        .collect()
}

/// `key=value` items (a key alone has an empty value).
pub(super) fn pairs(items: &[String]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|i| match i.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None => (i.trim().to_owned(), String::new()),
        })
        .collect()
}

/// `resource[.group]#size` items; the resources whose size is 0 (the only
/// size that matters since the cache sizes itself, as upstream).
pub(super) fn watch_cache_sizes(items: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut off = Vec::new();
    for item in items {
        let invalid = || format!("invalid value of watch cache size: {item}");
        let (resource, size) = item.split_once('#').ok_or_else(invalid)?;
        let size: i64 = size
            .trim()
            .parse()
            .map_err(|_| format!("invalid size of watch cache size: {item}"))?;
        if size < 0 {
            return Err(format!("watch cache size cannot be negative: {item}"));
        }
        if size == 0 {
            let (resource, group) = resource.split_once('.').unwrap_or((resource, ""));
            off.push((group.to_owned(), resource.to_owned()));
        }
    }
    Ok(off)
}

/// `group/resource#server;server` items (core resources: `/events#…`).
pub(super) fn etcd_servers_overrides(items: &[String]) -> Result<Vec<Override>, String> {
    let invalid = || {
        "--etcd-servers-overrides invalid, must be of format: group/resource#servers, \
         where servers are URLs, semicolon separated"
            .to_string()
    };
    let mut out = Vec::new();
    for item in items {
        let (gr, servers) = item.split_once('#').ok_or_else(invalid)?;
        let (group, resource) = gr.split_once('/').ok_or_else(invalid)?;
        let servers: Vec<String> = servers
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if resource.is_empty() || servers.is_empty() {
            return Err(invalid());
        }
        out.push(((group.to_owned(), resource.to_owned()), servers));
    }
    Ok(out)
}

/// `cert,key[:name,...]` (the flag type checked the shape).
pub(super) fn sni(v: &str) -> (PathBuf, PathBuf, Vec<String>) {
    let (files, names) = v.split_once(':').unwrap_or((v, ""));
    let (cert, key) = files.split_once(',').unwrap_or((files, ""));
    let names = names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    (PathBuf::from(cert.trim()), PathBuf::from(key.trim()), names)
}

pub(super) fn goaway_chance(f: &Flags) -> Result<f64, String> {
    let v: f64 = f.string("goaway-chance").parse().unwrap_or(0.0);
    if !(0.0..=0.02).contains(&v) {
        return Err("--goaway-chance can not be less than 0 or greater than 0.02".into());
    }
    Ok(v)
}

/// `--service-node-port-range` as (first, last); kube-apiserver refuses a
/// range that cannot hold one port.
pub(super) fn node_port_range(f: &Flags) -> Result<(u16, u16), String> {
    let (base, size) = crate::flags::value::port_range(&f.string("service-node-port-range"))?;
    if size == 0 {
        return Err("--service-node-port-range must not be empty".into());
    }
    Ok((base, base + (size - 1)))
}

/// `--kubernetes-service-node-port`, checked as upstream: a port, inside
/// `--service-node-port-range` when not 0.
pub(super) fn kubernetes_service_node_port(f: &Flags) -> Result<u16, String> {
    let port = f.int_in("kubernetes-service-node-port", i64::MIN, i64::MAX)?;
    if !(0..=65535).contains(&port) {
        return Err(format!("--kubernetes-service-node-port {port} must be between 0 and 65535, inclusive. If 0, the Kubernetes master service will be of type ClusterIP."));
    }
    let (lo, hi) = node_port_range(f)?;
    if port > 0 && !(i64::from(lo)..=i64::from(hi)).contains(&port) {
        return Err(format!(
            "kubernetes service node port range {lo}-{hi} doesn't contain {port}"
        ));
    }
    Ok(port as u16)
}

/// `lease` and `none` as kapi has them; upstream's deprecated `master-count`
/// keeps the endpoints too, so it works as `lease`.
pub(super) fn endpoint_reconciler(f: &Flags) -> Result<String, String> {
    match f.string("endpoint-reconciler-type").as_str() {
        "lease" | "master-count" => Ok("lease".into()),
        "none" => Ok("none".into()),
        other => Err(format!(
            "--endpoint-reconciler-type: unknown type {other:?} (master-count, lease, none)"
        )),
    }
}
