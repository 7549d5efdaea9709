//! Two sessions joined by an in-memory pipe: streams open, carry data both
//! ways, half-close, and end with the connection.

use super::*;
use crate::spdy::headers;

fn pair() -> (
    (Session, mpsc::Receiver<Stream>),
    (Session, mpsc::Receiver<Stream>),
) {
    let (a, b) = tokio::io::duplex(64 * 1024);
    (Session::start(a, false), Session::start(b, true))
}

#[tokio::test]
async fn streams_carry_data_both_ways_and_half_close() {
    let ((client, _), (_server, mut incoming)) = pair();
    let server_side = tokio::spawn(async move {
        let mut s = incoming.recv().await.unwrap();
        assert_eq!(headers::get(&s.headers, "streamtype"), Some("stdin"));
        s.reply().await.unwrap();
        let mut got = Vec::new();
        while let Some(chunk) = s.recv().await {
            got.extend_from_slice(&chunk);
        }
        s.send(Bytes::from(got)).await.unwrap();
        s.finish().await.unwrap();
    });
    let mut s = client
        .open(vec![("streamtype".into(), "stdin".into())])
        .await
        .unwrap();
    assert_eq!(s.id, 1);
    let big = vec![7u8; 100 * 1024];
    s.send(Bytes::from(big.clone())).await.unwrap();
    s.finish().await.unwrap();
    let mut echoed = Vec::new();
    while let Some(chunk) = s.recv().await {
        echoed.extend_from_slice(&chunk);
    }
    assert_eq!(echoed, big);
    server_side.await.unwrap();
}

#[tokio::test]
async fn the_end_of_the_connection_ends_every_stream() {
    let ((client, _), (server, mut incoming)) = pair();
    let accept = tokio::spawn(async move {
        let s = incoming.recv().await.unwrap();
        s.reply().await.unwrap();
        server.shutdown().await;
        s
    });
    let mut s = client.open(vec![]).await.unwrap();
    let _held = accept.await.unwrap();
    assert_eq!(s.recv().await, None);
    client.closed().await;
    assert!(client.open(vec![]).await.is_err());
}

#[tokio::test]
async fn a_reset_fails_the_open() {
    let (a, b) = tokio::io::duplex(4096);
    let (client, _) = Session::start(a, false);
    let peer = tokio::spawn(async move {
        let (mut rd, mut wr) = tokio::io::split(b);
        let mut codec = HeaderCodec::new();
        let mut buf = BytesMut::new();
        let id = loop {
            if let Some(Frame::SynStream { stream, .. }) =
                frame::parse(&mut buf, &mut codec).unwrap()
            {
                break stream;
            }
            rd.read_buf(&mut buf).await.unwrap();
        };
        let mut out = BytesMut::new();
        frame::write(
            &Frame::RstStream {
                stream: id,
                status: frame::RST_CANCEL,
            },
            &mut out,
            &mut codec,
        )
        .unwrap();
        wr.write_all(&out).await.unwrap();
        (rd, wr)
    });
    assert!(matches!(
        client.open(vec![]).await,
        Err(SessionError::Reset(1))
    ));
    drop(peer.await.unwrap());
}
