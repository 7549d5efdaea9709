//! SPDY/3.1 frames (draft-mbelshe-httpbis-spdy-00 with 3.1's per-session
//! flow-control frame): parsing from and writing to a byte buffer.
//!
//! Invariants: a frame is only parsed once all of it is buffered; a frame
//! longer than [`MAX_FRAME`] is a protocol error rather than a reason to buffer
//! without bound; header blocks go through one [`HeaderCodec`] per connection
//! direction (zlib with SPDY's dictionary, one stream for the connection's
//! life), so frames must be parsed and written in connection order.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::headers::{HeaderCodec, Headers};

/// SPDY's version in every control frame.
pub const VERSION: u16 = 3;
/// The largest frame accepted (SPDY's length field allows 16 MiB).
pub const MAX_FRAME: usize = (1 << 24) - 1;

pub const FLAG_FIN: u8 = 0x01;
pub const FLAG_UNIDIRECTIONAL: u8 = 0x02;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const SETTINGS: u16 = 4;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const WINDOW_UPDATE: u16 = 9;

/// RST_STREAM status codes used here.
pub const RST_PROTOCOL_ERROR: u32 = 1;
pub const RST_CANCEL: u32 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data {
        stream: u32,
        fin: bool,
        data: Bytes,
    },
    SynStream {
        stream: u32,
        associated: u32,
        priority: u8,
        fin: bool,
        unidirectional: bool,
        headers: Headers,
    },
    SynReply {
        stream: u32,
        fin: bool,
        headers: Headers,
    },
    RstStream {
        stream: u32,
        status: u32,
    },
    /// `(flags, id, value)` entries; kept only to be ignored politely.
    Settings(Vec<(u8, u32, u32)>),
    Ping(u32),
    GoAway {
        last_good: u32,
        status: u32,
    },
    Headers {
        stream: u32,
        fin: bool,
        headers: Headers,
    },
    WindowUpdate {
        stream: u32,
        delta: u32,
    },
    /// A control frame of a type this implementation does not act on (NOOP,
    /// CREDENTIAL); skipped as the specification asks.
    Unknown(u16),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("unsupported SPDY version {0}")]
    Version(u16),
    #[error("SPDY frame of {0} bytes is too large")]
    TooLarge(usize),
    #[error("malformed SPDY frame: {0}")]
    Malformed(&'static str),
    #[error("SPDY header block: {0}")]
    Headers(String),
}

/// Parse one frame from the front of `buf`; `Ok(None)` when more bytes are needed.
pub fn parse(buf: &mut BytesMut, codec: &mut HeaderCodec) -> Result<Option<Frame>, FrameError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let len = (u32::from_be_bytes([0, buf[5], buf[6], buf[7]])) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    if buf.len() < 8 + len {
        return Ok(None);
    }
    let head = buf.split_to(8);
    let flags = head[4];
    let body = buf.split_to(len).freeze();
    if head[0] & 0x80 == 0 {
        let stream = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
        return Ok(Some(Frame::Data {
            stream,
            fin: flags & FLAG_FIN != 0,
            data: body,
        }));
    }
    let version = u16::from_be_bytes([head[0], head[1]]) & 0x7fff;
    if version != VERSION {
        return Err(FrameError::Version(version));
    }
    let kind = u16::from_be_bytes([head[2], head[3]]);
    control(kind, flags, body, codec).map(Some)
}

fn need(body: &Bytes, n: usize) -> Result<(), FrameError> {
    if body.len() < n {
        return Err(FrameError::Malformed("control frame too short"));
    }
    Ok(())
}

fn control(
    kind: u16,
    flags: u8,
    mut body: Bytes,
    codec: &mut HeaderCodec,
) -> Result<Frame, FrameError> {
    let fin = flags & FLAG_FIN != 0;
    let id = |b: &mut Bytes| b.get_u32() & 0x7fff_ffff;
    Ok(match kind {
        SYN_STREAM => {
            need(&body, 10)?;
            let stream = id(&mut body);
            let associated = id(&mut body);
            let priority = body.get_u8() >> 5;
            body.advance(1);
            Frame::SynStream {
                stream,
                associated,
                priority,
                fin,
                unidirectional: flags & FLAG_UNIDIRECTIONAL != 0,
                headers: codec.decode(&body)?,
            }
        }
        SYN_REPLY | HEADERS => {
            need(&body, 4)?;
            let stream = id(&mut body);
            let headers = codec.decode(&body)?;
            if kind == SYN_REPLY {
                Frame::SynReply {
                    stream,
                    fin,
                    headers,
                }
            } else {
                Frame::Headers {
                    stream,
                    fin,
                    headers,
                }
            }
        }
        RST_STREAM => {
            need(&body, 8)?;
            Frame::RstStream {
                stream: id(&mut body),
                status: body.get_u32(),
            }
        }
        SETTINGS => {
            need(&body, 4)?;
            let n = body.get_u32() as usize;
            need(&body, n.saturating_mul(8))?;
            let entries = (0..n)
                .map(|_| {
                    let w = body.get_u32();
                    ((w >> 24) as u8, w & 0x00ff_ffff, body.get_u32())
                })
                .collect();
            Frame::Settings(entries)
        }
        PING => {
            need(&body, 4)?;
            Frame::Ping(body.get_u32())
        }
        GOAWAY => {
            need(&body, 4)?;
            let last_good = id(&mut body);
            let status = if body.len() >= 4 { body.get_u32() } else { 0 };
            Frame::GoAway { last_good, status }
        }
        WINDOW_UPDATE => {
            need(&body, 8)?;
            Frame::WindowUpdate {
                stream: id(&mut body),
                delta: body.get_u32() & 0x7fff_ffff,
            }
        }
        other => Frame::Unknown(other),
    })
}

/// Append `frame` to `out`.
pub fn write(frame: &Frame, out: &mut BytesMut, codec: &mut HeaderCodec) -> Result<(), FrameError> {
    match frame {
        Frame::Data { stream, fin, data } => {
            if data.len() > MAX_FRAME {
                return Err(FrameError::TooLarge(data.len()));
            }
            out.put_u32(stream & 0x7fff_ffff);
            out.put_u32(((u32::from(*fin)) << 24) | data.len() as u32);
            out.put_slice(data);
        }
        Frame::SynStream {
            stream,
            associated,
            priority,
            fin,
            unidirectional,
            headers,
        } => {
            let mut body = BytesMut::new();
            body.put_u32(*stream);
            body.put_u32(*associated);
            body.put_u8(priority << 5);
            body.put_u8(0);
            body.put_slice(&codec.encode(headers)?);
            let flags = u8::from(*fin)
                | if *unidirectional {
                    FLAG_UNIDIRECTIONAL
                } else {
                    0
                };
            put_control(out, SYN_STREAM, flags, &body);
        }
        Frame::SynReply {
            stream,
            fin,
            headers,
        }
        | Frame::Headers {
            stream,
            fin,
            headers,
        } => {
            let kind = if matches!(frame, Frame::SynReply { .. }) {
                SYN_REPLY
            } else {
                HEADERS
            };
            let mut body = BytesMut::new();
            body.put_u32(*stream);
            body.put_slice(&codec.encode(headers)?);
            put_control(out, kind, u8::from(*fin), &body);
        }
        Frame::RstStream { stream, status } => {
            put_control(out, RST_STREAM, 0, &two(*stream, *status))
        }
        Frame::Settings(entries) => {
            let mut body = BytesMut::new();
            body.put_u32(entries.len() as u32);
            for (flags, id, value) in entries {
                body.put_u32((u32::from(*flags) << 24) | (id & 0x00ff_ffff));
                body.put_u32(*value);
            }
            put_control(out, SETTINGS, 0, &body);
        }
        Frame::Ping(id) => put_control(out, PING, 0, &id.to_be_bytes()),
        Frame::GoAway { last_good, status } => {
            put_control(out, GOAWAY, 0, &two(*last_good, *status))
        }
        Frame::WindowUpdate { stream, delta } => {
            put_control(out, WINDOW_UPDATE, 0, &two(*stream, *delta))
        }
        Frame::Unknown(_) => return Err(FrameError::Malformed("cannot write an unknown frame")),
    }
    Ok(())
}

fn two(a: u32, b: u32) -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(&a.to_be_bytes());
    out[4..].copy_from_slice(&b.to_be_bytes());
    out
}

fn put_control(out: &mut BytesMut, kind: u16, flags: u8, body: &[u8]) {
    out.put_u16(0x8000 | VERSION);
    out.put_u16(kind);
    out.put_u32((u32::from(flags) << 24) | body.len() as u32);
    out.put_slice(body);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
