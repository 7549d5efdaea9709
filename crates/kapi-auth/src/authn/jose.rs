//! JSON Web Keys and the signature algorithms of OpenID Connect ID tokens
//! (RFC 7517 and 7518): RSA keys (`kty: RSA`, `n`, `e`) for RS256/384/512 and
//! PS256/384/512, EC keys (`kty: EC`, P-256 / P-384) for ES256 / ES384. ES512
//! (P-521) is not verifiable with ring: tokens signed with it are refused.
//!
//! A token verifies when its header's `alg` is among the accepted ones and a
//! key of a matching type accepts the signature; a token whose header names a
//! `kid` is tried only against keys with that id (go-jose's rule, which the
//! OIDC authenticator inherits). Keys a key set marks for another use
//! (`use: enc`) are skipped.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

/// Every algorithm upstream's OIDC authenticator accepts in `--oidc-signing-algs`.
pub const ALL_ALGORITHMS: [&str; 9] = [
    "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512",
];

/// A public key of a key set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    key: Key,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// The curve's name and the uncompressed point.
    Ec {
        crv: &'static str,
        point: Vec<u8>,
    },
}

fn b64_field(v: &Value, k: &str) -> Result<Vec<u8>, String> {
    let s = v
        .get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing {k:?}"))?;
    B64.decode(s.trim_end_matches('='))
        .map_err(|e| format!("invalid {k:?}: {e}"))
}

impl Jwk {
    /// One key of a key set; `Ok(None)` for keys of types or uses that cannot
    /// verify signatures here (they are skipped, as go-jose skips them).
    pub fn parse(v: &Value) -> Result<Option<Jwk>, String> {
        if v.get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            return Ok(None);
        }
        let kid = v.get("kid").and_then(Value::as_str).map(str::to_owned);
        let key = match v.get("kty").and_then(Value::as_str) {
            Some("RSA") => Key::Rsa {
                n: b64_field(v, "n")?,
                e: b64_field(v, "e")?,
            },
            Some("EC") => {
                let (crv, len) = match v.get("crv").and_then(Value::as_str) {
                    Some("P-256") => ("P-256", 32),
                    Some("P-384") => ("P-384", 48),
                    _ => return Ok(None),
                };
                let (x, y) = (b64_field(v, "x")?, b64_field(v, "y")?);
                if x.len() != len || y.len() != len {
                    return Err(format!("invalid {crv} point"));
                }
                let mut point = vec![4u8];
                point.extend(x);
                point.extend(y);
                Key::Ec { crv, point }
            }
            _ => return Ok(None),
        };
        Ok(Some(Jwk { kid, key }))
    }

    /// The verifying keys of a JWKS document (`{"keys": [...]}`).
    pub fn parse_set(doc: &Value) -> Result<Vec<Jwk>, String> {
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("key set has no \"keys\" array")?;
        let mut out = Vec::new();
        for k in keys {
            if let Some(jwk) = Jwk::parse(k)? {
                out.push(jwk);
            }
        }
        Ok(out)
    }

    fn verifies(&self, alg: &str, msg: &[u8], sig: &[u8]) -> bool {
        use signature as s;
        match &self.key {
            Key::Rsa { n, e } => {
                let params: &s::RsaParameters = match alg {
                    "RS256" => &s::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &s::RSA_PKCS1_2048_8192_SHA384,
                    "RS512" => &s::RSA_PKCS1_2048_8192_SHA512,
                    "PS256" => &s::RSA_PSS_2048_8192_SHA256,
                    "PS384" => &s::RSA_PSS_2048_8192_SHA384,
                    "PS512" => &s::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                RsaPublicKeyComponents { n, e }
                    .verify(params, msg, sig)
                    .is_ok()
            }
            Key::Ec { crv, point } => {
                let alg: &dyn s::VerificationAlgorithm = match (alg, *crv) {
                    ("ES256", "P-256") => &s::ECDSA_P256_SHA256_FIXED,
                    ("ES384", "P-384") => &s::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(alg, point).verify(msg, sig).is_ok()
            }
        }
    }
}

/// The parts of a compact JWS, decoded.
pub struct Parsed {
    pub alg: String,
    pub kid: Option<String>,
    pub claims: Value,
    signed: String,
    signature: Vec<u8>,
}

/// Split and decode `token` (no signature check).
pub fn parse(token: &str) -> Result<Parsed, String> {
    if token.trim_start().starts_with('{') {
        return Err("token is not compact JWT".into());
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, sig] = parts[..] else {
        return Err("malformed token".into());
    };
    let header: Value = B64
        .decode(header)
        .ok()
        .and_then(|h| serde_json::from_slice(&h).ok())
        .ok_or("malformed jwt, invalid header")?;
    let claims: Value = B64
        .decode(payload)
        .map_err(|e| format!("malformed jwt payload: {e}"))
        .and_then(|p| {
            serde_json::from_slice(&p).map_err(|e| format!("failed to unmarshal claims: {e}"))
        })?;
    if !claims.is_object() {
        return Err("failed to unmarshal claims: not a JSON object".into());
    }
    let signature = B64
        .decode(sig)
        .map_err(|e| format!("malformed jwt signature: {e}"))?;
    Ok(Parsed {
        alg: header
            .get("alg")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        kid: header.get("kid").and_then(Value::as_str).map(str::to_owned),
        claims,
        signed: format!("{header_b64}.{payload}", header_b64 = parts[0]),
        signature,
    })
}

impl Parsed {
    /// Whether one of `keys` (those with the token's `kid`, when it has one)
    /// accepts the signature.
    pub fn verified_by(&self, keys: &[Jwk]) -> bool {
        keys.iter()
            .filter(|k| self.kid.is_none() || k.kid == self.kid)
            .any(|k| k.verifies(&self.alg, self.signed.as_bytes(), &self.signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

    fn ec_key() -> (EcdsaKeyPair, Value) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let kp =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
        let p = kp.public_key().as_ref();
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
            "x": B64.encode(&p[1..33]), "y": B64.encode(&p[33..])});
        (kp, jwk)
    }

    fn sign(kp: &EcdsaKeyPair, header: &Value, claims: &Value) -> String {
        let msg = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = kp.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
        format!("{msg}.{}", B64.encode(sig.as_ref()))
    }

    #[test]
    fn ec_keys_verify_by_kid() {
        let (kp, jwk) = ec_key();
        let (_, other) = ec_key();
        let keys = Jwk::parse_set(&serde_json::json!({"keys": [other, jwk,
            {"kty": "oct", "k": "AAAA"}, {"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}]}))
        .unwrap();
        assert_eq!(keys.len(), 2);
        let claims = serde_json::json!({"iss": "x"});
        let t = sign(
            &kp,
            &serde_json::json!({"alg": "ES256", "kid": "k1"}),
            &claims,
        );
        let p = parse(&t).unwrap();
        assert_eq!((p.alg.as_str(), p.kid.as_deref()), ("ES256", Some("k1")));
        assert!(p.verified_by(&keys));
        // Another kid: only keys with that id are tried.
        let t = sign(
            &kp,
            &serde_json::json!({"alg": "ES256", "kid": "k2"}),
            &claims,
        );
        assert!(!parse(&t).unwrap().verified_by(&keys));
        // No kid: every key is tried.
        let t = sign(&kp, &serde_json::json!({"alg": "ES256"}), &claims);
        assert!(parse(&t).unwrap().verified_by(&keys));
        // The algorithm must fit the key.
        let t = sign(&kp, &serde_json::json!({"alg": "RS256"}), &claims);
        assert!(!parse(&t).unwrap().verified_by(&keys));
    }

    #[test]
    fn malformed_tokens() {
        assert_eq!(parse("a.b").err().unwrap(), "malformed token");
        assert_eq!(
            parse("{\"a\":1}").err().unwrap(),
            "token is not compact JWT"
        );
        assert!(parse("!!.e30.").is_err());
        let header = B64.encode("{\"alg\":\"ES256\"}");
        assert!(parse(&format!("{header}.bm90LWpzb24.")).is_err());
        assert!(parse(&format!("{header}.e30.")).is_ok());
    }
}
