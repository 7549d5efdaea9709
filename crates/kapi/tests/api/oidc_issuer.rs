//! A test OpenID Connect issuer: the discovery document at
//! `/.well-known/openid-configuration` (and at `/custom/discovery`, for the
//! `discoveryURL` override) and the key set at `/keys`, over HTTPS on
//! loopback with a CA of its own (`https_fixture.rs`), and ID tokens signed
//! with its keys: ES256 keys it generates (`kid` `es-<n>`), and one fixed RSA
//! key for RS256 (`kid` `rsa-1`; ring cannot generate RSA keys, so this test
//! key is written here). Keys can be rotated in and out while it runs.

use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value};

use super::https_fixture::{Handler, HttpsServer, Recorded};

/// A 2048-bit RSA test key (PKCS#8), used for nothing but these tests.
const RSA_TEST_KEY: &str = r"-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDtw9a2OFviGNb4
nDrN7XiTPfyXQ+BsfwMMU+uFGpt+OIc3OuGhHIZQHyuQmL4wl+Hh8KvxZ3EZKnv1
Z6HM/SndqMvMgGw7tBs/QmA+aIJb4hUIsp+JfVjsZ2Gx9W5KWwrChV7SMd5zq9QT
DAlaesr070cKF67X1Uc+o0y5q5qa1HTHBQ3Lmw5I2SjKbjwPl6S+ya+8Lt8bIJHj
/O6TEJ2GC2wRZ2aFDeGPdVhbYM4UV7JIrLgCS2SernuEEdQyoUtdIfCvqhWcXZi1
LzJFFF4xQ1QuMn3Lflp3EHWs1TLxSC3BUkTcprqDUgvbk9sOL2HaEINCEBzSWXjD
sFr22i4DAgMBAAECggEAYK7djQx+5II4TDDvQpS5jppKr9H0nPnK6gToBSCMMTfY
WA+T91krjsIWC37o+8aPHjqpGIl5NoQNkv14kGwzzYRZlwdzu5Vh7QfXLhl+RNG6
vuYvtI9pjPv/AIfuOMMrrWzhYXTQ4dVx7+rZlNbQ1+fCyepWeUKrbV+nD+sle6Z3
TSZS4jHMJREUiqOdAApdsO8KjR3RR/FImHpVGtWSizFOWVoHnL15cTJMnXOXqjRY
h3WWAlYpjb29BF5ApGbkVXHt+kTRieAspiF8qeuPynwpirZaS9fTwT31vWS/B+iD
9NyBAournhwg4QDBbp8dfU3KzIh84oqTenn9FnCSeQKBgQD4ZfrvVJNKm+l7XNak
v/PuFJAdc8hMZv7vr1Btozpxvyia/mTnd4z291JRXfL78Wi59+ayjmQoFI2ZXL+t
BLY0/VX1CMSndZRLDOPlrWFFjtGE1GVnWSYMvQeIxRo2wCArkesvRV+IJVt/DCOd
ZWc00JhnwemBLRa1o4WuAtJ1qwKBgQD1Co3JLSDS2YzMykkY+8YlCYBoVf1pDHla
JHgJ57BZCyJz1I+lJfXIkUpD/J/4A/3qOtxXcTiz6WeSpaFJ53xF41E9oU6v5PU6
NiguUwrCns3lA5FCohsO9sq6+AcGCqstbvKthtNm+P14reWsGk/qQDKcSZ5ZkHf0
zbPmOdshCQKBgE6xMBAGASuPvSYBwVYsIYD5LrbF6Vya/IS+S4KQRYGnh5uioCDc
NOJAc+mnE8VRM1ZG/OTwSzaPXFSLl4WeioK7BzI7duF+VF56VPB8PuakWif0ibN2
AKHkeLCRkL5rm0VyUsmE9sDQ5O2Y0OeaKloHA2FLg0gTGrCsfzsjVb1FAoGADvp0
LEXr6beOmb4LtdE+DWmFRdtrwA4ZJN9xzvkwmGDL3FSz6x5k5bur1HgOtzRXQwgS
C+5JzwWHZTlmoIPb3tHEV4YSr0HJk6NX1W0SDU9zunn7WR1blhCT19XtZ/si94X+
o4jIR1UU+Vl33otFM0Z1UYRWf5cLHhWs13fV4zECgYBbpUlM6IYyFQSb3XgiXEmm
kVbCP0gfnik83DqTGFFaz5I33fW1D8+AfvDKnWt6748I3H+YBF6qy2APTPkEVvd5
yIbo5yjgtdLZsljPSRteNIZf9yLmrZD46HGuLOni9DpOy+kNQTHODRCZipJieB8n
+l5mUKZ328f4KC2VyrQtyQ==
-----END PRIVATE KEY-----";

enum Key {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl Key {
    fn jwk(&self, kid: &str) -> Value {
        match self {
            Key::Ec(k) => {
                let p = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                    "x": B64.encode(&p[1..33]), "y": B64.encode(&p[33..])})
            }
            Key::Rsa(k) => {
                let parts = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(k.public());
                let (n, e) = (parts.n, parts.e);
                json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                    "n": B64.encode(n), "e": B64.encode(e)})
            }
        }
    }

    fn alg(&self) -> &'static str {
        match self {
            Key::Ec(_) => "ES256",
            Key::Rsa(_) => "RS256",
        }
    }

    fn sign(&self, msg: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self {
            Key::Ec(k) => k.sign(&rng, msg).unwrap().as_ref().to_vec(),
            Key::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, msg, &mut sig)
                    .unwrap();
                sig
            }
        }
    }
}

fn ec_key() -> Key {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    Key::Ec(EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng).unwrap())
}

/// The keys served, by kid, and the issuer URL.
type Keys = Arc<Mutex<Vec<(String, Arc<Key>)>>>;

pub struct OidcIssuer {
    pub server: HttpsServer,
    pub url: String,
    keys: Keys,
    next: Mutex<u32>,
}

fn handler(url: String, keys: Keys) -> Handler {
    Arc::new(move |r: &Recorded| match r.path.as_str() {
        "/.well-known/openid-configuration" | "/custom/discovery" => {
            let doc = json!({"issuer": url, "jwks_uri": format!("{url}/keys"),
                "id_token_signing_alg_values_supported": ["RS256", "ES256"]});
            (200, doc.to_string())
        }
        "/keys" => {
            let keys = keys.lock().unwrap();
            let set: Vec<Value> = keys.iter().map(|(kid, k)| k.jwk(kid)).collect();
            (200, json!({ "keys": set }).to_string())
        }
        _ => (404, "{}".into()),
    })
}

impl OidcIssuer {
    /// An issuer with one ES256 key (`es-1`) and the RSA key (`rsa-1`).
    pub async fn start() -> OidcIssuer {
        let keys: Keys = Arc::default();
        let server = HttpsServer::start(Arc::new(|_: &Recorded| (503, String::new()))).await;
        let url = format!("https://127.0.0.1:{}", server.port);
        server.set_handler(handler(url.clone(), keys.clone()));
        let rsa = RsaKeyPair::from_pkcs8(&pem_der(RSA_TEST_KEY)).unwrap();
        keys.lock()
            .unwrap()
            .push(("rsa-1".into(), Arc::new(Key::Rsa(rsa))));
        let issuer = OidcIssuer {
            server,
            url,
            keys,
            next: Mutex::new(0),
        };
        issuer.add_key();
        issuer
    }

    /// Add a new ES256 key; returns its kid. Tokens are signed with it now.
    pub fn add_key(&self) -> String {
        let mut n = self.next.lock().unwrap();
        *n += 1;
        let kid = format!("es-{n}");
        self.keys
            .lock()
            .unwrap()
            .push((kid.clone(), Arc::new(ec_key())));
        kid
    }

    /// Stop serving the key `kid`.
    pub fn remove_key(&self, kid: &str) {
        self.keys.lock().unwrap().retain(|(k, _)| k != kid);
    }

    /// The number of key set fetches so far.
    pub fn key_fetches(&self) -> usize {
        self.server.calls_to("/keys").len()
    }

    fn key(&self, kid: &str) -> Arc<Key> {
        let keys = self.keys.lock().unwrap();
        keys.iter()
            .find(|(k, _)| k == kid)
            .map(|(_, k)| k.clone())
            .expect("known kid")
    }

    /// The newest ES256 key's id.
    pub fn newest_ec(&self) -> String {
        let keys = self.keys.lock().unwrap();
        keys.iter()
            .rev()
            .find(|(k, _)| k.starts_with("es-"))
            .map(|(k, _)| k.clone())
            .expect("an EC key")
    }

    /// `claims` signed with key `kid`.
    pub fn sign_with(&self, kid: &str, claims: &Value) -> String {
        let key = self.key(kid);
        let header = json!({"alg": key.alg(), "kid": kid, "typ": "JWT"});
        let msg = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = key.sign(msg.as_bytes());
        format!("{msg}.{}", B64.encode(sig))
    }

    /// An ID token of this issuer for `aud`, valid for 10 minutes, with
    /// `extra` claims added (or replacing the standard ones), signed with the
    /// newest ES256 key.
    pub fn token(&self, aud: &str, extra: Value) -> String {
        self.sign_with(&self.newest_ec(), &self.claims(aud, extra))
    }

    pub fn claims(&self, aud: &str, extra: Value) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut c = json!({"iss": self.url, "aud": aud, "sub": "subject-1",
            "iat": now, "exp": now + 600});
        for (k, v) in extra.as_object().expect("claims object") {
            c[k] = v.clone();
        }
        c
    }
}

fn pem_der(pem: &str) -> Vec<u8> {
    use base64::engine::general_purpose::STANDARD;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(body).unwrap()
}
