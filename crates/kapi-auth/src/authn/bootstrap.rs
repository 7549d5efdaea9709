//! Bootstrap tokens (`--enable-bootstrap-token-auth`, upstream's
//! `plugin/pkg/auth/authenticator/token/bootstrap` and
//! `k8s.io/cluster-bootstrap`): a bearer token `<id>.<secret>` (6 and 16
//! characters of `[a-z0-9]`) authenticates when the Secret
//! `kube-system/bootstrap-token-<id>` exists, is not being deleted, has type
//! `bootstrap.kubernetes.io/token`, holds the same `token-id` and
//! `token-secret`, has not expired (`expiration`, RFC 3339; unparsable means
//! expired) and says `usage-bootstrap-authentication: "true"`. The user is
//! `system:bootstrap:<id>` in `system:bootstrappers` plus the groups of
//! `auth-extra-groups` (comma-separated, each `system:bootstrappers:...`),
//! sorted and without repeats; an invalid extra group refuses the token.
//!
//! Also here, for the controllers that keep these Secrets (kapi-controllers'
//! bootstrap signer and token cleaner): the Secret's fields, its expiry, and
//! the detached JWS (`HS256`, key the token secret, `kid` the token id)
//! `kubeadm join` checks `kube-public/cluster-info` with.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::Value;

use kapi_http::user::{UserDetails, UserInfo};
use kapi_registry::apis::Apis;

pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const SECRET_PREFIX: &str = "bootstrap-token-";
pub const NAMESPACE: &str = "kube-system";
pub const USER_PREFIX: &str = "system:bootstrap:";
pub const DEFAULT_GROUP: &str = "system:bootstrappers";
/// The ConfigMap data key prefix of the signatures (`jws-kubeconfig-<id>`).
pub const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";

/// `(id, secret)` of a well-formed bootstrap token.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// The token id of a `bootstrap-token-<id>` Secret name.
pub fn id_of_secret_name(name: &str) -> Option<&str> {
    let id = name.strip_prefix(SECRET_PREFIX)?;
    let ok = id.len() == 6
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    ok.then_some(id)
}

/// A Secret's `data[key]`, decoded ("" when absent or not base64).
pub fn data(secret: &Value, key: &str) -> String {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

/// Seconds until the Secret's `expiration` (`None`: it never expires;
/// `Some(0)`: expired, or an unparsable time, which counts as expired).
pub fn seconds_left(secret: &Value, now: i64) -> Option<i64> {
    let exp = data(secret, "expiration");
    if exp.is_empty() {
        return None;
    }
    let parsed = time::OffsetDateTime::parse(&exp, &time::format_description::well_known::Rfc3339);
    match parsed {
        Ok(t) => Some((t.unix_timestamp() - now).max(0)),
        Err(_) => Some(0),
    }
}

/// The user's groups: `system:bootstrappers` and the valid extra groups,
/// sorted; an invalid extra group is an error.
pub fn groups(secret: &Value) -> Result<Vec<String>, String> {
    let mut groups = vec![DEFAULT_GROUP.to_string()];
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for g in extra.split(',') {
            if !valid_group(g) {
                return Err(format!(
                    "{g:?} is not a valid bootstrap group name (must match ^system:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9]$)"
                ));
            }
            groups.push(g.to_string());
        }
    }
    groups.sort();
    groups.dedup();
    Ok(groups)
}

fn valid_group(g: &str) -> bool {
    let Some(rest) = g.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(|b| ok(b) || b == b':' || b == b'-')
        && rest.bytes().last().is_some_and(ok)
}

/// The user `token` authenticates as, or why not (for the log).
pub async fn authenticate(apis: &Apis, token: &str) -> Option<Result<UserInfo, String>> {
    let (id, secret_part) = parse_token(token)?;
    let name = format!("{SECRET_PREFIX}{id}");
    let secret = super::serviceaccount::lookup(apis, "secrets", NAMESPACE, &name).await?;
    Some(check(
        &secret,
        id,
        secret_part,
        super::serviceaccount::now(),
    ))
}

fn check(secret: &Value, id: &str, secret_part: &str, now: i64) -> Result<UserInfo, String> {
    let name = format!("{NAMESPACE}/{SECRET_PREFIX}{id}");
    let bad = |why: &str| {
        Err(format!(
            "bootstrap secret {name} matching bearer token {why}"
        ))
    };
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return bad("is deleted and awaiting removal");
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return bad("has invalid type");
    }
    let stored = data(secret, "token-secret");
    if !same_secret(stored.as_bytes(), secret_part.as_bytes()) {
        return bad("has invalid value for key token-secret");
    }
    if data(secret, "token-id") != id {
        return bad("has invalid value for key token-id");
    }
    if seconds_left(secret, now) == Some(0) {
        return bad("has expired");
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return bad("not marked usage-bootstrap-authentication=true");
    }
    let groups = groups(secret).map_err(|e| format!("bootstrap secret {name}: {e}"))?;
    Ok(UserInfo::from(UserDetails {
        name: format!("{USER_PREFIX}{id}"),
        groups,
        ..Default::default()
    }))
}

/// Compare secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The detached JWS of `content` with the token `(id, secret)`, as
/// `kubeadm join` recomputes it: `<header>..<signature>`, the header
/// `{"alg":"HS256","kid":"<id>"}`, the key the secret zero-padded to 32 bytes
/// (HMAC pads short keys with zeros anyway).
pub fn detached_signature(content: &str, id: &str, secret: &str) -> String {
    let header = format!("{{\"alg\":\"HS256\",\"kid\":{}}}", Value::from(id));
    let header = URL_SAFE_NO_PAD.encode(header);
    let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(content));
    let mut key = secret.as_bytes().to_vec();
    if key.len() < 32 {
        key.resize(32, 0);
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let tag = ring::hmac::sign(&key, signing_input.as_bytes());
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(fields: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v))))
            .collect();
        json!({"type": SECRET_TYPE, "metadata": {"name": "bootstrap-token-abcdef"}, "data": data})
    }

    #[test]
    fn signatures_match_upstreams_vectors() {
        // cluster-bootstrap's own test vectors.
        let content = "Hello from the other side. I must have called a thousand times.";
        assert_eq!(
            detached_signature(content, "joshua", "my voice is my passcode"),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
        );
        assert_eq!(
            detached_signature("", "joshua", "my voice is my passcode"),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"
        );
        assert_eq!(
            detached_signature(content, "joshua", ""),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"
        );
    }

    #[test]
    fn token_forms() {
        assert_eq!(
            parse_token("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        for bad in [
            "abcdef.0123456789abcde",
            "ABCDEF.0123456789abcdef",
            "abcdef0123456789abcdef",
            "abc.def",
        ] {
            assert_eq!(parse_token(bad), None, "{bad}");
        }
        assert_eq!(id_of_secret_name("bootstrap-token-abcdef"), Some("abcdef"));
        assert_eq!(id_of_secret_name("bootstrap-token-abc"), None);
    }

    #[test]
    fn secret_rules() {
        let now = 1_700_000_000;
        let good = [
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
            (
                "auth-extra-groups",
                "system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:a",
            ),
            ("expiration", "2099-01-01T00:00:00Z"),
        ];
        let u = check(&secret(&good), "abcdef", "0123456789abcdef", now).unwrap();
        assert_eq!(u.name, "system:bootstrap:abcdef");
        assert_eq!(
            u.groups,
            vec![
                "system:bootstrappers",
                "system:bootstrappers:a",
                "system:bootstrappers:kubeadm:default-node-token"
            ]
        );
        assert!(check(&secret(&good), "abcdef", "0123456789abcdee", now).is_err());
        let with = |k: &str, v: &str| {
            let mut f: Vec<(&str, &str)> = good.iter().filter(|(n, _)| *n != k).copied().collect();
            f.push((k, v));
            secret(&f)
        };
        for (k, v) in [
            ("expiration", "2000-01-01T00:00:00Z"),
            ("expiration", "tomorrow"),
            ("usage-bootstrap-authentication", "false"),
            ("auth-extra-groups", "system:masters"),
            ("token-id", "zzzzzz"),
        ] {
            assert!(
                check(&with(k, v), "abcdef", "0123456789abcdef", now).is_err(),
                "{k}={v}"
            );
        }
        let mut deleting = secret(&good);
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        assert!(check(&deleting, "abcdef", "0123456789abcdef", now).is_err());
        let mut wrong_type = secret(&good);
        wrong_type["type"] = json!("Opaque");
        assert!(check(&wrong_type, "abcdef", "0123456789abcdef", now).is_err());
        assert_eq!(seconds_left(&secret(&good), now), Some(4_070_908_800 - now));
        assert_eq!(seconds_left(&secret(&good[..2]), now), None);
    }
}
