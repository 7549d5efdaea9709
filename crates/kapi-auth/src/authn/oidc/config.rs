//! `AuthenticationConfiguration` (`apiserver.config.k8s.io` v1alpha1,
//! v1beta1, v1) as the file says it: JWT authenticators and the anonymous
//! section, decoded strictly (`config_file.rs`). What the fields mean and the
//! rules they must follow are in `validate.rs`; the `--oidc-*` flags are turned
//! into one such authenticator by [`JwtAuthenticator::from_oidc_flags`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config_file::{self, nullable};

/// The kind's versions kube-apiserver 1.33 reads (v1 as later releases write it).
pub const VERSIONS: [&str; 3] = ["v1alpha1", "v1beta1", "v1"];

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuthenticationConfiguration {
    #[serde(default, deserialize_with = "nullable")]
    pub jwt: Vec<JwtAuthenticator>,
    #[serde(default)]
    pub anonymous: Option<Anonymous>,
}

impl AuthenticationConfiguration {
    /// Decode a configuration file's text.
    pub fn parse(data: &str) -> Result<Self, String> {
        config_file::decode(data, "AuthenticationConfiguration", &VERSIONS)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Anonymous {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub conditions: Vec<AnonymousCondition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AnonymousCondition {
    #[serde(default)]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JwtAuthenticator {
    #[serde(default)]
    pub issuer: Issuer,
    #[serde(default, deserialize_with = "nullable")]
    pub claim_validation_rules: Vec<ClaimValidationRule>,
    #[serde(default)]
    pub claim_mappings: ClaimMappings,
    #[serde(default, deserialize_with = "nullable")]
    pub user_validation_rules: Vec<UserValidationRule>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Issuer {
    #[serde(default)]
    pub url: String,
    #[serde(default, rename = "discoveryURL")]
    pub discovery_url: String,
    /// PEM of the CAs that verify the issuer's (or discovery URL's) certificate.
    #[serde(default)]
    pub certificate_authority: String,
    #[serde(default, deserialize_with = "nullable")]
    pub audiences: Vec<String>,
    #[serde(default)]
    pub audience_match_policy: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimValidationRule {
    #[serde(default)]
    pub claim: String,
    #[serde(default)]
    pub required_value: String,
    #[serde(default)]
    pub expression: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimMappings {
    #[serde(default)]
    pub username: PrefixedClaimOrExpression,
    #[serde(default)]
    pub groups: PrefixedClaimOrExpression,
    #[serde(default)]
    pub uid: ClaimOrExpression,
    #[serde(default, deserialize_with = "nullable")]
    pub extra: Vec<ExtraMapping>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PrefixedClaimOrExpression {
    #[serde(default)]
    pub claim: String,
    /// `None` when absent (required with `claim`; `""` disables prefixing).
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub expression: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimOrExpression {
    #[serde(default)]
    pub claim: String,
    #[serde(default)]
    pub expression: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExtraMapping {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub value_expression: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UserValidationRule {
    #[serde(default)]
    pub expression: String,
    #[serde(default)]
    pub message: String,
}

/// The `--oidc-*` flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OidcFlags {
    pub issuer_url: String,
    pub client_id: String,
    /// The contents of `--oidc-ca-file`.
    pub ca: String,
    pub username_claim: String,
    pub username_prefix: String,
    pub groups_claim: String,
    pub groups_prefix: String,
    pub required_claims: BTreeMap<String, String>,
}

impl JwtAuthenticator {
    /// The authenticator the `--oidc-*` flags describe, as upstream builds it:
    /// without `--oidc-username-prefix`, claims other than `email` are
    /// prefixed with `<issuer>#`; `-` means no prefix.
    pub fn from_oidc_flags(f: &OidcFlags) -> JwtAuthenticator {
        let prefix = match f.username_prefix.as_str() {
            "-" => String::new(),
            "" if f.username_claim != "email" => format!("{}#", f.issuer_url),
            p => p.to_string(),
        };
        let mut a = JwtAuthenticator {
            issuer: Issuer {
                url: f.issuer_url.clone(),
                certificate_authority: f.ca.clone(),
                audiences: vec![f.client_id.clone()],
                ..Default::default()
            },
            ..Default::default()
        };
        a.claim_mappings.username = PrefixedClaimOrExpression {
            claim: f.username_claim.clone(),
            prefix: Some(prefix),
            expression: String::new(),
        };
        if !f.groups_claim.is_empty() {
            a.claim_mappings.groups = PrefixedClaimOrExpression {
                claim: f.groups_claim.clone(),
                prefix: Some(f.groups_prefix.clone()),
                expression: String::new(),
            };
        }
        a.claim_validation_rules = f
            .required_claims
            .iter()
            .map(|(claim, value)| ClaimValidationRule {
                claim: claim.clone(),
                required_value: value.clone(),
                ..Default::default()
            })
            .collect();
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_field() {
        let text = r#"
apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://issuer.example
    discoveryURL: https://discovery.example/.well-known/openid-configuration
    audiences: [a, b]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - {claim: hd, requiredValue: example.com}
  - {expression: "claims.exp - claims.iat <= 3600", message: too long}
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {expression: "claims.roles"}
    uid: {claim: sub}
    extra: [{key: example.com/tenant, valueExpression: claims.tenant}]
  userValidationRules:
  - {expression: "!user.username.startsWith('system:')", message: nope}
anonymous:
  enabled: true
  conditions: [{path: /livez}]
"#;
        let c = AuthenticationConfiguration::parse(text).unwrap();
        let j = &c.jwt[0];
        assert_eq!(j.issuer.audiences, vec!["a", "b"]);
        assert_eq!(j.claim_mappings.username.prefix.as_deref(), Some("oidc:"));
        assert_eq!(j.claim_mappings.extra[0].key, "example.com/tenant");
        assert_eq!(c.anonymous.unwrap().conditions[0].path, "/livez");
        let e = AuthenticationConfiguration::parse(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: x, egressSelectorType: cluster}\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "strict decoding error: unknown field \"jwt[0].issuer.egressSelectorType\""
        );
    }

    #[test]
    fn oidc_flags_prefixing() {
        let mut f = OidcFlags {
            issuer_url: "https://i".into(),
            client_id: "c".into(),
            username_claim: "sub".into(),
            ..Default::default()
        };
        let a = JwtAuthenticator::from_oidc_flags(&f);
        assert_eq!(
            a.claim_mappings.username.prefix.as_deref(),
            Some("https://i#")
        );
        f.username_claim = "email".into();
        let a = JwtAuthenticator::from_oidc_flags(&f);
        assert_eq!(a.claim_mappings.username.prefix.as_deref(), Some(""));
        f.username_prefix = "-".into();
        f.username_claim = "sub".into();
        let a = JwtAuthenticator::from_oidc_flags(&f);
        assert_eq!(a.claim_mappings.username.prefix.as_deref(), Some(""));
    }
}
