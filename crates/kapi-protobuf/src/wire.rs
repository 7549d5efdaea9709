//! Protobuf wire primitives: varints, field keys, length-delimited values, and
//! a bounds-checked reader that reports truncation instead of panicking.

use crate::Error;

pub const VARINT: u8 = 0;
pub const FIXED64: u8 = 1;
pub const LEN: u8 = 2;
pub const FIXED32: u8 = 5;

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire));
}

pub fn put_bytes(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Write a length-delimited field whose body `f` writes, without an extra copy
/// when the body is short (the common case): the length is reserved as one
/// byte and widened afterwards only if needed.
pub fn put_nested(
    out: &mut Vec<u8>,
    tag: u32,
    f: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    put_key(out, tag, LEN);
    let len_at = out.len();
    out.push(0);
    f(out)?;
    let len = out.len() - len_at - 1;
    if len < 0x80 {
        out[len_at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(5);
        put_varint(&mut prefix, len as u64);
        out.splice(len_at..len_at + 1, prefix);
    }
    Ok(())
}

/// A cursor over one message's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// One decoded field value, not yet interpreted.
#[derive(Clone, Copy)]
pub enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// How far into the message the reader is.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn varint(&mut self) -> Result<u64, Error> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(Error::Truncated)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::Malformed("varint longer than 10 bytes".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(Error::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    /// The next field: its tag and raw value.
    pub fn field(&mut self) -> Result<(u32, Raw<'a>), Error> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3)
            .map_err(|_| Error::Malformed("field number out of range".into()))?;
        if tag == 0 {
            return Err(Error::Malformed("field number 0".into()));
        }
        let raw = match (key & 7) as u8 {
            VARINT => Raw::Varint(self.varint()?),
            FIXED64 => Raw::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            LEN => {
                let n = usize::try_from(self.varint()?).map_err(|_| Error::Truncated)?;
                Raw::Bytes(self.take(n)?)
            }
            FIXED32 => {
                self.take(4)?;
                Raw::Fixed32
            }
            w => return Err(Error::Malformed(format!("unsupported wire type {w}"))),
        };
        Ok((tag, raw))
    }

    /// Varints of a packed repeated field.
    pub fn packed_varints(bytes: &'a [u8]) -> Result<Vec<u64>, Error> {
        let mut r = Reader::new(bytes);
        let mut out = Vec::new();
        while !r.done() {
            out.push(r.varint()?);
        }
        Ok(out)
    }
}
