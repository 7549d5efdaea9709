//! Authentication and authorization flags that cannot work stop the start,
//! with a message naming the flag or the field: a configuration file with an
//! invalid field or an unknown one, flags that exclude each other, a webhook
//! mode without its kubeconfig, a kubeconfig that does not load.

use std::path::Path;

use crate::proc::run_once;

fn start_fails(dir: &Path, extra: &[String]) -> String {
    let mut args: Vec<String> = vec![
        format!("--cert-dir={}", dir.join("certs").display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
    ];
    args.extend(extra.iter().cloned());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(dir, &argv);
    assert_eq!(code, 1, "{err}");
    err
}

fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn bad_authentication_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let head = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\n";
    let invalid = file(d, "a.yaml", &format!("{head}jwt:\n- issuer: {{url: \"http://i\", audiences: [a]}}\n  claimMappings: {{username: {{claim: sub}}}}\n"));
    let err = start_fails(d, &[format!("--authentication-config={invalid}")]);
    assert!(
        err.contains("jwt[0].issuer.url: Invalid value: \"http://i\": URL scheme must be https"),
        "{err}"
    );
    assert!(
        err.contains("jwt[0].claimMappings.username.prefix: Required value"),
        "{err}"
    );
    let unknown = file(
        d,
        "b.yaml",
        &format!("{head}jwt:\n- issuer: {{url: \"https://i\", audience: [a]}}\n"),
    );
    let err = start_fails(d, &[format!("--authentication-config={unknown}")]);
    assert!(
        err.contains("strict decoding error: unknown field \"jwt[0].issuer.audience\""),
        "{err}"
    );
    let anonymous = file(
        d,
        "c.yaml",
        &format!("{head}anonymous: {{enabled: true}}\n"),
    );
    let err = start_fails(
        d,
        &[
            format!("--authentication-config={anonymous}"),
            "--anonymous-auth=false".into(),
        ],
    );
    assert!(
        err.contains("--anonymous-auth flag cannot be set when anonymous field is configured"),
        "{err}"
    );
    let err = start_fails(
        d,
        &[
            format!("--authentication-config={anonymous}"),
            "--oidc-issuer-url=https://i".into(),
            "--oidc-client-id=c".into(),
        ],
    );
    assert!(
        err.contains("authentication-config file and oidc-* flags are mutually exclusive"),
        "{err}"
    );
    let err = start_fails(d, &["--oidc-issuer-url=https://i".into()]);
    assert!(
        err.contains("oidc-issuer-url and oidc-client-id must be specified together"),
        "{err}"
    );
    let err = start_fails(
        d,
        &[
            "--oidc-issuer-url=https://i".into(),
            "--oidc-client-id=c".into(),
            "--oidc-signing-algs=HS256".into(),
        ],
    );
    assert!(
        err.contains("oidc: unsupported signing alg: \"HS256\""),
        "{err}"
    );
}

#[test]
fn bad_authorization_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let err = start_fails(d, &["--authorization-mode=Node,Webhook".into()]);
    assert!(
        err.contains("authorization-mode Webhook's authorization config file not passed"),
        "{err}"
    );
    let kubeconfig = file(d, "hook.kubeconfig", "clusters: []\n");
    let err = start_fails(
        d,
        &[format!("--authorization-webhook-config-file={kubeconfig}")],
    );
    assert!(
        err.contains("cannot specify --authorization-webhook-config-file without mode Webhook"),
        "{err}"
    );
    let err = start_fails(
        d,
        &[
            "--authorization-mode=Webhook".into(),
            format!("--authorization-webhook-config-file={kubeconfig}"),
        ],
    );
    assert!(
        err.contains("--authorization-webhook-config-file:")
            && err.contains("no configuration has been provided"),
        "{err}"
    );
    let config = file(d, "authz.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- {type: RBAC, name: rbac}\n- {type: RBAC, name: again}\n");
    let err = start_fails(d, &[format!("--authorization-config={config}")]);
    assert!(
        err.contains("authorizers[1].type: Duplicate value: \"RBAC\""),
        "{err}"
    );
    let err = start_fails(
        d,
        &[
            format!("--authorization-config={config}"),
            "--authorization-mode=RBAC".into(),
        ],
    );
    assert!(err.contains("--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"), "{err}");
    let err = start_fails(
        d,
        &["--authentication-token-webhook-config-file=/nonexistent/k".into()],
    );
    assert!(
        err.contains("--authentication-token-webhook-config-file: /nonexistent/k"),
        "{err}"
    );
}
