//! The AES transformers, laid out byte for byte as upstream's `encrypt/aes`:
//!
//! - `aescbc`: a random 16-byte IV, then the PKCS#7-padded plaintext in CBC
//!   mode (no authentication, no authenticated data);
//! - `aesgcm`: a random 12-byte nonce, then the AES-GCM ciphertext and tag, the
//!   value's storage key as authenticated data;
//! - the extended-nonce GCM of KMS v2 DEK seeds: 32 random bytes of *info*,
//!   the key HKDF-SHA256-Expand(seed, info) (expand only: the seed is the
//!   pseudo-random key), then an `aesgcm` value under that key.
//!
//! Keys are 16, 24 or 32 bytes (AES-128/192/256); validation guarantees it.

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{AesGcm, Nonce};
use async_trait::async_trait;

use crate::transformer::{random, Read, TransformError, Transformer};

const BLOCK: usize = 16;
const NONCE: usize = 12;
/// The info bytes in front of an extended-nonce value, and the derived key's size.
pub const SEED_INFO: usize = 32;
/// The size of a DEK seed (and of a KMS v2 AES-GCM DEK).
pub const SEED_SIZE: usize = 32;

fn short() -> TransformError {
    TransformError::new("the stored data was shorter than the required size")
}

/// `aescbc` under one key.
pub enum Cbc {
    A128(Vec<u8>),
    A192(Vec<u8>),
    A256(Vec<u8>),
}

impl Cbc {
    pub fn new(key: &[u8]) -> Result<Self, TransformError> {
        match key.len() {
            16 => Ok(Cbc::A128(key.to_vec())),
            24 => Ok(Cbc::A192(key.to_vec())),
            32 => Ok(Cbc::A256(key.to_vec())),
            n => Err(TransformError(format!("crypto/aes: invalid key size {n}"))),
        }
    }

    fn encrypt(&self, iv: &[u8], buf: &mut [u8]) {
        fn run<C: KeyIvInit + BlockEncryptMut>(key: &[u8], iv: &[u8], buf: &mut [u8]) {
            let len = buf.len();
            C::new_from_slices(key, iv)
                .expect("key and IV sizes checked")
                .encrypt_padded_mut::<NoPadding>(buf, len)
                .expect("whole blocks");
        }
        match self {
            Cbc::A128(k) => run::<cbc::Encryptor<aes::Aes128>>(k, iv, buf),
            Cbc::A192(k) => run::<cbc::Encryptor<aes::Aes192>>(k, iv, buf),
            Cbc::A256(k) => run::<cbc::Encryptor<aes::Aes256>>(k, iv, buf),
        }
    }

    fn decrypt(&self, iv: &[u8], buf: &mut [u8]) {
        fn run<C: KeyIvInit + BlockDecryptMut>(key: &[u8], iv: &[u8], buf: &mut [u8]) {
            C::new_from_slices(key, iv)
                .expect("key and IV sizes checked")
                .decrypt_padded_mut::<NoPadding>(buf)
                .expect("whole blocks");
        }
        match self {
            Cbc::A128(k) => run::<cbc::Decryptor<aes::Aes128>>(k, iv, buf),
            Cbc::A192(k) => run::<cbc::Decryptor<aes::Aes192>>(k, iv, buf),
            Cbc::A256(k) => run::<cbc::Decryptor<aes::Aes256>>(k, iv, buf),
        }
    }
}

#[async_trait]
impl Transformer for Cbc {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Read, TransformError> {
        if data.len() < BLOCK {
            return Err(short());
        }
        let (iv, body) = data.split_at(BLOCK);
        if body.len() % BLOCK != 0 {
            return Err(TransformError::new(
                "the stored data is not a multiple of the block size",
            ));
        }
        let mut out = body.to_vec();
        self.decrypt(iv, &mut out);
        let pad = out.last().copied().unwrap_or(0) as usize;
        if pad == 0 || pad > out.len() {
            return Err(TransformError::new(
                "invalid PKCS7 data (empty or not padded)",
            ));
        }
        let size = out.len() - pad;
        if out[size..].iter().any(|&b| b as usize != pad) {
            return Err(TransformError::new("invalid padding on input"));
        }
        out.truncate(size);
        Ok(Read::fresh(out))
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let pad = BLOCK - data.len() % BLOCK;
        let mut out = vec![0u8; BLOCK + data.len() + pad];
        let (iv, body) = out.split_at_mut(BLOCK);
        random(iv)?;
        body[..data.len()].copy_from_slice(data);
        body[data.len()..].fill(pad as u8);
        self.encrypt(iv, body);
        Ok(out)
    }
}

/// `aesgcm` under one key (also a KMS v2 DEK, and each derived key of a seed).
pub enum Gcm {
    A128(Box<AesGcm<aes::Aes128, U12>>),
    A192(Box<AesGcm<aes::Aes192, U12>>),
    A256(Box<AesGcm<aes::Aes256, U12>>),
}

impl Gcm {
    pub fn new(key: &[u8]) -> Result<Self, TransformError> {
        let bad = |_| TransformError(format!("crypto/aes: invalid key size {}", key.len()));
        Ok(match key.len() {
            16 => Gcm::A128(Box::new(AesGcm::new_from_slice(key).map_err(bad)?)),
            24 => Gcm::A192(Box::new(AesGcm::new_from_slice(key).map_err(bad)?)),
            _ => Gcm::A256(Box::new(AesGcm::new_from_slice(key).map_err(bad)?)),
        })
    }

    pub fn open(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, TransformError> {
        if data.len() < NONCE {
            return Err(short());
        }
        let (nonce, body) = data.split_at(NONCE);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let payload = Payload { msg: body, aad };
        let opened = match self {
            Gcm::A128(c) => c.decrypt(nonce, payload),
            Gcm::A192(c) => c.decrypt(nonce, payload),
            Gcm::A256(c) => c.decrypt(nonce, payload),
        };
        opened.map_err(|_| TransformError::new("cipher: message authentication failed"))
    }

    pub fn seal(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; NONCE];
        random(&mut nonce)?;
        let n = Nonce::<U12>::from_slice(&nonce);
        let payload = Payload { msg: data, aad };
        let sealed = match self {
            Gcm::A128(c) => c.encrypt(n, payload),
            Gcm::A192(c) => c.encrypt(n, payload),
            Gcm::A256(c) => c.encrypt(n, payload),
        }
        .map_err(|_| TransformError::new("failed to encrypt with AES-GCM"))?;
        Ok([&nonce[..], &sealed].concat())
    }
}

#[async_trait]
impl Transformer for Gcm {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Read, TransformError> {
        self.open(data, key).map(Read::fresh)
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        self.seal(data, key)
    }
}

/// KMS v2's seed transformer: a fresh key per value, derived from the seed.
pub struct SeedGcm {
    seed: Vec<u8>,
}

impl SeedGcm {
    pub fn new(seed: &[u8]) -> Result<Self, TransformError> {
        if seed.len() < SEED_SIZE {
            return Err(TransformError(format!(
                "invalid seed length {} used for key generation",
                seed.len()
            )));
        }
        Ok(SeedGcm {
            seed: seed.to_vec(),
        })
    }

    fn derive(&self, info: &[u8]) -> Result<Gcm, TransformError> {
        struct Len;
        impl ring::hkdf::KeyType for Len {
            fn len(&self) -> usize {
                SEED_INFO
            }
        }
        let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, &self.seed);
        let mut key = [0u8; SEED_INFO];
        prk.expand(&[info], Len)
            .and_then(|okm| okm.fill(&mut key))
            .map_err(|_| TransformError::new("failed to KDF expand seed with info"))?;
        Gcm::new(&key)
    }
}

#[async_trait]
impl Transformer for SeedGcm {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Read, TransformError> {
        if data.len() < SEED_INFO {
            return Err(short());
        }
        let (info, body) = data.split_at(SEED_INFO);
        self.derive(info)?.open(body, key).map(Read::fresh)
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let mut info = [0u8; SEED_INFO];
        random(&mut info)?;
        let sealed = self.derive(&info)?.seal(data, key)?;
        Ok([&info[..], &sealed].concat())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const KEY: &[u8] = b"/registry/secrets/default/s";

    #[tokio::test]
    async fn cbc_layout_and_padding() {
        for len in [16, 24, 32] {
            let t = Cbc::new(&vec![7u8; len]).unwrap();
            for plain in [
                &b""[..],
                b"x",
                b"0123456789abcdef",
                b"{\"kind\":\"Secret\"}",
            ] {
                let stored = t.transform_to_storage(plain, KEY).await.unwrap();
                let padded = (plain.len() / 16 + 1) * 16;
                assert_eq!(stored.len(), 16 + padded, "IV + a padding block at least");
                assert_eq!(
                    t.transform_from_storage(&stored, b"").await.unwrap().data,
                    plain
                );
            }
        }
        let t = Cbc::new(&[1u8; 32]).unwrap();
        let err = |r: Result<Read, TransformError>| r.unwrap_err().0;
        assert!(err(t.transform_from_storage(&[0u8; 8], KEY).await).contains("shorter"));
        assert!(err(t.transform_from_storage(&[0u8; 20], KEY).await).contains("multiple"));
    }

    /// AES-128-CBC of "Single block msg" from RFC 3602 (case 1), with the
    /// padding block upstream adds after a whole block.
    #[tokio::test]
    async fn cbc_known_answer() {
        let key = hex("06a9214036b8a15b512e03d534120006");
        let iv = hex("3dafba429d9eb430b422da802c9fac41");
        let t = Cbc::new(&key).unwrap();
        let mut block = b"Single block msg".to_vec();
        t.encrypt(&iv, &mut block);
        assert_eq!(block, hex("e353779c1079aeb82708942dbe77181a"));
    }

    #[tokio::test]
    async fn gcm_binds_the_storage_key() {
        let t = Gcm::new(&[3u8; 24]).unwrap();
        let stored = t.transform_to_storage(b"secret", KEY).await.unwrap();
        assert_eq!(stored.len(), 12 + 6 + 16);
        assert_eq!(
            t.transform_from_storage(&stored, KEY).await.unwrap().data,
            b"secret"
        );
        let moved = t
            .transform_from_storage(&stored, b"/registry/secrets/other/s")
            .await;
        assert!(moved.unwrap_err().0.contains("authentication failed"));
    }

    #[tokio::test]
    async fn seed_values_carry_their_info_and_derive_per_value() {
        let t = SeedGcm::new(&[9u8; 32]).unwrap();
        let a = t.transform_to_storage(b"v", KEY).await.unwrap();
        let b = t.transform_to_storage(b"v", KEY).await.unwrap();
        assert_eq!(a.len(), 32 + 12 + 1 + 16);
        assert_ne!(a[..32], b[..32], "fresh info per value");
        assert_eq!(t.transform_from_storage(&a, KEY).await.unwrap().data, b"v");
        // The derived key is HKDF-Expand(seed, info): open with it directly.
        let key = {
            let mut k = [0u8; 32];
            let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, &[9u8; 32]);
            prk.expand(&[&a[..32]], ring::hkdf::HKDF_SHA256)
                .unwrap()
                .fill(&mut k)
                .unwrap();
            k
        };
        assert_eq!(Gcm::new(&key).unwrap().open(&a[32..], KEY).unwrap(), b"v");
        assert!(SeedGcm::new(&[0u8; 16]).is_err());
    }

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
