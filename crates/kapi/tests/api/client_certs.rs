//! Client certificates as upstream's x509 authenticator treats them: one that
//! chains to the client CA names its subject; one that does not (here: from
//! another CA) is an authentication error — 401 with a `Status`, not a failed
//! TLS handshake and not anonymous — unless a bearer token authenticates the
//! request.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::Api;

use crate::harness;

#[tokio::test]
async fn a_certificate_from_another_ca_is_unauthorized() {
    let s = harness::start().await;
    let other_dir = tempfile::tempdir().unwrap();
    let other = kapi_server::tls::load_or_generate(other_dir.path(), &[]).unwrap();

    // The same subject (kubernetes-admin, system:masters), signed by a CA the
    // server does not trust.
    let foreign = s
        .client_with_cert(&other.admin_cert_pem, &other.admin_key_pem, None)
        .await;
    let err = Api::<Namespace>::all(foreign)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let status = match err {
        kube::Error::Api(status) => status,
        e => panic!("expected a Status, got {e:?}"),
    };
    assert_eq!(status.code, 401, "{status:?}");
    assert_eq!(status.reason, "Unauthorized");

    // With a valid bearer token beside it, the token's user is authenticated
    // (alice holds no grant: 403, not 401).
    let with_token = s
        .client_with_cert(
            &other.admin_cert_pem,
            &other.admin_key_pem,
            Some("alice-token"),
        )
        .await;
    let err = Api::<Namespace>::all(with_token)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a Status")
    };
    assert_eq!(status.code, 403, "{status:?}");
    assert!(status.message.contains("\"alice\""), "{}", status.message);

    // The server's own admin certificate still works.
    let ns = Api::<Namespace>::all(s.client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(!ns.items.is_empty());
}
