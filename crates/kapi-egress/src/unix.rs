//! Unix sockets the server dials: a filesystem path, or a name in Linux's
//! abstract namespace (how KMS plugins and external token signers may be
//! reached). Each caller reads its own flag or file syntax into a
//! [`UnixSocket`]; connecting is the same for all.

use std::path::PathBuf;

/// Where a unix socket is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnixSocket {
    Path(PathBuf),
    Abstract(String),
}

impl UnixSocket {
    /// A connection to the socket.
    pub async fn connect(&self) -> std::io::Result<tokio::net::UnixStream> {
        match self {
            UnixSocket::Path(p) => tokio::net::UnixStream::connect(p).await,
            UnixSocket::Abstract(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
                let std = std::os::unix::net::UnixStream::connect_addr(&addr)?;
                std.set_nonblocking(true)?;
                tokio::net::UnixStream::from_std(std)
            }
        }
    }
}
