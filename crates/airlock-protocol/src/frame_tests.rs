use super::*;
use crate::CONTROL_CHANNEL;

#[test]
fn encode_layout() {
    let f = Frame::data(7, b"abc".to_vec()).unwrap();
    assert_eq!(
        f.encode(),
        vec![0, 0, 0, 8, 4, 0, 0, 0, 7, b'a', b'b', b'c']
    );
    assert_eq!(Frame::eof(9).encode(), vec![0, 0, 0, 5, 5, 0, 0, 0, 9]);
}

#[test]
fn kinds_round_trip_and_unknown_rejected() {
    for b in 0..=255u8 {
        match FrameKind::from_byte(b) {
            Some(k) => assert_eq!(k as u8, b),
            None => assert!(b == 0 || b > 6),
        }
    }
}

#[test]
fn constructor_enforces_rules() {
    assert_eq!(
        Frame::new(FrameKind::Data, CONTROL_CHANNEL, vec![]),
        Err(ProtocolError::WrongChannel {
            kind: FrameKind::Data,
            channel: 0
        })
    );
    assert_eq!(
        Frame::new(FrameKind::Request, 3, vec![]),
        Err(ProtocolError::WrongChannel {
            kind: FrameKind::Request,
            channel: 3
        })
    );
    assert_eq!(
        Frame::new(FrameKind::Eof, 3, vec![1]),
        Err(ProtocolError::EofWithBody(3))
    );
    assert_eq!(
        Frame::data(1, vec![0; MAX_BODY + 1]),
        Err(ProtocolError::BodyTooLarge(MAX_BODY + 1))
    );
    assert!(Frame::data(1, vec![0; MAX_BODY]).is_ok());
}

#[test]
fn blocking_read_write_round_trip() {
    let frames = vec![
        Frame::json(FrameKind::Hello, &crate::Hello::new(crate::Role::Host)).unwrap(),
        Frame::data(3, vec![0xAB; MAX_BODY]).unwrap(),
        Frame::eof(3),
        Frame::data(5, vec![]).unwrap(),
    ];
    let mut wire = Vec::new();
    for f in &frames {
        write_frame(&mut wire, f).unwrap();
    }
    let mut r = std::io::Cursor::new(wire);
    for f in &frames {
        assert_eq!(read_frame(&mut r).unwrap().as_ref(), Some(f));
    }
    assert_eq!(read_frame(&mut r).unwrap(), None);
}

#[test]
fn blocking_read_errors() {
    let wire = Frame::data(3, b"hello".to_vec()).unwrap().encode();
    for cut in 1..wire.len() {
        let mut r = std::io::Cursor::new(wire[..cut].to_vec());
        assert_eq!(
            read_frame(&mut r),
            Err(ProtocolError::UnexpectedEnd),
            "cut at {cut}"
        );
    }
    let mut r = std::io::Cursor::new(vec![0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 1]);
    assert_eq!(read_frame(&mut r), Err(ProtocolError::Oversize(u32::MAX)));
}
