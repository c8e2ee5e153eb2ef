use super::*;

fn sample() -> Vec<Frame> {
    vec![
        Frame::json(FrameKind::Hello, &crate::Hello::new(crate::Role::Agent)).unwrap(),
        Frame::new(FrameKind::Request, 0, br#"{"id":1,"op":"ping"}"#.to_vec()).unwrap(),
        Frame::data(3, b"some output".to_vec()).unwrap(),
        Frame::data(4, vec![]).unwrap(),
        Frame::eof(3),
        Frame::new(
            FrameKind::Event,
            0,
            br#"{"event":"exit","pid":5,"code":0,"signal":null,"timed_out":false}"#.to_vec(),
        )
        .unwrap(),
        Frame::new(FrameKind::Reply, 0, br#"{"id":1,"ok":{}}"#.to_vec()).unwrap(),
    ]
}

fn wire(frames: &[Frame]) -> Vec<u8> {
    frames.iter().flat_map(|f| f.encode()).collect()
}

fn drain(d: &mut FrameDecoder, out: &mut Vec<Frame>) {
    while let Some(f) = d.next().unwrap() {
        out.push(f);
    }
}

#[test]
fn whole_stream_at_once() {
    let frames = sample();
    let mut d = FrameDecoder::new();
    d.feed(&wire(&frames));
    let mut got = Vec::new();
    drain(&mut d, &mut got);
    assert_eq!(got, frames);
    assert_eq!(d.pending(), 0);
}

#[test]
fn split_at_every_byte_boundary() {
    let frames = sample();
    let bytes = wire(&frames);
    for cut in 0..=bytes.len() {
        let mut d = FrameDecoder::new();
        let mut got = Vec::new();
        d.feed(&bytes[..cut]);
        drain(&mut d, &mut got);
        d.feed(&bytes[cut..]);
        drain(&mut d, &mut got);
        assert_eq!(got, frames, "split at {cut}");
    }
}

#[test]
fn one_byte_at_a_time() {
    let frames = sample();
    let mut d = FrameDecoder::new();
    let mut got = Vec::new();
    for b in wire(&frames) {
        assert!(d.wanted() >= 1);
        d.feed(&[b]);
        drain(&mut d, &mut got);
    }
    assert_eq!(got, frames);
}

#[test]
fn max_body_accepted_and_one_more_rejected_from_header_alone() {
    let mut d = FrameDecoder::new();
    d.feed(&Frame::data(1, vec![7; MAX_BODY]).unwrap().encode());
    assert_eq!(d.next().unwrap().unwrap().body.len(), MAX_BODY);

    let len = u32::try_from(MAX_FRAME_LEN + 1).unwrap();
    let mut d = FrameDecoder::new();
    let mut header = len.to_be_bytes().to_vec();
    header.extend_from_slice(&[4, 0, 0, 0, 1]);
    d.feed(&header);
    assert_eq!(d.next(), Err(ProtocolError::Oversize(len)));
}

#[test]
fn header_errors() {
    let cases: Vec<(Vec<u8>, ProtocolError)> = vec![
        (vec![0, 0, 0, 4, 4, 0, 0, 0, 1], ProtocolError::Truncated(4)),
        (vec![0, 0, 0, 0, 4, 0, 0, 0, 1], ProtocolError::Truncated(0)),
        (
            vec![0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 1],
            ProtocolError::Oversize(u32::MAX),
        ),
        (
            vec![0, 0, 0, 5, 0, 0, 0, 0, 1],
            ProtocolError::UnknownKind(0),
        ),
        (
            vec![0, 0, 0, 5, 7, 0, 0, 0, 1],
            ProtocolError::UnknownKind(7),
        ),
        (
            vec![0, 0, 0, 5, 255, 0, 0, 0, 0],
            ProtocolError::UnknownKind(255),
        ),
        (
            vec![0, 0, 0, 5, 4, 0, 0, 0, 0],
            ProtocolError::WrongChannel {
                kind: FrameKind::Data,
                channel: 0,
            },
        ),
        (
            vec![0, 0, 0, 5, 5, 0, 0, 0, 0],
            ProtocolError::WrongChannel {
                kind: FrameKind::Eof,
                channel: 0,
            },
        ),
        (
            vec![0, 0, 0, 5, 2, 0, 0, 0, 9],
            ProtocolError::WrongChannel {
                kind: FrameKind::Request,
                channel: 9,
            },
        ),
        (
            vec![0, 0, 0, 6, 5, 0, 0, 0, 9, 1],
            ProtocolError::EofWithBody(9),
        ),
    ];
    for (bytes, err) in cases {
        let mut d = FrameDecoder::new();
        d.feed(&bytes);
        assert_eq!(d.next(), Err(err.clone()), "{bytes:?}");
        // Failed for good: more valid input does not resynchronise.
        d.feed(&Frame::eof(1).encode());
        assert_eq!(d.next(), Err(err));
        assert!(d.is_failed());
        assert_eq!(d.pending(), 0);
    }
}

#[test]
fn error_after_valid_frames_only_when_reached() {
    let mut bytes = wire(&sample());
    bytes.extend_from_slice(&[0, 0, 0, 5, 99, 0, 0, 0, 0]);
    let mut d = FrameDecoder::new();
    d.feed(&bytes);
    for f in sample() {
        assert_eq!(d.next().unwrap(), Some(f));
    }
    assert_eq!(d.next(), Err(ProtocolError::UnknownKind(99)));
}

#[test]
fn partial_header_waits() {
    let mut d = FrameDecoder::new();
    d.feed(&[0, 0, 0]);
    assert_eq!(d.next(), Ok(None));
    assert_eq!(d.wanted(), 6);
    d.feed(&[9, 4, 0, 0, 0, 1]);
    assert_eq!(d.next(), Ok(None));
    assert_eq!(d.wanted(), 4);
}

#[test]
fn bad_length_and_kind_rejected_before_the_header_is_complete() {
    let mut d = FrameDecoder::new();
    d.feed(&[0, 0, 0, 1]);
    assert_eq!(d.next(), Err(ProtocolError::Truncated(1)));
    let mut d = FrameDecoder::new();
    d.feed(&[0x7f, 0, 0, 0]);
    assert_eq!(d.next(), Err(ProtocolError::Oversize(0x7f00_0000)));
    let mut d = FrameDecoder::new();
    d.feed(&[0, 0, 0, 5, 42]);
    assert_eq!(d.next(), Err(ProtocolError::UnknownKind(42)));
}
