use super::*;

fn errors(yaml: &str) -> Vec<String> {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\n{yaml}"
    );
    let c = AuthenticationConfiguration::parse(&text).expect("decodes");
    let sa = vec!["https://kubernetes.default.svc.cluster.local".to_string()];
    validate(&c, &sa)
        .1
        .iter()
        .map(ToString::to_string)
        .collect()
}

const GOOD: &str = "jwt:\n- issuer: {url: \"https://issuer.example\", audiences: [a]}\n  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n";

#[test]
fn a_minimal_authenticator_is_valid() {
    assert!(errors(GOOD).is_empty());
    assert!(errors("anonymous: {enabled: true, conditions: [{path: /livez}]}\n").is_empty());
}

#[test]
fn issuer_rules() {
    assert_eq!(
        errors("jwt:\n- claimMappings: {username: {claim: sub, prefix: \"\"}}\n"),
        vec![
            "jwt[0].issuer.url: Required value",
            "jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required",
        ]
    );
    let e = errors(
        "jwt:\n- issuer: {url: \"http://i?x=1#f\", audiences: [a, a]}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n",
    );
    assert_eq!(
        e,
        vec![
            "jwt[0].issuer.url: Invalid value: \"http://i?x=1#f\": URL scheme must be https",
            "jwt[0].issuer.url: Invalid value: \"http://i?x=1#f\": URL must not contain a query",
            "jwt[0].issuer.url: Invalid value: \"http://i?x=1#f\": URL must not contain a fragment",
            "jwt[0].issuer.audiences[1]: Duplicate value: \"a\"",
            "jwt[0].issuer.audienceMatchPolicy: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences",
        ]
    );
    let e = errors(
        "jwt:\n- issuer: {url: \"https://kubernetes.default.svc.cluster.local\", discoveryURL: \"https://kubernetes.default.svc.cluster.local/\", audiences: [a], certificateAuthority: nope}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n",
    );
    assert_eq!(
        e,
        vec![
            "jwt[0].issuer.url: Invalid value: \"https://kubernetes.default.svc.cluster.local\": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc.cluster.local]",
            "jwt[0].issuer.discoveryURL: Invalid value: \"https://kubernetes.default.svc.cluster.local/\": discoveryURL must be different from URL",
            "jwt[0].issuer.certificateAuthority: Invalid value: \"<omitted>\": data does not contain any valid RSA or ECDSA certificates",
        ]
    );
    let twice = format!("{GOOD}{}", &GOOD[5..]);
    assert_eq!(
        errors(&twice),
        vec!["jwt[1].issuer.url: Duplicate value: \"https://issuer.example\""]
    );
}

#[test]
fn mapping_rules() {
    let base = "jwt:\n- issuer: {url: \"https://i\", audiences: [a]}\n";
    assert_eq!(
        errors(&format!("{base}  claimMappings: {{username: {{claim: sub}}}}\n")),
        vec!["jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing"]
    );
    assert_eq!(
        errors(&format!("{base}  claimMappings: {{}}\n")),
        vec!["jwt[0].claimMappings.username: Required value: claim or expression is required"]
    );
    assert_eq!(
        errors(&format!(
            "{base}  claimMappings: {{username: {{expression: \"claims.email\"}}}}\n"
        )),
        vec!["jwt[0].claimMappings.username.expression: Invalid value: \"claims.email\": claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"]
    );
    assert!(errors(&format!(
        "{base}  claimMappings: {{username: {{expression: \"claims.email\"}}}}\n  claimValidationRules: [{{expression: \"claims.email_verified == true\"}}]\n"
    ))
    .is_empty());
    let e = errors(&format!(
        "{base}  claimMappings:\n    username: {{expression: \"foo.bar\", prefix: x}}\n    uid: {{claim: sub, expression: claims.sub}}\n    extra:\n    - {{key: Example.com/x, valueExpression: claims.x}}\n    - {{key: kubernetes.io/x, valueExpression: claims.x}}\n    - {{key: nodomain, valueExpression: claims.x}}\n    - {{key: a.io/x}}\n"
    ));
    for want in [
        "jwt[0].claimMappings.username.prefix: Invalid value: \"x\": may not be specified when expression is set",
        "jwt[0].claimMappings.username.expression: Invalid value: \"foo.bar\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')",
        "jwt[0].claimMappings.uid: Invalid value: \"\": claim and expression can't both be set",
        "jwt[0].claimMappings.extra[0].key: Invalid value: \"Example.com/x\": must be lowercase",
        "jwt[0].claimMappings.extra[1].key: Invalid value: \"kubernetes.io/x\": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
        "jwt[0].claimMappings.extra[2].key: Invalid value: \"nodomain\": must be a domain-prefixed path (such as \"acme.io/foo\")",
        "jwt[0].claimMappings.extra[3].valueExpression: Required value",
    ] {
        assert!(e.iter().any(|l| l == want), "{want}\n{e:#?}");
    }
    assert!(
        e.iter()
            .any(|l| l
                .starts_with("jwt[0].claimMappings.extra[0].key: Invalid value: \"Example.com\"")),
        "{e:?}"
    );
}

#[test]
fn rule_lists_and_anonymous() {
    let base = "jwt:\n- issuer: {url: \"https://i\", audiences: [a]}\n  claimMappings: {username: {claim: sub, prefix: \"\"}}\n";
    let e = errors(&format!(
        "{base}  claimValidationRules:\n  - {{claim: hd, expression: x}}\n  - {{}}\n  - {{claim: hd, message: m}}\n  - {{claim: hd}}\n  - {{expression: \"claims.a\", requiredValue: v}}\n  - {{expression: \"claims.a\"}}\n  userValidationRules:\n  - {{}}\n  - {{expression: \"claims.x\"}}\n"
    ));
    assert_eq!(
        e,
        vec![
            "jwt[0].claimValidationRules[0]: Invalid value: \"hd\": claim and expression can't both be set",
            "jwt[0].claimValidationRules[1]: Required value: claim or expression is required",
            "jwt[0].claimValidationRules[2].message: Invalid value: \"m\": may not be specified when claim is set",
            "jwt[0].claimValidationRules[3].claim: Duplicate value: \"hd\"",
            "jwt[0].claimValidationRules[4].requiredValue: Invalid value: \"v\": may not be specified when expression is set",
            "jwt[0].claimValidationRules[5].expression: Duplicate value: \"claims.a\"",
            "jwt[0].userValidationRules[0].expression: Required value",
            "jwt[0].userValidationRules[1].expression: Invalid value: \"claims.x\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'claims' (in container '')",
        ]
    );
    assert_eq!(
        errors("anonymous: {enabled: false, conditions: [{path: /livez}]}\n"),
        vec!["anonymous.conditions: Invalid value: []string{\"/livez\"}: enabled should be set to true when conditions are defined"]
    );
}
