use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

const ISSUER: &str = "https://issuer.example";

struct Key(EcdsaKeyPair);

impl Key {
    fn new() -> Key {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Key(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap())
    }

    fn jwk(&self, kid: &str) -> jose::Jwk {
        let p = self.0.public_key().as_ref();
        let v = json!({"kty": "EC", "crv": "P-256", "kid": kid,
            "x": B64.encode(&p[1..33]), "y": B64.encode(&p[33..])});
        jose::Jwk::parse(&v).unwrap().unwrap()
    }

    fn sign(&self, kid: &str, claims: Value) -> String {
        let header = json!({"alg": "ES256", "kid": kid});
        let msg = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = self.0.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
        format!("{msg}.{}", B64.encode(sig.as_ref()))
    }
}

fn authenticator(yaml: &str, key: &Key) -> JwtAuthenticator {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {{url: \"{ISSUER}\", audiences: [kapi, other], audienceMatchPolicy: MatchAny}}\n{yaml}"
    );
    let c = config::AuthenticationConfiguration::parse(&text).unwrap();
    let (mut compiled, errs) = validate::validate(&c, &[]);
    assert!(errs.is_empty(), "{errs:?}");
    let provider = Provider::with_keys(ISSUER, vec![key.jwk("k1")]);
    JwtAuthenticator::with_provider(
        c.jwt[0].clone(),
        compiled.remove(0),
        vec!["ES256".into()],
        provider,
    )
}

fn claims(extra: Value) -> Value {
    let now = crate::authn::serviceaccount::now();
    let mut c = json!({"iss": ISSUER, "aud": "kapi", "sub": "u1", "exp": now + 600, "iat": now});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

async fn run(a: &JwtAuthenticator, token: &str) -> Result<UserInfo, String> {
    let parsed = jose::parse(token).unwrap();
    assert!(a.claims_issuer(&parsed));
    a.authenticate(&parsed).await
}

#[tokio::test]
async fn claim_mappings() {
    let key = Key::new();
    let a = authenticator(
        "  claimMappings:\n    username: {claim: sub, prefix: \"oidc:\"}\n    groups: {claim: roles, prefix: \"r:\"}\n    uid: {claim: oid}\n    extra: [{key: example.com/tenant, valueExpression: claims.tenant}]\n",
        &key,
    );
    let t = key.sign(
        "k1",
        claims(json!({"roles": ["a", "b"], "oid": "x-1", "tenant": "t1"})),
    );
    let u = run(&a, &t).await.unwrap();
    assert_eq!(u.name, "oidc:u1");
    assert_eq!(u.groups, vec!["r:a", "r:b"]);
    assert_eq!(u.uid, "x-1");
    assert_eq!(u.extra["example.com/tenant"], vec!["t1"]);
    // A single string is one group; no groups claim means no groups.
    let t = key.sign(
        "k1",
        claims(json!({"roles": "solo", "oid": "x", "tenant": ""})),
    );
    let u = run(&a, &t).await.unwrap();
    assert_eq!(u.groups, vec!["r:solo"]);
    assert!(u.extra.is_empty());
    let t = key.sign("k1", claims(json!({"oid": "x", "tenant": "t"})));
    assert!(run(&a, &t).await.unwrap().groups.is_empty());
    // The uid claim must be there and a string.
    let t = key.sign("k1", claims(json!({"tenant": "t"})));
    let e = run(&a, &t).await.unwrap_err();
    assert_eq!(e, "oidc: parse uid claim \"oid\": claim not present");
}

#[tokio::test]
async fn expression_mappings_and_rules() {
    let key = Key::new();
    let a = authenticator(
        "  claimMappings:\n    username: {expression: \"'user:' + claims.sub\"}\n    groups: {expression: \"claims.roles.map(r, 'g:' + r)\"}\n    uid: {expression: \"claims.sub + '-uid'\"}\n  claimValidationRules:\n  - {claim: hd, requiredValue: example.com}\n  - {expression: \"claims.exp - claims.iat <= 3600\", message: lifetime too long}\n  userValidationRules:\n  - {expression: \"!user.username.startsWith('user:system')\", message: no system users}\n",
        &key,
    );
    let ok = json!({"roles": ["x"], "hd": "example.com"});
    let u = run(&a, &key.sign("k1", claims(ok.clone()))).await.unwrap();
    assert_eq!((u.name.as_str(), u.uid.as_str()), ("user:u1", "u1-uid"));
    assert_eq!(u.groups, vec!["g:x"]);
    let e = run(
        &a,
        &key.sign("k1", claims(json!({"roles": [], "hd": "evil.com"}))),
    )
    .await
    .unwrap_err();
    assert_eq!(
        e,
        "oidc: required claim hd value does not match. Got = evil.com, want = example.com"
    );
    let e = run(&a, &key.sign("k1", claims(json!({"roles": []}))))
        .await
        .unwrap_err();
    assert_eq!(e, "oidc: required claim hd not present in ID token");
    let mut long = claims(ok.clone());
    long["iat"] = json!(long["exp"].as_i64().unwrap() - 7200);
    let e = run(&a, &key.sign("k1", long)).await.unwrap_err();
    assert_eq!(e, "oidc: error evaluating claim validation expression: validation expression 'claims.exp - claims.iat <= 3600' failed: lifetime too long");
    let mut system = claims(ok.clone());
    system["sub"] = json!("system:x");
    let e = run(&a, &key.sign("k1", system)).await.unwrap_err();
    assert_eq!(e, "oidc: error evaluating user info validation rule: validation expression '!user.username.startsWith('user:system')' failed: no system users");
    // A username expression that is not a string.
    let b = authenticator(
        "  claimMappings:\n    username: {expression: \"claims.n\"}\n",
        &key,
    );
    let e = run(&b, &key.sign("k1", claims(json!({"n": 1}))))
        .await
        .unwrap_err();
    assert_eq!(e, "oidc: error evaluating username claim expression: username claim expression must return a string");
}

#[tokio::test]
async fn email_rules() {
    let key = Key::new();
    let a = authenticator(
        "  claimMappings:\n    username: {claim: email, prefix: \"\"}\n",
        &key,
    );
    let t = key.sign("k1", claims(json!({"email": "a@example.com"})));
    assert_eq!(run(&a, &t).await.unwrap().name, "a@example.com");
    let t = key.sign(
        "k1",
        claims(json!({"email": "a@example.com", "email_verified": false})),
    );
    assert_eq!(run(&a, &t).await.unwrap_err(), "oidc: email not verified");
}

#[tokio::test]
async fn verification_failures() {
    let key = Key::new();
    let a = authenticator(
        "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n",
        &key,
    );
    let good = claims(json!({}));
    assert_eq!(
        run(&a, &key.sign("k1", good.clone())).await.unwrap().name,
        "u1"
    );
    // Any configured audience will do (MatchAny).
    let mut aud = good.clone();
    aud["aud"] = json!(["x", "other"]);
    assert!(run(&a, &key.sign("k1", aud)).await.is_ok());
    let mut wrong = good.clone();
    wrong["aud"] = json!("nope");
    let e = run(&a, &key.sign("k1", wrong)).await.unwrap_err();
    assert!(
        e.starts_with("oidc: verify token: oidc: expected audience in"),
        "{e}"
    );
    let mut expired = good.clone();
    expired["exp"] = json!(crate::authn::serviceaccount::now() - 10);
    let e = run(&a, &key.sign("k1", expired)).await.unwrap_err();
    assert!(e.contains("oidc: token is expired"), "{e}");
    let mut future = good.clone();
    future["nbf"] = json!(crate::authn::serviceaccount::now() + 3600);
    let e = run(&a, &key.sign("k1", future)).await.unwrap_err();
    assert!(e.contains("before the nbf (not before) time"), "{e}");
    // Another key: the key set is fetched again (here: unreachable), then refused.
    let other = Key::new();
    let e = run(&a, &other.sign("k1", good.clone())).await.unwrap_err();
    assert!(e.contains("failed to verify signature"), "{e}");
    // Tampered payload.
    let t = key.sign("k1", good);
    let mut parts: Vec<&str> = t.split('.').collect();
    let forged = B64.encode(claims(json!({"sub": "admin"})).to_string());
    parts[1] = &forged;
    let e = run(&a, &parts.join(".")).await.unwrap_err();
    assert!(e.contains("failed to verify signature"), "{e}");
}
