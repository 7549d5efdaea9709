//! From a validated configuration to transformers per resource, as upstream's
//! `getTransformerOverridesAndKMSPluginProbes`: each entry's providers become
//! prefixed transformers (a keyed provider one per key, under
//! `k8s:enc:<provider>:v1:<key name>:`; a KMS v2 provider under
//! `k8s:enc:kms:v2:<name>:`; identity under the empty prefix), appended to the
//! list of every resource the entry names. A resource named after `*.group`
//! or `*.*` already appeared is an error (it would never be used).
//!
//! [`Transformers::for_resource`] picks the exact resource, else `*.group`,
//! else `*.*`, else none (identity: `backend.rs` passes such values as they are).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;

use crate::aes::{Cbc, Gcm};
use crate::config::{EncryptionConfiguration, Key, KmsConfiguration, ProviderConfiguration};
use crate::kms::{self, Envelope, KmsClient, KmsTiming, Probe};
use crate::secretbox::Secretbox;
use crate::transformer::{Identity, PrefixList, Prefixed, TransformError, Transformer};

use crate::GroupResource;

/// The transformers of one configuration, and its KMS providers' probes.
pub struct Transformers {
    by_resource: HashMap<GroupResource, Arc<dyn Transformer>>,
    /// One per KMS provider, in configuration order.
    pub probes: Vec<Arc<Probe>>,
}

impl Transformers {
    /// Build from a validated `config`. KMS clients are created (not dialled).
    pub fn build(config: &EncryptionConfiguration, timing: KmsTiming) -> Result<Self, String> {
        let mut lists: HashMap<GroupResource, Vec<Prefixed>> = HashMap::new();
        let mut probes = Vec::new();
        for entry in config.resources.as_deref().unwrap_or_default() {
            let mut entries = Vec::new();
            for provider in entry.providers.as_deref().unwrap_or_default() {
                entries.extend(provider_entries(provider, timing, &mut probes)?);
            }
            for resource in entry.resources.as_deref().unwrap_or_default() {
                let gr = GroupResource::parse(resource);
                for masking in [
                    GroupResource::new(&gr.group, "*"),
                    GroupResource::new("*", "*"),
                ] {
                    if lists.contains_key(&masking) {
                        return Err(format!(
                            "resource {:?} is masked by earlier rule {:?}",
                            gr.to_string(),
                            masking.to_string()
                        ));
                    }
                }
                lists.entry(gr).or_default().extend(entries.iter().cloned());
            }
        }
        let by_resource = lists
            .into_iter()
            .map(|(gr, list)| (gr, Arc::new(PrefixList::new(list)) as Arc<dyn Transformer>))
            .collect();
        Ok(Transformers {
            by_resource,
            probes,
        })
    }

    /// The transformer of `gr`: exact, `*.group`, `*.*`; `None` when none
    /// applies (identity: values are plaintext, and encrypted ones refused).
    pub fn for_resource(&self, gr: &GroupResource) -> Option<Arc<dyn Transformer>> {
        if self.by_resource.is_empty() {
            return None;
        }
        if let Some(t) = self.by_resource.get(gr) {
            return Some(t.clone());
        }
        [
            GroupResource::new(&gr.group, "*"),
            GroupResource::new("*", "*"),
        ]
        .iter()
        .find_map(|c| self.by_resource.get(c).cloned())
    }
}

fn provider_entries(
    provider: &ProviderConfiguration,
    timing: KmsTiming,
    probes: &mut Vec<Arc<Probe>>,
) -> Result<Vec<Prefixed>, String> {
    if let Some(c) = &provider.aesgcm {
        keyed("aesgcm", c.keys.as_deref().unwrap_or_default(), |k| {
            Ok(Arc::new(Gcm::new(k)?))
        })
    } else if let Some(c) = &provider.aescbc {
        keyed("aescbc", c.keys.as_deref().unwrap_or_default(), |k| {
            Ok(Arc::new(Cbc::new(k)?))
        })
    } else if let Some(c) = &provider.secretbox {
        keyed("secretbox", c.keys.as_deref().unwrap_or_default(), |k| {
            Ok(Arc::new(Secretbox::new(k)?))
        })
    } else if let Some(c) = &provider.kms {
        let probe = kms_probe(c, timing)?;
        probes.push(probe.clone());
        Ok(vec![Prefixed {
            prefix: kms::prefix(&c.name),
            transformer: Arc::new(Envelope::new(probe)),
        }])
    } else {
        Ok(vec![Prefixed {
            prefix: Vec::new(),
            transformer: Arc::new(Identity),
        }])
    }
}

/// One entry per key, in order: `k8s:enc:<provider>:v1:<key name>:`.
fn keyed(
    provider: &str,
    keys: &[Key],
    make: impl Fn(&[u8]) -> Result<Arc<dyn Transformer>, TransformError>,
) -> Result<Vec<Prefixed>, String> {
    keys.iter()
        .map(|key| {
            let secret = base64::engine::general_purpose::STANDARD
                .decode(&key.secret)
                .map_err(|e| format!("could not obtain secret for named key {}: {e}", key.name))?;
            let transformer = make(&secret).map_err(|e| {
                format!(
                    "error while creating cipher for named key {}: {e}",
                    key.name
                )
            })?;
            Ok(Prefixed {
                prefix: format!("k8s:enc:{provider}:v1:{}:", key.name).into_bytes(),
                transformer,
            })
        })
        .collect()
}

fn kms_probe(c: &KmsConfiguration, timing: KmsTiming) -> Result<Arc<Probe>, String> {
    if c.api_version == "v1" {
        return Err(format!(
            "KMS provider {:?}: KMSv1 is deprecated and off in Kubernetes 1.33 (kapi does not implement it); use apiVersion: v2",
            c.name
        ));
    }
    let client = KmsClient::new(&c.name, &c.endpoint, c.timeout()).map_err(|e| {
        format!(
            "could not configure KMSv2-Plugin's probe {:?}, error: {e}",
            c.name
        )
    })?;
    Ok(Arc::new(Probe::new(client, timing)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::decode;

    fn build(resources: &str) -> Result<Transformers, String> {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{resources}"
        );
        Transformers::build(&decode(yaml.as_bytes()).unwrap(), KmsTiming::default())
    }

    const K1: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng==";

    #[tokio::test]
    async fn wildcards_pick_the_most_specific_rule() {
        let t = build(&format!(
            "- resources: [secrets]\n  providers: [{{aescbc: {{keys: [{{name: one, secret: {K1}}}]}}}}]\n\
             - resources: ['*.apps']\n  providers: [{{aesgcm: {{keys: [{{name: two, secret: {K1}}}]}}}}]\n\
             - resources: ['*.*']\n  providers: [{{secretbox: {{keys: [{{name: three, secret: {K1}{K1}}}]}}}}]\n"
        ))
        .err();
        // A 32-byte secretbox key: two 16-byte ones concatenated do not decode as one.
        assert!(t.is_some());
        let k32 = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
        let t = build(&format!(
            "- resources: [secrets]\n  providers: [{{aescbc: {{keys: [{{name: one, secret: {K1}}}]}}}}]\n\
             - resources: ['*.apps']\n  providers: [{{aesgcm: {{keys: [{{name: two, secret: {K1}}}]}}}}]\n\
             - resources: ['*.*']\n  providers: [{{secretbox: {{keys: [{{name: three, secret: {k32}}}]}}}}]\n"
        ))
        .unwrap();
        let writes = |group: &'static str, resource: &'static str, prefix: &'static str| {
            let t = t
                .for_resource(&GroupResource::new(group, resource))
                .unwrap();
            async move {
                let v = t.transform_to_storage(b"x", b"/k").await.unwrap();
                assert!(v.starts_with(prefix.as_bytes()), "{resource}.{group}");
            }
        };
        writes("", "secrets", "k8s:enc:aescbc:v1:one:").await;
        writes("apps", "deployments", "k8s:enc:aesgcm:v1:two:").await;
        writes("", "configmaps", "k8s:enc:secretbox:v1:three:").await;
        writes("example.com", "widgets", "k8s:enc:secretbox:v1:three:").await;
    }

    #[test]
    fn masked_rules_are_refused() {
        let e = build(&format!(
            "- resources: ['*.']\n  providers: [{{identity: {{}}}}]\n- resources: [secrets]\n  providers: [{{aescbc: {{keys: [{{name: one, secret: {K1}}}]}}}}]\n"
        ));
        assert_eq!(
            e.err().as_deref(),
            Some(r#"resource "secrets" is masked by earlier rule "*.""#)
        );
        let v1 = build(
            "- resources: [secrets]\n  providers: [{kms: {name: a, endpoint: 'unix:///x'}}]\n",
        );
        assert!(v1.err().unwrap().contains("KMSv1"));
    }
}
