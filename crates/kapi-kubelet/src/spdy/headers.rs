//! SPDY/3 header blocks: a count and length-prefixed name/value pairs
//! (32-bit big-endian lengths, names lowercase, several values of one name
//! joined by NUL), compressed with zlib primed with SPDY's dictionary.
//!
//! Invariants: one compression stream per direction for the whole
//! connection — every block ends with a zlib sync flush, so the peer can
//! inflate it at once, and the next block continues the same stream. A block
//! inflating past [`MAX_HEADERS`] bytes is refused.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::dictionary::dictionary;
use super::frame::FrameError;

/// Header name/value pairs in wire order.
pub type Headers = Vec<(String, String)>;

/// The most header bytes one block may inflate to.
pub const MAX_HEADERS: usize = 1 << 20;

/// The zlib streams of one connection: ours (`encode`) and the peer's (`decode`).
pub struct HeaderCodec {
    deflate: Compress,
    inflate: Decompress,
    primed: bool,
}

impl Default for HeaderCodec {
    fn default() -> Self {
        HeaderCodec::new()
    }
}

impl HeaderCodec {
    pub fn new() -> HeaderCodec {
        HeaderCodec {
            deflate: Compress::new(Compression::default(), true),
            inflate: Decompress::new(true),
            primed: false,
        }
    }

    /// Serialize and compress a header block.
    pub fn encode(&mut self, headers: &Headers) -> Result<Vec<u8>, FrameError> {
        let mut raw = Vec::new();
        raw.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            raw.extend_from_slice(&(name.len() as u32).to_be_bytes());
            raw.extend_from_slice(name.as_bytes());
            raw.extend_from_slice(&(value.len() as u32).to_be_bytes());
            raw.extend_from_slice(value.as_bytes());
        }
        if !self.primed {
            self.deflate
                .set_dictionary(dictionary())
                .map_err(|e| FrameError::Headers(e.to_string()))?;
            self.primed = true;
        }
        let mut out = Vec::with_capacity(raw.len() + 64);
        let mut input = raw.as_slice();
        loop {
            out.reserve(256);
            let before = self.deflate.total_in();
            self.deflate
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .map_err(|e| FrameError::Headers(e.to_string()))?;
            input = &input[(self.deflate.total_in() - before) as usize..];
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
        }
    }

    /// Inflate and parse a header block.
    pub fn decode(&mut self, block: &[u8]) -> Result<Headers, FrameError> {
        let raw = self.inflate_block(block)?;
        parse_block(&raw)
    }

    fn inflate_block(&mut self, mut input: &[u8]) -> Result<Vec<u8>, FrameError> {
        let err = |m: String| FrameError::Headers(m);
        let mut out = Vec::with_capacity(input.len() * 4 + 64);
        loop {
            out.reserve(1024);
            let before = self.inflate.total_in();
            let res = self
                .inflate
                .decompress_vec(input, &mut out, FlushDecompress::Sync);
            input = &input[(self.inflate.total_in() - before) as usize..];
            match res {
                Ok(Status::StreamEnd) => return Err(err("the peer ended its zlib stream".into())),
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(dictionary())
                        .map_err(|e| err(e.to_string()))?;
                    continue;
                }
                Err(e) => return Err(err(e.to_string())),
            }
            if out.len() > MAX_HEADERS {
                return Err(err("header block too large".into()));
            }
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
        }
    }
}

fn parse_block(mut raw: &[u8]) -> Result<Headers, FrameError> {
    let bad = || FrameError::Headers("truncated header block".into());
    let take = |n: usize, raw: &mut &[u8]| -> Result<Vec<u8>, FrameError> {
        if raw.len() < n {
            return Err(bad());
        }
        let (a, b) = raw.split_at(n);
        *raw = b;
        Ok(a.to_vec())
    };
    let word = |raw: &mut &[u8]| -> Result<usize, FrameError> {
        if raw.len() < 4 {
            return Err(FrameError::Headers("truncated header block".into()));
        }
        let (a, b) = raw.split_at(4);
        *raw = b;
        Ok(u32::from_be_bytes([a[0], a[1], a[2], a[3]]) as usize)
    };
    let n = word(&mut raw)?;
    let mut out = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let len = word(&mut raw)?;
        let name = take(len, &mut raw)?;
        let len = word(&mut raw)?;
        let value = take(len, &mut raw)?;
        let name = String::from_utf8_lossy(&name).into_owned();
        for v in value.split(|b| *b == 0) {
            out.push((name.clone(), String::from_utf8_lossy(v).into_owned()));
        }
    }
    Ok(out)
}

/// The first value of `name` (case-insensitive).
pub fn get<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
