//! Service account issuer discovery (upstream `pkg/serviceaccount/
//! openidmetadata.go` and `pkg/routes/openidmetadata.go`): the OpenID
//! provider configuration at `/.well-known/openid-configuration` and the JSON
//! Web Key Set at `/openid/v1/jwks`, so relying parties outside the cluster can
//! verify service account tokens.
//!
//! Served only when the (first) issuer is an `https` URL without query or
//! fragment, as upstream; `jwks_uri` is `--service-account-jwks-uri` or
//! `https://<advertise address>/openid/v1/jwks`. RBAC decides who may read them
//! (bootstrap: `system:service-account-issuer-discovery` → all service
//! accounts). Key ids are upstream's: base64url(SHA-256(DER SubjectPublicKeyInfo)).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

use super::jwt::VerifyKey;
use super::serviceaccount::Issuer;

/// The discovery document's path.
pub const CONFIG_PATH: &str = "/.well-known/openid-configuration";
/// The key set's path.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// Upstream's cache age for static keys.
const MAX_AGE: u32 = 3600;

const EC_P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
const RSA_ALGORITHM: &[u8] = &[
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

fn der_len(len: usize, out: &mut Vec<u8>) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// The DER `SubjectPublicKeyInfo` of `key`, as Go's `x509.MarshalPKIXPublicKey`.
pub fn spki_der(key: &VerifyKey) -> Vec<u8> {
    if key.is_ec() {
        let mut out = EC_P256_SPKI_PREFIX.to_vec();
        out.extend_from_slice(key.public());
        out
    } else {
        let mut bits = vec![0u8];
        bits.extend_from_slice(key.public());
        let mut content = RSA_ALGORITHM.to_vec();
        content.extend(der(0x03, &bits));
        der(0x30, &content)
    }
}

/// Upstream's key id: base64url SHA-256 of the DER public key.
pub fn key_id(key: &VerifyKey) -> String {
    if let Some(kid) = key.given_kid() {
        return kid.to_owned();
    }
    B64.encode(ring::digest::digest(&ring::digest::SHA256, &spki_der(key)))
}

/// One DER element of `input`: (tag, content, rest).
fn der_take(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, b| (a << 8) | *b as usize);
        rest = &rest[n..];
        len
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// `(n, e)` of a DER `RSAPublicKey`, without leading zero bytes.
fn rsa_parts(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (0x30, seq, _) = der_take(der)? else {
        return None;
    };
    let (0x02, n, rest) = der_take(seq)? else {
        return None;
    };
    let (0x02, e, _) = der_take(rest)? else {
        return None;
    };
    let trim = |b: &[u8]| -> usize { b.iter().take_while(|x| **x == 0).count() };
    Some((&n[trim(n)..], &e[trim(e)..]))
}

/// The public JSON Web Key of `key` (`use: sig`), as go-jose writes it.
pub fn jwk(key: &VerifyKey) -> Option<Value> {
    let kid = key_id(key);
    if key.is_ec() {
        let p = key.public();
        if p.len() != 65 {
            return None;
        }
        Some(
            json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256",
            "x": B64.encode(&p[1..33]), "y": B64.encode(&p[33..])}),
        )
    } else {
        let (n, e) = rsa_parts(key.public())?;
        Some(
            json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
            "n": B64.encode(n), "e": B64.encode(e)}),
        )
    }
}

/// The key set of `keys` (duplicates by key id dropped).
pub fn key_set(keys: &[VerifyKey]) -> Value {
    let mut out: Vec<Value> = Vec::new();
    for k in keys.iter().filter_map(jwk) {
        if !out.iter().any(|o| o["kid"] == k["kid"]) {
            out.push(k);
        }
    }
    json!({"keys": out})
}

/// Whether `issuer` may be published (https, no query, no fragment).
fn publishable(issuer: &str) -> bool {
    issuer
        .strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(['?', '#']))
}

/// The discovery document, or `None` when the issuer is not publishable;
/// the key set's default address is on `advertise_address` (`host:port`).
pub fn configuration(issuer: &Issuer, advertise_address: &str) -> Option<Value> {
    if !publishable(issuer.issuer()) {
        return None;
    }
    let jwks_uri = issuer
        .jwks_uri()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("https://{advertise_address}{JWKS_PATH}"));
    let mut algs: Vec<String> = key_set(&issuer.discovery_keys())["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["alg"].as_str().map(str::to_owned))
        .collect();
    algs.sort();
    algs.dedup();
    Some(json!({
        "issuer": issuer.issuer(),
        "jwks_uri": jwks_uri,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algs,
    }))
}

fn answer(body: Option<Value>, content_type: &'static str) -> Response {
    let Some(body) = body else {
        return kapi_http::negotiate::error_response(&kapi_http::request::not_found());
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CACHE_CONTROL, format!("public, max-age={MAX_AGE}")),
        ],
        body.to_string(),
    )
        .into_response()
}

/// `GET /.well-known/openid-configuration`.
pub fn serve_configuration(issuer: &Issuer, advertise_address: &str) -> Response {
    answer(configuration(issuer, advertise_address), "application/json")
}

/// `GET /openid/v1/jwks`.
pub fn serve_jwks(issuer: &Issuer, advertise_address: &str) -> Response {
    let body = configuration(issuer, advertise_address).map(|_| key_set(&issuer.discovery_keys()));
    answer(body, "application/jwk-set+json")
}

#[cfg(test)]
mod tests {
    use super::super::jwt;
    use super::*;

    #[test]
    fn key_ids_hash_the_der_public_key_as_upstream() {
        // The SPKI kapi builds equals the one a PEM public key carries.
        {
            let kp = rcgen::KeyPair::generate().unwrap();
            let signer = jwt::parse_signing_key(&kp.serialize_pem()).unwrap();
            let vk = signer.verify_key();
            let der = match rustls_pemfile::read_one(&mut kp.public_key_pem().as_bytes()) {
                Ok(Some(rustls_pemfile::Item::SubjectPublicKeyInfo(d))) => d.as_ref().to_vec(),
                other => panic!("{other:?}"),
            };
            assert_eq!(spki_der(&vk), der);
            let want = B64.encode(ring::digest::digest(&ring::digest::SHA256, &der));
            assert_eq!(key_id(&vk), want);
            assert_eq!(signer.kid(), want);
            let from_pem = jwt::parse_verify_keys(&kp.public_key_pem()).unwrap();
            assert_eq!(key_id(&from_pem[0]), want);
        }
    }

    /// An RSA-2048 public key and its id, both made with the openssl CLI
    /// (`openssl rsa -pubout -outform DER | openssl dgst -sha256 -binary`).
    const RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAselYkfqSuNavyViXcvst
geQMBV3KmWCXhp6Sgb7N0LW6tsoWcaQrmf14DLiWd2uVwQYfzP+jOcUA1q0+VaP0
Kh1VFYtG/KdOIigmvC4LjsrwttEcBA3wbpvz7I7c8U918cNy3A478MQrCAkvxWQ8
Ert3nBHwMddCZ47eUETzFNfltA4+tQNgkKsmFH8VeSeIeLZzRN4zruKdXs1oirJZ
L5KqYMUL5b5TtordbUXwZmbB3243UdavrWF/xPsy4ShbMJkZ/PIIq97oH3+H5oS9
q91P14Q8bXqExHry0n6S4bWYorFXzWMfaewB9dmhiMaOfLnBYPY/2tmuRXHM10+o
jQIDAQAB
-----END PUBLIC KEY-----
";
    const RSA_KID: &str = "SjOsZxfkAxSQ1JAy2U4G7oWvnQSW-wBlYqIQhqTSk_Q";

    #[test]
    fn rsa_key_id_and_jwk() {
        let keys = jwt::parse_verify_keys(RSA_PUBLIC).unwrap();
        assert_eq!(key_id(&keys[0]), RSA_KID);
        let k = jwk(&keys[0]).unwrap();
        assert_eq!(k["kty"], "RSA");
        assert_eq!(k["alg"], "RS256");
        assert_eq!(k["e"], "AQAB");
        assert_eq!(B64.decode(k["n"].as_str().unwrap()).unwrap().len(), 256);
    }

    #[test]
    fn jwk_of_an_ec_key() {
        let signer = jwt::parse_signing_key(&jwt::generate_ec_pem()).unwrap();
        let k = jwk(&signer.verify_key()).unwrap();
        assert_eq!(k["kty"], "EC");
        assert_eq!(k["crv"], "P-256");
        assert_eq!(k["alg"], "ES256");
        assert_eq!(k["use"], "sig");
        assert_eq!(B64.decode(k["x"].as_str().unwrap()).unwrap().len(), 32);
        assert_eq!(B64.decode(k["y"].as_str().unwrap()).unwrap().len(), 32);
    }

    #[test]
    fn rsa_public_key_parts() {
        // SEQUENCE { INTEGER 0x00c5, INTEGER 65537 }
        let der = [
            0x30, 0x09, 0x02, 0x02, 0x00, 0xc5, 0x02, 0x03, 0x01, 0x00, 0x01,
        ];
        let (n, e) = rsa_parts(&der).unwrap();
        assert_eq!(n, &[0xc5]);
        assert_eq!(B64.encode(e), "AQAB");
        assert!(rsa_parts(&der[..5]).is_none());
    }

    #[test]
    fn only_https_issuers_are_published() {
        assert!(publishable("https://kubernetes.default.svc.cluster.local"));
        assert!(!publishable("http://x"));
        assert!(!publishable("https://x?a=b"));
        assert!(!publishable("https://x#f"));
        assert!(!publishable("api"));
    }
}
