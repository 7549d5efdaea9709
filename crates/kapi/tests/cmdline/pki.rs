//! Certificates as the setups under test make them (kubeadm's `pki/`, envtest's
//! cert dir, local-up-cluster's `CERT_DIR`): CAs, serving certificates for
//! loopback, client certificates with CN = user and O = groups, all written as
//! PEM files.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};

/// A CA that signs leaves.
pub struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pub cert_pem: String,
}

impl Ca {
    pub fn new(cn: &str) -> Ca {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert_pem = params.self_signed(&key).expect("self-signed").pem();
        Ca {
            params,
            key,
            cert_pem,
        }
    }

    /// Write the CA's certificate (and key when `key` is given).
    pub fn write(&self, cert: &Path, key: Option<&Path>) {
        write(cert, &self.cert_pem);
        if let Some(k) = key {
            write(k, &self.key.serialize_pem());
        }
    }

    /// A serving certificate for localhost and the loopback addresses.
    pub fn serving(&self, cn: &str) -> (String, String) {
        let mut params = CertificateParams::new(vec![
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default.svc".to_string(),
        ])
        .expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate: CN = `user`, O = each group.
    pub fn client(&self, user: &str, groups: &[&str]) -> (String, String) {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, user);
        for g in groups {
            params.distinguished_name.push(DnType::OrganizationName, *g);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let issuer = Issuer::new(self.params.clone(), &self.key);
        let cert = params.signed_by(&key, &issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    }
}

/// A key pair for service account tokens: (private PEM, public PEM).
pub fn signing_key() -> (String, String) {
    let key = KeyPair::generate().expect("key");
    (key.serialize_pem(), key.public_key_pem())
}

pub fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Write a leaf pair to `cert` and `key`.
pub fn write_pair(pair: &(String, String), cert: &Path, key: &Path) {
    write(cert, &pair.0);
    write(key, &pair.1);
}
