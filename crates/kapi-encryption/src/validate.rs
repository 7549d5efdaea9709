//! Validation of a decoded [`EncryptionConfiguration`], rule for rule and
//! message for message as upstream's `ValidateEncryptionConfiguration`: at
//! least one entry, each with resources and providers; no duplicate or masked
//! resources within an entry; lower-case names; no `*`, no `resource.*`, no
//! `events.k8s.io` or `extensions` group, none of the resources without a REST
//! API; one provider per list element; keys named, base64, of a valid length;
//! KMS providers named (uniquely, without `:` for v2), with a positive timeout,
//! a `unix` endpoint, `v1` or `v2`, and a `cachesize` only for v1.

use std::collections::HashSet;

use base64::Engine;
use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::{json, Value};

use crate::config::{EncryptionConfiguration, Key, KmsConfiguration, ProviderConfiguration};
use crate::GroupResource;

const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// Every rule `config` breaks (empty when valid). `reload` is
/// `--encryption-provider-config-automatic-reload`.
pub fn validate(config: &EncryptionConfiguration, reload: bool) -> Vec<FieldError> {
    let root = FieldPath::new("resources");
    let entries = config.resources.as_deref().unwrap_or_default();
    if entries.is_empty() {
        return vec![FieldError::required(
            &root,
            "at least one resources is required",
        )];
    }
    let mut errs = Vec::new();
    let mut kms_names = HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let r = root.index(i).child("resources");
        let p = root.index(i).child("providers");
        let resources = entry.resources.as_deref().unwrap_or_default();
        if resources.is_empty() {
            errs.push(FieldError::required(
                &r,
                format!("at least one {r} is required"),
            ));
        }
        errs.extend(overlap(resources, &r));
        errs.extend(names(resources, &r));
        let providers = entry.providers.as_deref().unwrap_or_default();
        if providers.is_empty() {
            errs.push(FieldError::required(
                &p,
                format!("at least one {p} is required"),
            ));
        }
        for (j, provider) in providers.iter().enumerate() {
            errs.extend(provider_errors(
                provider,
                &p.index(j),
                &mut kms_names,
                reload,
            ));
        }
    }
    errs
}

fn provider_errors(
    provider: &ProviderConfiguration,
    path: &FieldPath,
    kms_names: &mut HashSet<String>,
    reload: bool,
) -> Vec<FieldError> {
    match provider.count() {
        0 => return vec![FieldError::invalid(
            path,
            json!({}),
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        )],
        1 => {}
        _ => return vec![FieldError::invalid(
            path,
            json!("<several providers>"),
            "more than one provider specified in a single element, should split into different list elements",
        )],
    }
    let keys = |keys: &Option<Vec<Key>>, name: &str, sizes: &[usize]| {
        validate_keys(
            keys.as_deref().unwrap_or_default(),
            &path.child(name).child("keys"),
            sizes,
        )
    };
    if let Some(kms) = &provider.kms {
        let errs = validate_kms(kms, &path.child("kms"), kms_names, reload);
        kms_names.insert(kms.name.clone());
        errs
    } else if let Some(c) = &provider.aesgcm {
        keys(&c.keys, "aesgcm", AES_KEY_SIZES)
    } else if let Some(c) = &provider.aescbc {
        keys(&c.keys, "aescbc", AES_KEY_SIZES)
    } else if let Some(c) = &provider.secretbox {
        keys(&c.keys, "secretbox", SECRETBOX_KEY_SIZES)
    } else {
        Vec::new()
    }
}

fn overlap(resources: &[String], path: &FieldPath) -> Vec<FieldError> {
    if resources.len() < 2 {
        return Vec::new();
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut duplicate, mut overlapping) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b {
                duplicate = true;
                continue;
            }
            let any = a.group == "*" && a.resource == "*";
            if any || (a.group == b.group && (a.resource == "*" || b.resource == "*")) {
                overlapping = true;
            }
        }
    }
    let value = Value::from(resources.to_vec());
    let mut errs = Vec::new();
    if duplicate {
        errs.push(FieldError::invalid(
            path,
            value.clone(),
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlapping {
        errs.push(FieldError::invalid(path, value, "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"));
    }
    errs
}

fn names(resources: &[String], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let gr = GroupResource::parse(res);
        let detail = if res.to_lowercase() != *res {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(FieldError::invalid(&path.index(j), res.as_str(), detail));
    }
    errs
}

fn validate_keys(keys: &[Key], path: &FieldPath, sizes: &[usize]) -> Vec<FieldError> {
    if keys.is_empty() {
        return vec![FieldError::required(path, "at least one keys is required")];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let p = path.index(i);
        if key.name.is_empty() {
            errs.push(FieldError::required(
                &p.child("name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(FieldError::required(
                &p.child("secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let secret = p.child("secret");
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(FieldError::invalid(
                &secret,
                "REDACTED",
                "secrets must be base64 encoded",
            )),
            Ok(bytes) if !sizes.contains(&bytes.len()) => errs.push(FieldError::invalid(
                &secret,
                "REDACTED",
                format!(
                    "secret is not of the expected length, got {}, expected one of {}",
                    bytes.len(),
                    go_ints(sizes)
                ),
            )),
            Ok(_) => {}
        }
    }
    errs
}

fn go_ints(v: &[usize]) -> String {
    let parts: Vec<String> = v.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(" "))
}

fn validate_kms(
    c: &KmsConfiguration,
    path: &FieldPath,
    seen: &HashSet<String>,
    reload: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = path.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(
            &name,
            "name is a mandatory field for a provider",
        ));
    }
    if c.api_version != "v1" && c.name.contains(':') {
        let msg = format!("invalid KMS provider name {}, must not contain ':'", c.name);
        errs.push(FieldError::invalid(&name, c.name.as_str(), msg));
    }
    if (reload || c.api_version != "v1") && seen.contains(&c.name) {
        let msg = format!(
            "duplicate KMS provider name {}, names must be unique",
            c.name
        );
        errs.push(FieldError::invalid(&name, c.name.as_str(), msg));
    }
    if c.timeout.unwrap_or(0) <= 0 {
        let shown = format!("{}ns", c.timeout.unwrap_or(0));
        errs.push(FieldError::invalid(
            &path.child("timeout"),
            shown,
            "timeout should be a positive value",
        ));
    }
    errs.extend(endpoint(c, &path.child("endpoint")));
    let cache = path.child("cachesize");
    match (c.api_version.as_str(), c.cache_size) {
        ("v1", Some(0)) => errs.push(FieldError::invalid(
            &cache,
            0,
            "cachesize should be a positive value, or negative to disable",
        )),
        ("v1", _) | (_, None) => {}
        (_, Some(n)) => errs.push(FieldError::invalid(
            &cache,
            n,
            "cachesize is not supported in v2",
        )),
    }
    if c.api_version != "v1" && c.api_version != "v2" {
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            c.api_version.as_str(),
            "unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported",
        ));
    }
    errs
}

fn endpoint(c: &KmsConfiguration, path: &FieldPath) -> Option<FieldError> {
    if c.endpoint.is_empty() {
        return Some(FieldError::invalid(
            path,
            "",
            "endpoint is a mandatory field for a kms",
        ));
    }
    let scheme = c.endpoint.split_once(':').map_or("", |(s, _)| s);
    (scheme != "unix").then(|| {
        FieldError::invalid(
            path,
            c.endpoint.as_str(),
            format!("unsupported scheme {scheme:?} for KMS provider, only unix is supported"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::decode;

    fn errors(yaml_resources: &str) -> Vec<String> {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{yaml_resources}"
        );
        validate(&decode(yaml.as_bytes()).unwrap(), false)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const KEY16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng==";

    #[test]
    fn valid_configs_pass() {
        let ok = format!(
            "- resources: [secrets, deployments.apps]\n  providers:\n  - aescbc: {{keys: [{{name: k1, secret: {KEY16}}}]}}\n  - identity: {{}}\n\
             - resources: ['*.*']\n  providers:\n  - kms: {{apiVersion: v2, name: p, endpoint: 'unix:///tmp/k.sock'}}\n"
        );
        assert_eq!(errors(&ok), Vec::<String>::new());
    }

    #[test]
    fn upstream_messages_for_bad_entries() {
        let e = errors("- resources: [Secrets, '*', events.events.k8s.io, pods.extensions, 'pods.*', serviceipallocations]\n  providers:\n  - identity: {}\n");
        assert_eq!(
            e,
            [
                r#"resources[0].resources: Invalid value: []string{"Secrets", "*", "events.events.k8s.io", "pods.extensions", "pods.*", "serviceipallocations"}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"#,
                r#"resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters"#,
                r#"resources[0].resources[1]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"#,
                r#"resources[0].resources[2]: Invalid value: "events.events.k8s.io": '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"#,
                r#"resources[0].resources[3]: Invalid value: "pods.extensions": 'extensions' group has been removed and cannot be used for encryption"#,
                r#"resources[0].resources[4]: Invalid value: "pods.*": encrypting the same resource across groups is not supported"#,
                r#"resources[0].resources[5]: Invalid value: "serviceipallocations": resources which do not have REST API/s cannot be encrypted"#,
            ]
        );
        let e = errors("- resources: [secrets, secrets, '*.']\n  providers: []\n");
        assert_eq!(
            e[0],
            r#"resources[0].resources: Invalid value: []string{"secrets", "secrets", "*."}: the same resource cannot be specified multiple times"#
        );
        assert!(e[1].ends_with("they will be masked"));
        assert_eq!(e[2], "resources[0].providers: Required value: at least one resources[0].providers is required");
    }

    #[test]
    fn bad_keys_and_kms() {
        let e = errors("- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: a, secret: 'not base64!'}, {name: '', secret: c2hvcnQ=}]}\n  - secretbox: {keys: []}\n  - kms: {apiVersion: v2, name: 'a:b', endpoint: 'tcp://x', timeout: 0s, cachesize: 5}\n  - kms: {apiVersion: v3, name: 'a:b', endpoint: 'unix:///s'}\n");
        assert_eq!(e, [
            r#"resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded"#,
            "resources[0].providers[0].aesgcm.keys[1].name: Required value: name is a mandatory field for a key",
            r#"resources[0].providers[0].aesgcm.keys[1].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#,
            "resources[0].providers[1].secretbox.keys: Required value: at least one keys is required",
            r#"resources[0].providers[2].kms.name: Invalid value: "a:b": invalid KMS provider name a:b, must not contain ':'"#,
            r#"resources[0].providers[2].kms.timeout: Invalid value: "0ns": timeout should be a positive value"#,
            r#"resources[0].providers[2].kms.endpoint: Invalid value: "tcp://x": unsupported scheme "tcp" for KMS provider, only unix is supported"#,
            "resources[0].providers[2].kms.cachesize: Invalid value: 5: cachesize is not supported in v2",
            r#"resources[0].providers[3].kms.name: Invalid value: "a:b": invalid KMS provider name a:b, must not contain ':'"#,
            r#"resources[0].providers[3].kms.name: Invalid value: "a:b": duplicate KMS provider name a:b, names must be unique"#,
            r#"resources[0].providers[3].kms.apiVersion: Invalid value: "v3": unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported"#,
        ]);
        assert_eq!(
            errors("- resources: [secrets]\n  providers:\n  - {}\n")[0],
            "resources[0].providers[0]: Invalid value: {}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
        );
    }
}
