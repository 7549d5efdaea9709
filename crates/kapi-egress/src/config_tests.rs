use super::*;

const HEAD: &str = "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n";

fn check(body: &str) -> Option<String> {
    validate(&parse(&format!("{HEAD}{body}")).unwrap())
}

#[test]
fn reads_both_versions_yaml_and_json() {
    let c = parse(&format!(
        "{HEAD}egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      uds:\n        udsName: /run/konnectivity.sock\n- name: master\n  connection:\n    proxyProtocol: Direct\n"
    ))
    .unwrap();
    assert_eq!(c.egress_selections.len(), 2);
    assert_eq!(c.egress_selections[1].name, "controlplane");
    let uds = c.egress_selections[0]
        .connection
        .transport
        .as_ref()
        .unwrap();
    assert_eq!(uds.uds.as_ref().unwrap().uds_name, "/run/konnectivity.sock");
    assert_eq!(validate(&c), None);

    let json = r#"{"apiVersion":"apiserver.k8s.io/v1alpha1","kind":"EgressSelectorConfiguration",
        "egressSelections":[{"name":"etcd","connection":{"proxyProtocol":"Direct"}}]}"#;
    let c = parse(json).unwrap();
    assert_eq!(c.egress_selections[0].name, "etcd");
    let empty = parse(&format!("{HEAD}egressSelections:\n")).unwrap();
    assert!(empty.egress_selections.is_empty());
}

#[test]
fn decoding_is_strict() {
    let e = parse(&format!(
        "{HEAD}egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: Direct\n    foo: 1\n"
    ))
    .unwrap_err();
    assert_eq!(
        e,
        "strict decoding error: unknown field \"egressSelections[0].connection.foo\""
    );
    // tlsServerName came after 1.33.
    let e = parse(&format!(
        "{HEAD}egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      tcp:\n        url: https://p:1\n        tlsConfig: {{tlsServerName: x}}\n"
    ))
    .unwrap_err();
    assert!(e.contains("unknown field \"egressSelections[0].connection.transport.tcp.tlsConfig.tlsServerName\""), "{e}");
    let e =
        parse("apiVersion: apiserver.k8s.io/v1\nkind: EgressSelectorConfiguration\n").unwrap_err();
    assert!(e.starts_with("no kind \"EgressSelectorConfiguration\" is registered for version \"apiserver.k8s.io/v1\""), "{e}");
    let e =
        parse("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n")
            .unwrap_err();
    assert!(e.starts_with("no kind"), "{e}");
    assert_eq!(
        parse("egressSelections: []\n").unwrap_err(),
        "Object 'Kind' is missing"
    );
}

#[test]
fn direct_takes_no_transport() {
    assert_eq!(
        check("egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: Direct\n    transport: {}\n"),
        Some("service.connection.transport: Invalid value: \"direct\": config must be absent for direct connect".into())
    );
}

#[test]
fn http_connect_needs_one_transport() {
    let sel = "egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n";
    assert_eq!(
        check(sel),
        Some(
            "service.connection.transport: Required value: transport must be set for HTTPConnect"
                .into()
        )
    );
    assert_eq!(
        check(&format!("{sel}    transport: {{}}\n")),
        Some("service.connection.tcp: Required value: One of TCP or UDS must be set".into())
    );
    assert_eq!(
        check(&format!("{sel}    transport: {{tcp: {{url: 'http://p:1'}}, uds: {{udsName: /s}}}}\n")),
        Some("service.connection.tcp: Invalid value: apiserver.TCPTransport{URL:\"http://p:1\", TLSConfig:(*apiserver.TLSConfig)(nil)}: TCP and UDS cannot both be set".into())
    );
    assert_eq!(
        check(&format!("{sel}    transport: {{uds: {{}}}}\n")),
        Some("service.connection.udsName: Invalid value: \"nil\": must be present for UDS connections".into())
    );
}

#[test]
fn tcp_urls_and_tls_files() {
    let sel = "egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      tcp:\n";
    assert_eq!(
        check(&format!("{sel}        url: 'ftp://p:1'\n")),
        Some("service.connection.url: Invalid value: \"ftp://p:1\": supported connection protocols are http:// and https://".into())
    );
    assert_eq!(check(&format!("{sel}        url: 'http://p:1'\n")), None);
    assert_eq!(
        check(&format!("{sel}        url: 'http://p:1'\n        tlsConfig: {{}}\n")),
        Some("service.connection.tlsConfig: Invalid value: \"nil\": config must not be present when using HTTP".into())
    );
    assert_eq!(
        check(&format!("{sel}        url: 'https://p:1'\n")),
        Some("service.connection.tlsConfig: Required value: TLSConfig must be present when using HTTPS".into())
    );
    assert_eq!(
        check(&format!("{sel}        url: 'https://p:1'\n        tlsConfig: {{caBundle: /nonexistent/ca.crt}}\n")),
        Some("[service.connection.tlsConfig.caBundle: Invalid value: \"/nonexistent/ca.crt\": TLS config ca bundle does not exist, \
service.connection.tlsConfig.clientCert: Invalid value: \"nil\": Using TLS requires clientCert, \
service.connection.tlsConfig.clientKey: Invalid value: \"nil\": Using TLS requires requires clientKey]".into())
    );
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("c.crt");
    std::fs::write(&cert, "x").unwrap();
    assert_eq!(
        check(&format!(
            "{sel}        url: 'https://p:1'\n        tlsConfig: {{clientCert: {}, clientKey: /nonexistent/k}}\n",
            cert.display()
        )),
        Some("service.connection.tlsConfig.clientKey: Invalid value: \"/nonexistent/k\": TLS client key does not exist".into())
    );
}

#[test]
fn grpc_needs_a_unix_socket() {
    let sel = "egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: GRPC\n";
    assert_eq!(
        check(sel),
        Some("service.connection.transport: Required value: transport must be set for GRPC".into())
    );
    assert_eq!(
        check(&format!(
            "{sel}    transport: {{tcp: {{url: 'https://p:1'}}}}\n"
        )),
        Some("service.connection.uds: Required value: UDS must be set with GRPC".into())
    );
    assert_eq!(
        check(&format!("{sel}    transport: {{uds: {{udsName: /s}}}}\n")),
        None
    );
}

#[test]
fn names_and_protocols() {
    assert_eq!(
        check("egressSelections:\n- name: cluster\n  connection: {proxyProtocol: Direct}\n- name: Cluster\n  connection: {proxyProtocol: Direct}\n"),
        Some("service.connection[1]: Duplicate value: \"cluster\"".into())
    );
    assert_eq!(
        check("egressSelections:\n- name: nodes\n  connection: {proxyProtocol: Direct}\n"),
        Some("service.connection: Unsupported value: \"nodes\": supported values: \"cluster\", \"controlplane\", \"etcd\"".into())
    );
    assert_eq!(
        check("egressSelections:\n- name: etcd\n  connection: {}\n"),
        Some("service.connection.protocol: Unsupported value: \"\": supported values: \"Direct\", \"HTTPConnect\", \"GRPC\"".into())
    );
    assert_eq!(
        check("egressSelections:\n- name: etcd\n  connection: {proxyProtocol: direct}\n"),
        Some("service.connection.protocol: Unsupported value: \"direct\": supported values: \"Direct\", \"HTTPConnect\", \"GRPC\"".into())
    );
}

#[test]
fn loading_a_file() {
    use crate::{Egress, Network};
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.yaml");
    assert_eq!(
        Egress::load(&missing).unwrap_err(),
        format!(
            "egress-selector-config-file {} does not exist",
            missing.display()
        )
    );
    let path = dir.path().join("egress.yaml");
    std::fs::write(&path, format!("{HEAD}egressSelections:\n- name: cluster\n  connection: {{proxyProtocol: Direct, transport: {{}}}}\n")).unwrap();
    assert!(Egress::load(&path).unwrap_err().starts_with(
        "failed to validate egress selector configuration: service.connection.transport: Invalid value"
    ));
    std::fs::write(&path, format!("{HEAD}egressSelections:\n- name: cluster\n  connection: {{proxyProtocol: GRPC, transport: {{uds: {{udsName: /s}}}}}}\n")).unwrap();
    // As upstream, the socket is dialled at the first dial, not at start.
    Egress::load(&path).expect("GRPC over a unix socket loads");
    std::fs::write(&path, format!("{HEAD}egressSelections:\n- name: etcd\n  connection: {{proxyProtocol: HTTPConnect, transport: {{uds: {{udsName: /s}}}}}}\n")).unwrap();
    let egress = Egress::load(&path).unwrap();
    assert_eq!(egress.etcd_protocol(), Protocol::HttpConnect);
    let _ = egress.dialer(Network::Cluster);
}
