//! SPDY/3.1, the stream protocol kubectl (before WebSocket), the kubelet and
//! the API server speak for exec, attach and port-forward: frames
//! (`frame.rs`), compressed header blocks (`headers.rs`, `dictionary.rs`) and
//! a session multiplexing streams over one connection (`session.rs`). The API
//! server only parses SPDY where it translates a WebSocket client for a SPDY
//! kubelet (`translate.rs`); otherwise the bytes pass through untouched.

mod dictionary;
pub mod frame;
pub mod headers;
pub mod session;

pub use frame::{Frame, FrameError};
pub use headers::{HeaderCodec, Headers};
pub use session::{Session, SessionError, Stream, StreamWriter};
