//! The self-managed PKI under `<data-dir>/pki/`: a CA, the serving certificate
//! and the `kubernetes-admin` client certificate.
//!
//! Invariants: the CA ("kapi-ca", 10 years) is generated once and reused as long
//! as it is valid; leaves (1 year) are re-issued when missing, expired (or about
//! to), not issued by the current CA, or — for the serving certificate — when
//! their SANs do not cover the requested ones. Private keys are written with
//! mode 0600 (the directory 0700), every file atomically (temp file + rename).
//! Keys are ECDSA P-256 in PKCS#8 PEM. Issued certificates carry the CA's
//! subject as issuer, rebuilt from the CA certificate itself (see
//! [`issuer_dn`]), so a CA from an older run keeps signing compatibly.
//!
//! Where to look next: `tls.rs` turns these PEMs into a rustls config and a
//! kubeconfig; `authn.rs` maps client certificates to users.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use super::TlsError;

/// Common name of the generated CA.
pub const CA_COMMON_NAME: &str = "kapi-ca";
/// User name of the generated admin client certificate.
pub const ADMIN_USER: &str = "kubernetes-admin";
/// Group of the generated admin client certificate.
pub const ADMIN_GROUP: &str = "system:masters";

const CA_VALIDITY: Duration = Duration::days(3650);
const LEAF_VALIDITY: Duration = Duration::days(365);
/// Leaves expiring within this window are re-issued at start.
const RENEW_BEFORE: Duration = Duration::days(7);
/// Backdating of `notBefore`, for clock skew between machines.
const BACKDATE: Duration = Duration::hours(1);

/// DNS names always present in the serving certificate.
const DEFAULT_DNS_SANS: &[&str] = &[
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];
/// IP addresses always present in the serving certificate.
const DEFAULT_IP_SANS: &[&str] = &["127.0.0.1", "::1"];

/// The PEM material of the local PKI. `ca_key_pem` is kept to sign more
/// client certificates ([`Pki::issue_client_cert`]).
#[derive(Clone)]
pub struct Pki {
    /// `<data-dir>/pki`.
    pub dir: PathBuf,
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// One certificate/key pair as PEM.
struct Pair {
    cert: String,
    key: String,
}

/// Load the PKI from `<dir>/pki/`, generating whatever is missing or stale.
/// `extra_sans` are added to the serving certificate (IPs or DNS names; the
/// unspecified addresses `0.0.0.0`/`::` and empty strings are ignored).
pub fn load_or_generate(dir: &Path, extra_sans: &[String]) -> Result<Pki, TlsError> {
    let pki_dir = dir.join("pki");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&pki_dir)
        .map_err(|e| TlsError::io(&pki_dir, e))?;
    let now = OffsetDateTime::now_utc();
    let (ca, ca_fresh) = load_or_generate_ca(&pki_dir, now)?;
    let ca_key = KeyPair::from_pem(&ca.key)?;
    let issuer = Issuer::new(ca_params_from_pem(&ca.cert)?, &ca_key);
    let ca_der = pem_to_der(&ca.cert)?;

    let sans = requested_sans(extra_sans);
    let serving = reuse_or_issue(
        &pki_dir,
        "apiserver",
        ca_fresh,
        now,
        &ca_der,
        |c| covers_sans(c, &sans),
        || issue_serving(&sans, &issuer, now),
    )?;
    let admin = reuse_or_issue(
        &pki_dir,
        "admin",
        ca_fresh,
        now,
        &ca_der,
        |_| true,
        || issue_client(ADMIN_USER, &[ADMIN_GROUP], &issuer, now),
    )?;
    Ok(Pki {
        dir: pki_dir,
        ca_cert_pem: ca.cert,
        ca_key_pem: ca.key,
        serving_cert_pem: serving.cert,
        serving_key_pem: serving.key,
        admin_cert_pem: admin.cert,
        admin_key_pem: admin.key,
    })
}

impl Pki {
    /// Issue a fresh client certificate (CN = `user`, O = `groups`, clientAuth)
    /// signed by this PKI's CA. Returns `(cert_pem, key_pem)`; nothing is written.
    pub fn issue_client_cert(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<(String, String), TlsError> {
        let ca_key = KeyPair::from_pem(&self.ca_key_pem)?;
        let issuer = Issuer::new(ca_params_from_pem(&self.ca_cert_pem)?, &ca_key);
        let pair = issue_client(user, groups, &issuer, OffsetDateTime::now_utc())?;
        Ok((pair.cert, pair.key))
    }
}

/// Returns the CA pair and whether it was generated now.
fn load_or_generate_ca(pki_dir: &Path, now: OffsetDateTime) -> Result<(Pair, bool), TlsError> {
    let cert_path = pki_dir.join("ca.crt");
    let key_path = pki_dir.join("ca.key");
    match (read_opt(&cert_path)?, read_opt(&key_path)?) {
        (Some(cert), Some(key)) => {
            let der = pem_to_der(&cert)?;
            let x509 = parse_x509(&der)?;
            if still_valid(&x509, now) {
                return Ok((Pair { cert, key }, false));
            }
            tracing::warn!(path = %cert_path.display(), "CA certificate expired; generating a new CA");
        }
        (Some(_), None) => {
            return Err(TlsError::Pki(format!(
                "{} exists but {} is missing: cannot sign certificates",
                cert_path.display(),
                key_path.display()
            )))
        }
        _ => {}
    }
    let pair = generate_ca(now)?;
    write_pair(pki_dir, "ca", &pair)?;
    tracing::info!(path = %cert_path.display(), "generated a new CA");
    Ok((pair, true))
}

/// Reuse `<name>.crt/.key` when present, valid, issued by the CA and accepted
/// by `accept`; otherwise issue with `issue` and write them.
fn reuse_or_issue(
    pki_dir: &Path,
    name: &str,
    force: bool,
    now: OffsetDateTime,
    ca_der: &[u8],
    accept: impl Fn(&X509Certificate<'_>) -> bool,
    issue: impl FnOnce() -> Result<Pair, TlsError>,
) -> Result<Pair, TlsError> {
    if !force {
        let cert = read_opt(&pki_dir.join(format!("{name}.crt")))?;
        let key = read_opt(&pki_dir.join(format!("{name}.key")))?;
        if let (Some(cert), Some(key)) = (cert, key) {
            let ca = parse_x509(ca_der)?;
            let der = pem_to_der(&cert)?;
            let leaf = parse_x509(&der)?;
            let issued_by_ca = leaf.issuer().as_raw() == ca.subject().as_raw();
            if issued_by_ca && still_valid(&leaf, now + RENEW_BEFORE) && accept(&leaf) {
                return Ok(Pair { cert, key });
            }
        }
    }
    let pair = issue()?;
    write_pair(pki_dir, name, &pair)?;
    tracing::info!(name, dir = %pki_dir.display(), "issued certificate");
    Ok(pair)
}

fn generate_ca(now: OffsetDateTime) -> Result<Pair, TlsError> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, CA_COMMON_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, now, CA_VALIDITY)?;
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

fn issue_serving(
    sans: &[SanType],
    issuer: &Issuer<'_, &KeyPair>,
    now: OffsetDateTime,
) -> Result<Pair, TlsError> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.subject_alt_names = sans.to_vec();
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    sign_leaf(params, issuer, now)
}

fn issue_client(
    user: &str,
    groups: &[&str],
    issuer: &Issuer<'_, &KeyPair>,
    now: OffsetDateTime,
) -> Result<Pair, TlsError> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    for group in groups {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *group);
    }
    params.distinguished_name.push(DnType::CommonName, user);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    sign_leaf(params, issuer, now)
}

fn sign_leaf(
    mut params: CertificateParams,
    issuer: &Issuer<'_, &KeyPair>,
    now: OffsetDateTime,
) -> Result<Pair, TlsError> {
    set_validity(&mut params, now, LEAF_VALIDITY)?;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

fn set_validity(
    params: &mut CertificateParams,
    now: OffsetDateTime,
    validity: Duration,
) -> Result<(), TlsError> {
    params.not_before = now - BACKDATE;
    params.not_after = now + validity;
    params.serial_number = Some(random_serial()?);
    Ok(())
}

/// A random positive 16-byte serial number.
fn random_serial() -> Result<SerialNumber, TlsError> {
    let mut bytes = [0u8; 16];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut bytes)
        .map_err(|_| TlsError::Pki("no secure random source".into()))?;
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01;
    Ok(SerialNumber::from_slice(&bytes))
}

/// Issuer parameters rebuilt from the CA certificate: its subject (CN, O, OU,
/// C, ST, L in order) and key usages. rcgen is built without its x509-parser
/// feature, so this is done here.
fn ca_params_from_pem(ca_pem: &str) -> Result<CertificateParams, TlsError> {
    let der = pem_to_der(ca_pem)?;
    let x509 = parse_x509(&der)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = issuer_dn(&x509);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    Ok(params)
}

fn issuer_dn(x509: &X509Certificate<'_>) -> DistinguishedName {
    use x509_parser::oid_registry as oids;
    let mut dn = DistinguishedName::new();
    for rdn in x509.subject().iter() {
        for attr in rdn.iter() {
            let Ok(value) = attr.as_str() else { continue };
            let oid = attr.attr_type();
            let ty = if *oid == oids::OID_X509_COMMON_NAME {
                DnType::CommonName
            } else if *oid == oids::OID_X509_ORGANIZATION_NAME {
                DnType::OrganizationName
            } else if *oid == oids::OID_X509_ORGANIZATIONAL_UNIT {
                DnType::OrganizationalUnitName
            } else if *oid == oids::OID_X509_COUNTRY_NAME {
                DnType::CountryName
            } else if *oid == oids::OID_X509_STATE_OR_PROVINCE_NAME {
                DnType::StateOrProvinceName
            } else if *oid == oids::OID_X509_LOCALITY_NAME {
                DnType::LocalityName
            } else {
                continue;
            };
            dn.push(ty, value);
        }
    }
    dn
}

/// The serving SANs: defaults, the machine hostname, then `extra`.
fn requested_sans(extra: &[String]) -> Vec<SanType> {
    let mut names: Vec<String> = DEFAULT_DNS_SANS.iter().map(|s| s.to_string()).collect();
    names.extend(DEFAULT_IP_SANS.iter().map(|s| s.to_string()));
    names.extend(hostname());
    names.extend(extra.iter().cloned());
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for raw in names {
        let name = raw.trim().trim_start_matches('[').trim_end_matches(']');
        let san = match name.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => continue,
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) if name.is_empty() => continue,
            Err(_) => match name.to_ascii_lowercase().try_into() {
                Ok(dns) => SanType::DnsName(dns),
                Err(_) => {
                    tracing::warn!(name, "ignoring SAN that is not a valid DNS name");
                    continue;
                }
            },
        };
        if seen.insert(san_key(&san)) {
            out.push(san);
        }
    }
    out
}

fn san_key(san: &SanType) -> String {
    match san {
        SanType::IpAddress(ip) => format!("ip:{ip}"),
        SanType::DnsName(dns) => format!("dns:{}", dns.as_str().to_ascii_lowercase()),
        other => format!("{other:?}"),
    }
}

/// Whether the certificate's SANs include every requested one.
fn covers_sans(cert: &X509Certificate<'_>, wanted: &[SanType]) -> bool {
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return wanted.is_empty();
    };
    let have: BTreeSet<String> = ext
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(d) => Some(format!("dns:{}", d.to_ascii_lowercase())),
            GeneralName::IPAddress(b) => ip_from_bytes(b).map(|ip| format!("ip:{ip}")),
            _ => None,
        })
        .collect();
    wanted.iter().all(|san| have.contains(&san_key(san)))
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

/// The machine's hostname, lowercased, if it can be read.
fn hostname() -> Option<String> {
    let from_file = |p: &str| fs::read_to_string(p).ok();
    from_file("/proc/sys/kernel/hostname")
        .or_else(|| from_file("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
}

fn still_valid(cert: &X509Certificate<'_>, at: OffsetDateTime) -> bool {
    let validity = cert.validity();
    let t = at.unix_timestamp();
    validity.not_before.timestamp() <= t && t < validity.not_after.timestamp()
}

/// DER bytes of the first `CERTIFICATE` block of `pem`.
pub fn pem_to_der(pem: &str) -> Result<Vec<u8>, TlsError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    CertificateDer::from_pem_slice(pem.as_bytes())
        .map(|c| c.to_vec())
        .map_err(|e| TlsError::Pem(format!("certificate: {e}")))
}

pub fn parse_x509(der: &[u8]) -> Result<X509Certificate<'_>, TlsError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, c)| c)
        .map_err(|e| TlsError::Pem(format!("x509: {e}")))
}

fn read_opt(path: &Path) -> Result<Option<String>, TlsError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TlsError::io(path, e)),
    }
}

fn write_pair(pki_dir: &Path, name: &str, pair: &Pair) -> Result<(), TlsError> {
    let cert_path = pki_dir.join(format!("{name}.crt"));
    let key_path = pki_dir.join(format!("{name}.key"));
    // Key first: a crash in between leaves a stale cert that fails to match
    // and is re-issued, never a new cert next to an old key.
    write_file_atomic(&key_path, pair.key.as_bytes(), 0o600)
        .map_err(|e| TlsError::io(&key_path, e))?;
    write_file_atomic(&cert_path, pair.cert.as_bytes(), 0o644)
        .map_err(|e| TlsError::io(&cert_path, e))
}

/// Write `data` to `path` with `mode` via a temp file in the same directory
/// and a rename.
pub fn write_file_atomic(path: &Path, data: &[u8], mode: u32) -> io::Result<()> {
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(data)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
