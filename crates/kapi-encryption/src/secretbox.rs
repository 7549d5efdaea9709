//! `secretbox`: NaCl's secretbox (XSalsa20-Poly1305) as upstream lays it out —
//! a random 24-byte nonce, then the box: the 16-byte Poly1305 tag followed by
//! the ciphertext. No authenticated data (the storage key is not bound).

use async_trait::async_trait;
use crypto_secretbox::aead::{AeadInPlace, KeyInit};
use crypto_secretbox::{Nonce, Tag, XSalsa20Poly1305};

use crate::transformer::{random, Read, TransformError, Transformer};

const NONCE: usize = 24;
const TAG: usize = 16;

pub struct Secretbox {
    cipher: XSalsa20Poly1305,
}

impl Secretbox {
    /// `key` must be 32 bytes (validation guarantees it).
    pub fn new(key: &[u8]) -> Result<Self, TransformError> {
        let cipher = XSalsa20Poly1305::new_from_slice(key).map_err(|_| {
            TransformError(format!(
                "expected key size 32 for secretbox provider, got {}",
                key.len()
            ))
        })?;
        Ok(Secretbox { cipher })
    }
}

#[async_trait]
impl Transformer for Secretbox {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Read, TransformError> {
        if data.len() < NONCE + TAG {
            return Err(TransformError::new(
                "the stored data was shorter than the required size",
            ));
        }
        let (nonce, sealed) = data.split_at(NONCE);
        let (tag, body) = sealed.split_at(TAG);
        let mut out = body.to_vec();
        self.cipher
            .decrypt_in_place_detached(
                Nonce::from_slice(nonce),
                b"",
                &mut out,
                Tag::from_slice(tag),
            )
            .map_err(|_| TransformError::new("output array was not large enough for encryption"))?;
        Ok(Read::fresh(out))
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let mut nonce = [0u8; NONCE];
        random(&mut nonce)?;
        let mut body = data.to_vec();
        let tag = self
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), b"", &mut body)
            .map_err(|_| TransformError::new("failed to seal with secretbox"))?;
        let mut out = Vec::with_capacity(NONCE + TAG + body.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&tag);
        out.extend_from_slice(&body);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aes::tests::hex;

    #[tokio::test]
    async fn round_trip_and_tamper() {
        let t = Secretbox::new(&[5u8; 32]).unwrap();
        let stored = t.transform_to_storage(b"hello", b"").await.unwrap();
        assert_eq!(stored.len(), 24 + 16 + 5);
        assert_eq!(
            t.transform_from_storage(&stored, b"").await.unwrap().data,
            b"hello"
        );
        let mut bad = stored.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(t.transform_from_storage(&bad, b"").await.is_err());
        assert!(Secretbox::new(&[0u8; 16]).is_err());
    }

    /// The tag and first ciphertext bytes of the box of NaCl's `tests/secretbox.c` (key
    /// `firstkey`, nonce `nonce`, message `m`): tag first, then ciphertext —
    /// the layout Go's `secretbox.Seal` writes after the nonce.
    #[tokio::test]
    async fn nacl_known_answer() {
        let key = hex(concat!(
            "1b27556473e985d462cd51197a9a46c7",
            "6009549eac6474f206c4ee0844f68389"
        ));
        let nonce = hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37");
        let m = hex(concat!(
            "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffc",
            "e5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb31",
            "0e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde",
            "048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f93776384864",
            "5e0705"
        ));
        let t = Secretbox::new(&key).unwrap();
        let mut body = m.clone();
        let tag = t
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), b"", &mut body)
            .unwrap();
        assert_eq!(tag.as_slice(), hex("f3ffc7703f9400e52a7dfb4b3d3305d9"));
        assert_eq!(body[..16], hex("8e993b9f48681273c29650ba32fc76ce")[..]);
        let stored = [&nonce[..], &tag[..], &body[..]].concat();
        assert_eq!(
            t.transform_from_storage(&stored, b"").await.unwrap().data,
            m
        );
    }
}
