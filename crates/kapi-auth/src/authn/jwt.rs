//! Compact JWS (JWT) signing and verification with ring: ES256 (ECDSA P-256)
//! and RS256 (RSA PKCS#1 v1.5 SHA-256), the algorithms kube-apiserver signs
//! service account tokens with.
//!
//! Keys come as PEM: the signing key as PKCS#8 (`PRIVATE KEY`, EC or RSA) or
//! PKCS#1 (`RSA PRIVATE KEY`); verification keys as `PUBLIC KEY` (SPKI),
//! `CERTIFICATE`, or private keys (their public half), as upstream's
//! `--service-account-key-file` accepts. A token verifies when any
//! verification key of its algorithm accepts the signature. The key id (`kid`)
//! is upstream's: base64url SHA-256 of the DER SubjectPublicKeyInfo.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, UnparsedPublicKey};
use rustls_pemfile::Item;
use serde_json::Value;

/// A key tokens are signed with.
pub enum SigningKey {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Es256,
    Rs256,
}

impl Alg {
    fn name(self) -> &'static str {
        match self {
            Alg::Es256 => "ES256",
            Alg::Rs256 => "RS256",
        }
    }
}

/// A public key tokens are verified with.
#[derive(Debug, Clone)]
pub struct VerifyKey {
    alg: Alg,
    /// EC: the uncompressed point; RSA: DER `RSAPublicKey`.
    public: Vec<u8>,
    /// The key id an external signer gave the key (else it is derived from
    /// the key, [`super::discovery::key_id`]).
    kid: Option<String>,
}

impl VerifyKey {
    /// ES256 (else RS256).
    pub fn is_ec(&self) -> bool {
        self.alg == Alg::Es256
    }

    /// EC: the uncompressed point; RSA: DER `RSAPublicKey`.
    pub fn public(&self) -> &[u8] {
        &self.public
    }

    /// The key id given with the key, if any.
    pub fn given_kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        let alg: &dyn signature::VerificationAlgorithm = match self.alg {
            Alg::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
            Alg::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        };
        UnparsedPublicKey::new(alg, &self.public)
            .verify(msg, sig)
            .is_ok()
    }
}

/// A PKCS#8 PEM of a new P-256 key (what kapi generates when given no key).
pub fn generate_ec_pem() -> String {
    let rng = SystemRandom::new();
    let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("P-256 key generation");
    let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_ref());
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

fn pem_items(pem: &str) -> Result<Vec<Item>, String> {
    rustls_pemfile::read_all(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid PEM: {e}"))
}

fn signing_from_item(item: &Item) -> Option<Result<SigningKey, String>> {
    let rng = SystemRandom::new();
    Some(match item {
        Item::Pkcs8Key(k) => {
            let der = k.secret_pkcs8_der();
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
                .map(SigningKey::Ec)
                .or_else(|_| RsaKeyPair::from_pkcs8(der).map(SigningKey::Rsa))
                .map_err(|e| format!("unsupported PKCS#8 key (want EC P-256 or RSA): {e}"))
        }
        Item::Pkcs1Key(k) => RsaKeyPair::from_der(k.secret_pkcs1_der())
            .map(SigningKey::Rsa)
            .map_err(|e| format!("invalid RSA key: {e}")),
        Item::Sec1Key(_) => Err("EC PRIVATE KEY (SEC1) is not supported; use PKCS#8".into()),
        _ => return None,
    })
}

/// The first private key in `pem`.
pub fn parse_signing_key(pem: &str) -> Result<SigningKey, String> {
    pem_items(pem)?
        .iter()
        .find_map(signing_from_item)
        .unwrap_or_else(|| Err("no private key found".into()))
}

fn from_spki(der: &[u8]) -> Result<VerifyKey, String> {
    use x509_parser::prelude::FromDer;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
        .map_err(|e| format!("invalid public key: {e}"))?;
    let public = spki.subject_public_key.data.to_vec();
    let alg = match spki.algorithm.algorithm.to_id_string().as_str() {
        "1.2.840.113549.1.1.1" => Alg::Rs256,
        "1.2.840.10045.2.1" if public.len() == 65 => Alg::Es256,
        other => return Err(format!("unsupported public key algorithm {other}")),
    };
    Ok(VerifyKey {
        alg,
        public,
        kid: None,
    })
}

/// The key of a DER `SubjectPublicKeyInfo` (Go's PKIX form), known by `kid`.
pub fn verify_key_from_spki(der: &[u8], kid: &str) -> Result<VerifyKey, String> {
    let mut key = from_spki(der)?;
    key.kid = Some(kid.to_owned());
    Ok(key)
}

/// Every public key in `pem` (public keys, certificates, private keys).
pub fn parse_verify_keys(pem: &str) -> Result<Vec<VerifyKey>, String> {
    let mut out = Vec::new();
    for item in pem_items(pem)? {
        match &item {
            Item::SubjectPublicKeyInfo(spki) => out.push(from_spki(spki.as_ref())?),
            Item::X509Certificate(cert) => {
                use x509_parser::prelude::FromDer;
                let (_, c) = x509_parser::certificate::X509Certificate::from_der(cert.as_ref())
                    .map_err(|e| format!("invalid certificate: {e}"))?;
                out.push(from_spki(c.public_key().raw)?);
            }
            other => {
                if let Some(key) = signing_from_item(other) {
                    out.push(key?.verify_key());
                }
            }
        }
    }
    if out.is_empty() {
        return Err("no public key found".into());
    }
    Ok(out)
}

impl SigningKey {
    pub fn verify_key(&self) -> VerifyKey {
        match self {
            SigningKey::Ec(k) => VerifyKey {
                alg: Alg::Es256,
                public: k.public_key().as_ref().to_vec(),
                kid: None,
            },
            SigningKey::Rsa(k) => VerifyKey {
                alg: Alg::Rs256,
                public: k.public().as_ref().to_vec(),
                kid: None,
            },
        }
    }

    fn alg(&self) -> Alg {
        match self {
            SigningKey::Ec(_) => Alg::Es256,
            SigningKey::Rsa(_) => Alg::Rs256,
        }
    }

    /// The key id: base64url SHA-256 of the DER public key, as upstream.
    pub fn kid(&self) -> String {
        super::discovery::key_id(&self.verify_key())
    }

    /// A compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> String {
        let header = serde_json::json!({"alg": self.alg().name(), "kid": self.kid()});
        let msg = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let sig = match self {
            SigningKey::Ec(k) => k
                .sign(&rng, msg.as_bytes())
                .expect("ECDSA signing")
                .as_ref()
                .to_vec(),
            SigningKey::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, msg.as_bytes(), &mut sig)
                    .expect("RSA signing");
                sig
            }
        };
        format!("{msg}.{}", B64.encode(sig))
    }
}

/// The header of a token that looks like a JWT, unverified.
pub fn peek_header(token: &str) -> Option<Value> {
    let header = token.split('.').next()?;
    serde_json::from_slice(&B64.decode(header).ok()?).ok()
}

/// The claims of a token that looks like a JWT, unverified; `None` otherwise.
pub fn peek_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    serde_json::from_slice(&B64.decode(payload).ok()?).ok()
}

/// The claims of `token` when one of `keys` signed it.
pub fn verify(token: &str, keys: &[VerifyKey]) -> Result<Value, String> {
    let (msg, sig) = token.rsplit_once('.').ok_or("malformed token")?;
    let header_b64 = msg.split('.').next().unwrap_or("");
    let header: Value = B64
        .decode(header_b64)
        .ok()
        .and_then(|h| serde_json::from_slice(&h).ok())
        .ok_or("malformed token header")?;
    let alg = match header.get("alg").and_then(Value::as_str) {
        Some("ES256") => Alg::Es256,
        Some("RS256") => Alg::Rs256,
        other => return Err(format!("unsupported signing algorithm {other:?}")),
    };
    let sig = B64.decode(sig).map_err(|_| "malformed token signature")?;
    if !keys
        .iter()
        .any(|k| k.alg == alg && k.verify(msg.as_bytes(), &sig))
    {
        return Err("invalid signature".into());
    }
    peek_claims(token).ok_or_else(|| "malformed token claims".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify_round_trip_and_reject_others() {
        let key = parse_signing_key(&generate_ec_pem()).unwrap();
        let other = parse_signing_key(&generate_ec_pem()).unwrap();
        let claims = serde_json::json!({"sub": "x", "n": 1});
        let token = key.sign(&claims);
        assert_eq!(verify(&token, &[key.verify_key()]).unwrap(), claims);
        assert!(verify(&token, &[other.verify_key()]).is_err());
        let mut tampered = token.clone();
        tampered.insert(tampered.find('.').unwrap() + 2, 'A');
        assert!(verify(&tampered, &[key.verify_key()]).is_err());
        assert!(verify("a.b", &[key.verify_key()]).is_err());
        // The private key file also serves as a verification key file.
        let pem = generate_ec_pem();
        let k = parse_signing_key(&pem).unwrap();
        let vk = parse_verify_keys(&pem).unwrap();
        assert!(verify(&k.sign(&claims), &vk).is_ok());
    }

    #[test]
    fn public_key_pem_verifies() {
        let kp = rcgen::KeyPair::generate().unwrap();
        let signer = parse_signing_key(&kp.serialize_pem()).unwrap();
        let keys = parse_verify_keys(&kp.public_key_pem()).unwrap();
        let token = signer.sign(&serde_json::json!({"a": true}));
        assert!(verify(&token, &keys).is_ok());
    }
}
