use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, Error};

use super::GoTrust;

fn params(names: &[&str], ca: bool) -> CertificateParams {
    let mut p = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        .expect("names");
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    p
}

fn self_signed(p: CertificateParams) -> CertificateDer<'static> {
    let key = KeyPair::generate().unwrap();
    p.self_signed(&key).unwrap().der().clone()
}

fn verifier(roots: &[&CertificateDer<'static>]) -> Arc<GoTrust> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    GoTrust::new(roots.iter().map(|c| (*c).clone()).collect(), provider).unwrap()
}

fn verify(v: &GoTrust, cert: &CertificateDer<'_>, name: &str) -> Result<(), Error> {
    let name = ServerName::try_from(name.to_string()).unwrap();
    v.verify_server_cert(cert, &[], &name, &[], UnixTime::now())
        .map(|_| ())
}

fn invalid(e: CertificateError) -> Result<(), Error> {
    Err(Error::InvalidCertificate(e))
}

/// Refused for its names, with the name expected.
fn wrong_name(r: Result<(), Error>, expected: &str) {
    match r {
        Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: e,
            ..
        })) => assert_eq!(e.to_str(), expected),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_self_signed_ca_is_trusted_as_its_own_servers_certificate() {
    let cert = self_signed(params(&["localhost", "127.0.0.1"], true));
    let v = verifier(&[&cert]);
    assert_eq!(verify(&v, &cert, "localhost"), Ok(()));
    assert_eq!(verify(&v, &cert, "127.0.0.1"), Ok(()));
    // The name is still checked.
    wrong_name(verify(&v, &cert, "other.example"), "other.example");
    wrong_name(verify(&v, &cert, "127.0.0.2"), "127.0.0.2");
    // Among other roots too.
    let other = self_signed(params(&["elsewhere"], true));
    let v = verifier(&[&other, &cert]);
    assert_eq!(verify(&v, &cert, "localhost"), Ok(()));
}

#[test]
fn a_ca_that_is_not_a_root_is_refused_as_webpki_refuses_it() {
    let cert = self_signed(params(&["localhost"], true));
    let other = self_signed(params(&["localhost"], true));
    let v = verifier(&[&other]);
    let e = verify(&v, &cert, "localhost").unwrap_err();
    assert!(e.to_string().contains("CaUsedAsEndEntity"), "{e}");
}

#[test]
fn the_root_as_leaf_must_be_in_its_validity_and_for_servers() {
    let mut p = params(&["localhost"], true);
    p.not_before = rcgen::date_time_ymd(2000, 1, 1);
    p.not_after = rcgen::date_time_ymd(2001, 1, 1);
    let expired = self_signed(p);
    assert_eq!(
        verify(&verifier(&[&expired]), &expired, "localhost"),
        invalid(CertificateError::Expired)
    );

    let mut p = params(&["localhost"], true);
    p.not_before = rcgen::date_time_ymd(2999, 1, 1);
    p.not_after = rcgen::date_time_ymd(3000, 1, 1);
    let future = self_signed(p);
    assert_eq!(
        verify(&verifier(&[&future]), &future, "localhost"),
        invalid(CertificateError::NotValidYet)
    );

    let mut p = params(&["localhost"], true);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_only = self_signed(p);
    assert_eq!(
        verify(&verifier(&[&client_only]), &client_only, "localhost"),
        invalid(CertificateError::InvalidPurpose)
    );

    let mut p = params(&["localhost"], true);
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
    ];
    let both = self_signed(p);
    assert_eq!(verify(&verifier(&[&both]), &both, "localhost"), Ok(()));
}

#[test]
fn chains_to_a_root_are_webpkis() {
    let ca_key = KeyPair::generate().unwrap();
    let ca_params = params(&[], true);
    let ca = ca_params
        .clone()
        .self_signed(&ca_key)
        .unwrap()
        .der()
        .clone();
    let issuer = Issuer::new(ca_params, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = params(&["hook.default.svc"], false)
        .signed_by(&leaf_key, &issuer)
        .unwrap()
        .der()
        .clone();
    let v = verifier(&[&ca]);
    assert_eq!(verify(&v, &leaf, "hook.default.svc"), Ok(()));
    wrong_name(verify(&v, &leaf, "other.default.svc"), "other.default.svc");
    // A self-signed end-entity certificate given as its own root, as before.
    let plain = self_signed(params(&["localhost"], false));
    assert_eq!(verify(&verifier(&[&plain]), &plain, "localhost"), Ok(()));
}
