//! Frame and header-block round trips, and the wire bytes of frames whose
//! layout is fixed.

use super::*;

fn roundtrip(frames: &[Frame]) -> Vec<Frame> {
    let (mut tx, mut rx) = (HeaderCodec::new(), HeaderCodec::new());
    let mut buf = BytesMut::new();
    for f in frames {
        write(f, &mut buf, &mut tx).unwrap();
    }
    let mut out = Vec::new();
    while let Some(f) = parse(&mut buf, &mut rx).unwrap() {
        out.push(f);
    }
    assert!(buf.is_empty());
    out
}

fn hdrs(pairs: &[(&str, &str)]) -> Headers {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn every_frame_survives_a_round_trip() {
    let frames = vec![
        Frame::SynStream {
            stream: 1,
            associated: 0,
            priority: 7,
            fin: false,
            unidirectional: false,
            headers: hdrs(&[("streamtype", "error")]),
        },
        Frame::SynReply {
            stream: 1,
            fin: false,
            headers: vec![],
        },
        Frame::SynStream {
            stream: 3,
            associated: 0,
            priority: 0,
            fin: true,
            unidirectional: true,
            headers: hdrs(&[("streamtype", "stdout"), ("port", "8080")]),
        },
        Frame::Data {
            stream: 3,
            fin: false,
            data: Bytes::from_static(b"hello"),
        },
        Frame::Data {
            stream: 3,
            fin: true,
            data: Bytes::new(),
        },
        Frame::RstStream {
            stream: 5,
            status: RST_CANCEL,
        },
        Frame::Settings(vec![(0, 7, 65536), (1, 4, 100)]),
        Frame::Ping(2),
        Frame::GoAway {
            last_good: 3,
            status: 0,
        },
        Frame::Headers {
            stream: 1,
            fin: true,
            headers: hdrs(&[("a", "b")]),
        },
        Frame::WindowUpdate {
            stream: 0,
            delta: 1000,
        },
    ];
    assert_eq!(roundtrip(&frames), frames);
}

#[test]
fn fixed_layouts_on_the_wire() {
    let mut c = HeaderCodec::new();
    let mut buf = BytesMut::new();
    write(&Frame::Ping(0x01020304), &mut buf, &mut c).unwrap();
    assert_eq!(&buf[..], &[0x80, 3, 0, 6, 0, 0, 0, 4, 1, 2, 3, 4]);
    buf.clear();
    write(
        &Frame::Data {
            stream: 5,
            fin: true,
            data: Bytes::from_static(b"ab"),
        },
        &mut buf,
        &mut c,
    )
    .unwrap();
    assert_eq!(&buf[..], &[0, 0, 0, 5, 1, 0, 0, 2, b'a', b'b']);
    buf.clear();
    write(
        &Frame::RstStream {
            stream: 1,
            status: RST_PROTOCOL_ERROR,
        },
        &mut buf,
        &mut c,
    )
    .unwrap();
    assert_eq!(
        &buf[..],
        &[0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 1]
    );
}

#[test]
fn header_blocks_use_the_spdy_dictionary() {
    let mut c = HeaderCodec::new();
    let block = c.encode(&hdrs(&[("streamtype", "stdin")])).unwrap();
    // zlib header with FDICT set, then the dictionary's Adler-32.
    assert_eq!(block[1] & 0x20, 0x20);
    assert_eq!(&block[2..6], &[0xe3, 0xc6, 0xa7, 0xc2]);
}

#[test]
fn partial_input_waits_for_the_rest() {
    let mut c = HeaderCodec::new();
    let mut whole = BytesMut::new();
    write(
        &Frame::Data {
            stream: 1,
            fin: false,
            data: Bytes::from_static(b"xyz"),
        },
        &mut whole,
        &mut c,
    )
    .unwrap();
    let mut part = BytesMut::from(&whole[..9]);
    assert_eq!(parse(&mut part, &mut c).unwrap(), None);
    part.extend_from_slice(&whole[9..]);
    assert!(matches!(
        parse(&mut part, &mut c).unwrap(),
        Some(Frame::Data { .. })
    ));
}

#[test]
fn hostile_frames_are_refused() {
    let mut c = HeaderCodec::new();
    let mut v2 = BytesMut::from(&[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1][..]);
    assert_eq!(parse(&mut v2, &mut c), Err(FrameError::Version(2)));
    let mut short = BytesMut::from(&[0x80, 3, 0, 3, 0, 0, 0, 2, 0, 0][..]);
    assert!(matches!(
        parse(&mut short, &mut c),
        Err(FrameError::Malformed(_))
    ));
    let mut junk = BytesMut::from(&[0x80, 3, 0, 2, 0, 0, 0, 8, 0, 0, 0, 1, 1, 2, 3, 4][..]);
    assert!(matches!(
        parse(&mut junk, &mut c),
        Err(FrameError::Headers(_))
    ));
}

#[test]
fn repeated_values_split_on_nul() {
    let mut tx = HeaderCodec::new();
    let mut rx = HeaderCodec::new();
    let block = tx.encode(&hdrs(&[("x", "a\0b")])).unwrap();
    assert_eq!(rx.decode(&block).unwrap(), hdrs(&[("x", "a"), ("x", "b")]));
    // The second block continues the same zlib streams.
    let block = tx.encode(&hdrs(&[("y", "c")])).unwrap();
    assert_eq!(rx.decode(&block).unwrap(), hdrs(&[("y", "c")]));
}
