use super::*;

fn errors(body: &str) -> Result<Vec<Validated>, String> {
    parse(&format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n{body}"
    ))
}

#[test]
fn chains_validate_with_defaults() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().display();
    let ok = errors(&format!(
        "authorizers:\n- {{type: Node, name: node}}\n- {{type: RBAC, name: rbac}}\n- type: Webhook\n  name: hook\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {path}}}\n    matchConditions: [{{expression: \"has(request.resourceAttributes)\"}}]\n"
    ))
    .unwrap();
    assert!(matches!(ok[0], Validated::Node));
    assert!(matches!(ok[1], Validated::Rbac));
    let Validated::Webhook(w) = &ok[2] else {
        panic!("{ok:?}")
    };
    assert_eq!(w.settings.authorized_ttl, Duration::from_secs(300));
    assert_eq!(w.settings.unauthorized_ttl, Duration::from_secs(30));
    assert_eq!(w.settings.failure, crate::authz::Verdict::Deny);
    assert_eq!(w.settings.match_conditions.len(), 1);
    assert!(w.settings.cache_authorized && w.settings.cache_unauthorized);
}

#[test]
fn field_errors_as_upstream() {
    assert_eq!(
        errors("authorizers: []\n").unwrap_err(),
        "authorizers: Required value: at least one authorization mode must be defined"
    );
    let e = errors("authorizers:\n- {type: RBAC, name: a}\n- {type: RBAC, name: b}\n- {type: Foo, name: c}\n- {type: Node}\n- {type: AlwaysAllow, name: Bad_Name}\n").unwrap_err();
    for want in [
        "authorizers[1].type: Duplicate value: \"RBAC\"",
        "authorizers[2].type: Unsupported value: \"Foo\": supported values: \"ABAC\", \"AlwaysAllow\", \"AlwaysDeny\", \"Node\", \"RBAC\", \"Webhook\"",
        "authorizers[3].name: Required value",
        "authorizers[4].name: Invalid value: \"Bad_Name\": authorizer name is invalid: ",
    ] {
        assert!(e.contains(want), "{want}\n{e}");
    }
    let e = errors("authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 45s\n    subjectAccessReviewVersion: v2\n    failurePolicy: Maybe\n    connectionInfo: {type: KubeConfigFile, kubeConfigFile: relative.yaml}\n    matchConditions: [{expression: \"foo == 1\"}]\n").unwrap_err();
    for want in [
        "authorizers[0].webhook.timeout: Invalid value: \"45s\": must be > 0s and <= 30s",
        "authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: \"v2\": supported values: \"v1\", \"v1beta1\"",
        "authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified",
        "authorizers[0].webhook.failurePolicy: Unsupported value: \"Maybe\": supported values: \"NoOpinion\", \"Deny\"",
        "authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"relative.yaml\": must be an absolute path",
        "authorizers[0].webhook.matchConditions[0].expression: Invalid value: \"foo == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')",
    ] {
        assert!(e.contains(want), "{want}\n{e}");
    }
    let e =
        errors("authorizers:\n- {type: Webhook, name: w}\n- {type: RBAC, name: r, webhook: {}}\n")
            .unwrap_err();
    assert!(
        e.contains("authorizers[0].webhook: Required value: required when type=Webhook"),
        "{e}"
    );
    assert!(e.contains("authorizers[1].webhook: Invalid value: \"non-null\": may only be specified when type=Webhook"), "{e}");
    let e = errors("authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    subjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo: {type: KubeConfigFile, kubeConfigFile: /nonexistent/kubeconfig}\n").unwrap_err();
    assert!(
        e.contains("authorizers[0].webhook.timeout: Required value"),
        "{e}"
    );
    assert!(e.contains("authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"/nonexistent/kubeconfig\": error loading file: "), "{e}");
    let e = errors("authorizers:\n- {type: RBAC, name: r, extra: 1}\n").unwrap_err();
    assert_eq!(
        e,
        "strict decoding error: unknown field \"authorizers[0].extra\""
    );
}
