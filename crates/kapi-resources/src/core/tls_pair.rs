//! The warning a `kubernetes.io/tls` Secret draws when its certificate and
//! key do not make a pair: upstream's secret strategy loads them with Go's
//! `tls.X509KeyPair` and sends its error back as a warning. The same steps,
//! with Go's texts: certificate PEM blocks, then the key's PEM block, then
//! the certificate, then the key (PKCS #1, PKCS #8 or SEC 1), then whether
//! the key's public half is the certificate's. A key whose public half
//! cannot be told here (an EC key stored without it) draws no warning.

use x509_parser::der_parser::ber::{BerObject, BerObjectContent};
use x509_parser::der_parser::parse_der;
use x509_parser::pem::Pem;
use x509_parser::public_key::PublicKey;

/// The PEM blocks of `input`: their labels and contents.
fn blocks(input: &[u8]) -> Vec<(String, Vec<u8>)> {
    Pem::iter_from_buffer(input)
        .map_while(Result::ok)
        .map(|p| (p.label, p.contents))
        .collect()
}

/// A key's public half, as far as it can be told.
#[derive(Debug, PartialEq)]
enum Public {
    Rsa {
        modulus: Vec<u8>,
        exponent: Vec<u8>,
    },
    Ec(Vec<u8>),
    Ed25519(Vec<u8>),
    /// A parsed key whose public half is not stored with it.
    Unknown,
}

impl Public {
    fn kind(&self) -> &'static str {
        match self {
            Public::Rsa { .. } => "rsa",
            Public::Ec(_) => "ec",
            Public::Ed25519(_) => "ed25519",
            Public::Unknown => "unknown",
        }
    }
}

fn seq<'a, 'b>(o: &'a BerObject<'b>) -> Option<&'a [BerObject<'b>]> {
    match &o.content {
        BerObjectContent::Sequence(items) => Some(items),
        _ => None,
    }
}

fn unsigned(o: &BerObject) -> Option<Vec<u8>> {
    let bytes = o.as_slice().ok()?;
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    Some(bytes[start..].to_vec())
}

/// PKCS #1 `RSAPrivateKey`: version, modulus, public exponent, ...
fn pkcs1(der: &[u8]) -> Option<Public> {
    let (rest, obj) = parse_der(der).ok()?;
    let items = seq(&obj)?;
    if !rest.is_empty() || items.len() < 9 {
        return None;
    }
    Some(Public::Rsa {
        modulus: unsigned(&items[1])?,
        exponent: unsigned(&items[2])?,
    })
}

/// SEC 1 `ECPrivateKey`: version 1, the private key, then the curve [0] and
/// the public key [1], both optional.
fn sec1(der: &[u8]) -> Option<Public> {
    let (_, obj) = parse_der(der).ok()?;
    let items = seq(&obj)?;
    if items.first()?.as_u32().ok()? != 1 {
        return None;
    }
    items[1].as_slice().ok()?;
    let public = items.iter().skip(2).find_map(|o| {
        if o.header.tag().0 != 1 || !o.header.is_contextspecific() {
            return None;
        }
        let inner = o.as_slice().ok()?;
        let (_, bits) = parse_der(inner).ok()?;
        match bits.content {
            BerObjectContent::BitString(_, b) => Some(b.data.to_vec()),
            _ => None,
        }
    });
    Some(public.map_or(Public::Unknown, Public::Ec))
}

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";

/// PKCS #8 `PrivateKeyInfo`: version, algorithm, the key in an octet string.
fn pkcs8(der: &[u8]) -> Option<Public> {
    let (_, obj) = parse_der(der).ok()?;
    let items = seq(&obj)?;
    let algorithm = seq(items.get(1)?)?.first()?.as_oid().ok()?.to_id_string();
    let key = items.get(2)?.as_slice().ok()?;
    match algorithm.as_str() {
        RSA => pkcs1(key),
        EC => sec1(key),
        ED25519 => {
            let (_, seed) = parse_der(key).ok()?;
            let seed = seed.as_slice().ok()?;
            let pair = ring::signature::Ed25519KeyPair::from_seed_unchecked(seed).ok()?;
            use ring::signature::KeyPair as _;
            Some(Public::Ed25519(pair.public_key().as_ref().to_vec()))
        }
        _ => None,
    }
}

/// What `tls.X509KeyPair(cert, key)` reports, if anything.
pub fn key_pair_error(cert: &[u8], key: &[u8]) -> Option<String> {
    let cert_blocks = blocks(cert);
    let Some((_, cert_der)) = cert_blocks.iter().find(|(l, _)| l == "CERTIFICATE") else {
        if cert_blocks.is_empty() {
            return Some("tls: failed to find any PEM data in certificate input".into());
        }
        let skipped: Vec<&str> = cert_blocks.iter().map(|(l, _)| l.as_str()).collect();
        if let [only] = skipped.as_slice() {
            if only.ends_with("PRIVATE KEY") {
                return Some("tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched".into());
            }
        }
        return Some(format!(
            "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the following types: [{}]",
            skipped.join(" ")
        ));
    };
    let key_blocks = blocks(key);
    let mut skipped = Vec::new();
    let mut key_der = None;
    for (label, der) in &key_blocks {
        if label == "PRIVATE KEY" || label.ends_with(" PRIVATE KEY") {
            key_der = Some(der);
            break;
        }
        skipped.push(label.as_str());
    }
    let Some(key_der) = key_der else {
        return Some(match skipped.as_slice() {
            [] => "tls: failed to find any PEM data in key input".into(),
            ["CERTIFICATE"] => {
                "tls: found a certificate rather than a key in the PEM for the private key".into()
            }
            _ => format!(
                "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input after skipping PEM blocks of the following types: [{}]",
                skipped.join(" ")
            ),
        });
    };
    let Ok((_, certificate)) = x509_parser::parse_x509_certificate(cert_der) else {
        return Some("x509: malformed certificate".into());
    };
    let Some(private) = pkcs1(key_der)
        .or_else(|| pkcs8(key_der))
        .or_else(|| sec1(key_der))
    else {
        return Some("tls: failed to parse private key".into());
    };
    let spki = certificate.public_key();
    let public = match spki.parsed() {
        Ok(PublicKey::RSA(rsa)) => Public::Rsa {
            modulus: unsigned_bytes(rsa.modulus),
            exponent: unsigned_bytes(rsa.exponent),
        },
        Ok(PublicKey::EC(point)) => Public::Ec(point.data().to_vec()),
        _ if spki.algorithm.algorithm.to_id_string() == ED25519 => {
            Public::Ed25519(spki.subject_public_key.data.to_vec())
        }
        _ => return Some("tls: unknown public key algorithm".into()),
    };
    if private == Public::Unknown {
        return None;
    }
    if private.kind() != public.kind() {
        return Some("tls: private key type does not match public key type".into());
    }
    (private != public).then(|| "tls: private key does not match public key".into())
}

fn unsigned_bytes(b: &[u8]) -> Vec<u8> {
    let start = b.iter().position(|x| *x != 0).unwrap_or(b.len());
    b[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_matching_pair_draws_nothing_and_a_mismatch_is_named() {
        for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ED25519] {
            let (c1, k1) = pair(alg);
            let (_, k2) = pair(alg);
            assert_eq!(key_pair_error(c1.as_bytes(), k1.as_bytes()), None);
            assert_eq!(
                key_pair_error(c1.as_bytes(), k2.as_bytes()).as_deref(),
                Some("tls: private key does not match public key")
            );
        }
        let (c1, _) = pair(&rcgen::PKCS_ECDSA_P256_SHA256);
        let (_, k2) = pair(&rcgen::PKCS_ED25519);
        assert_eq!(
            key_pair_error(c1.as_bytes(), k2.as_bytes()).as_deref(),
            Some("tls: private key type does not match public key type")
        );
    }

    #[test]
    fn missing_blocks_are_named_as_go_names_them() {
        let (c, k) = pair(&rcgen::PKCS_ECDSA_P256_SHA256);
        let e = |c: &str, k: &str| key_pair_error(c.as_bytes(), k.as_bytes()).unwrap();
        assert_eq!(
            e("abc", &k),
            "tls: failed to find any PEM data in certificate input"
        );
        assert_eq!(
            e(&c, "abc"),
            "tls: failed to find any PEM data in key input"
        );
        assert_eq!(
            e(&c, &c),
            "tls: found a certificate rather than a key in the PEM for the private key"
        );
        assert_eq!(
            e(&k, &k),
            "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched"
        );
        assert_eq!(
            e(&format!("{k}{k}"), &k),
            "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the following types: [PRIVATE KEY PRIVATE KEY]"
        );
        let bad_key = "-----BEGIN PRIVATE KEY-----\nYWJj\n-----END PRIVATE KEY-----\n";
        assert_eq!(e(&c, bad_key), "tls: failed to parse private key");
    }
}
