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

/// `--authorization-mode=ABAC,RBAC` with `--authorization-policy-file`, seen
/// by kubectl as a user the policy file names: what a read-only policy lets
/// through, what it does not, and `kubectl auth can-i`.
#[test]
fn abac_policies_authorize_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = file(
        d,
        "abac.jsonl",
        "{\"apiVersion\": \"abac.authorization.kubernetes.io/v1beta1\", \"kind\": \"Policy\", \"spec\": {\"user\": \"bob\", \"namespace\": \"default\", \"resource\": \"configmaps\", \"apiGroup\": \"\", \"readonly\": true}}\n",
    );
    let tokens = file(d, "tokens.csv", "bob-token,bob,uid-bob\n");
    let args: Vec<String> = vec![
        format!("--cert-dir={}", d.join("certs").display()),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
        "--authorization-mode=ABAC,RBAC".into(),
        format!("--authorization-policy-file={policy}"),
        format!("--token-auth-file={tokens}"),
    ];
    let server = crate::proc::Server::start(d, &args);
    let admin = d.join("certs/kapi-data/admin.kubeconfig");
    crate::proc::kubectl_get_ns(&admin, &server);
    let server_url = format!("https://127.0.0.1:{}", server.port());
    let bob = |args: &[&str]| {
        let out = std::process::Command::new("kubectl")
            .args([
                "--server",
                &server_url,
                "--insecure-skip-tls-verify",
                "--token",
                "bob-token",
            ])
            .args(args)
            .output()
            .expect("kubectl runs");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    // Reading is allowed (the root CA publisher's ConfigMap shows up).
    let mut listed = String::new();
    for _ in 0..50 {
        listed = bob(&["-n", "default", "get", "configmaps", "-o", "name"]);
        if listed.contains("configmap/kube-root-ca.crt") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(listed.contains("configmap/kube-root-ca.crt"), "{listed}");
    let create = bob(&["-n", "default", "create", "configmap", "c1"]);
    assert!(
        create.contains("User \"bob\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{create}"
    );
    assert_eq!(
        bob(&["auth", "can-i", "list", "configmaps", "-n", "default"]).trim(),
        "yes"
    );
    assert!(bob(&["auth", "can-i", "list", "secrets", "-n", "default"]).starts_with("no"));

    drop(server);
    // Upstream's checks of the two flags together (in a directory of their own).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let err = start_fails(d, &["--authorization-mode=ABAC".into()]);
    assert!(
        err.contains("authorization-mode ABAC's authorization policy file not passed"),
        "{err}"
    );
    let err = start_fails(d, &[format!("--authorization-policy-file={policy}")]);
    assert!(
        err.contains("cannot specify --authorization-policy-file without mode ABAC"),
        "{err}"
    );
    let bad = file(
        d,
        "bad.jsonl",
        "# one comment\n{\"user\": \"x\", \"nope\": 1\n",
    );
    let err = start_fails(
        d,
        &[
            "--authorization-mode=ABAC".into(),
            format!("--authorization-policy-file={bad}"),
        ],
    );
    assert!(
        err.contains(&format!("error reading policy file {bad}, line 2:")),
        "{err}"
    );
}
