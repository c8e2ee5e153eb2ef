#![allow(clippy::unwrap_used)]
use super::*;

/// Feeds `input` whole and returns (canonical output, consumed, done).
fn run(input: &[u8]) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
    let mut body = ChunkedBody::new();
    let mut out = Vec::new();
    let fed = body.feed(input, &mut out)?;
    Ok((out, fed.consumed, fed.done))
}

#[test]
fn canonical_output_and_the_end_of_the_body() {
    let input = b"5;name=\"v\"\r\nhello\r\n00006 \t;x\r\n world\r\n0\r\nX-T: 1\r\n\r\nGET /next";
    let (out, consumed, done) = run(input).unwrap();
    assert!(done);
    assert_eq!(&input[consumed..], b"GET /next");
    assert_eq!(out, b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    let (out, consumed, done) = run(b"0\r\n\r\nrest").unwrap();
    assert_eq!(
        (out.as_slice(), consumed, done),
        (&b"0\r\n\r\n"[..], 5, true)
    );
    let (out, _, done) = run(b"A\r\n0123456789\r\n0\r\n\r\n").unwrap();
    assert!(done);
    assert_eq!(out, b"a\r\n0123456789\r\n0\r\n\r\n");
}

#[test]
fn byte_by_byte_gives_the_same_result() {
    let input = b"3\r\nabc\r\n10;e\r\n0123456789abcdef\r\n0\r\nA: b\r\nC: d\r\n\r\nafter";
    let (whole, consumed, _) = run(input).unwrap();
    let mut body = ChunkedBody::new();
    let mut out = Vec::new();
    let mut used = 0;
    for (i, b) in input.iter().enumerate() {
        let fed = body.feed(std::slice::from_ref(b), &mut out).unwrap();
        used += fed.consumed;
        if fed.done {
            assert_eq!(i + 1, consumed);
            break;
        }
        assert_eq!(fed.consumed, 1);
    }
    assert!(body.is_done());
    assert_eq!(used, consumed);
    assert_eq!(out, whole);
    // Fed nothing more once done.
    assert_eq!(
        body.feed(b"more", &mut out).unwrap(),
        Fed {
            consumed: 0,
            done: true
        }
    );
}

#[test]
fn incomplete_bodies_ask_for_more() {
    for input in [
        &b""[..],
        b"5",
        b"5\r",
        b"5\r\nhel",
        b"5\r\nhello",
        b"5\r\nhello\r",
        b"0\r\n",
    ] {
        let (_, consumed, done) = run(input).unwrap();
        assert!(!done, "{input:?}");
        assert_eq!(consumed, input.len());
    }
}

#[test]
fn malformed_framing_is_refused() {
    let cases: &[(&[u8], ChunkedError)] = &[
        (b"\r\n", ChunkedError::SizeLine),
        (b"x\r\n", ChunkedError::SizeLine),
        (b" 5\r\nhello\r\n", ChunkedError::SizeLine),
        (b"0x5\r\nhello\r\n", ChunkedError::SizeLine),
        (b"5 \r\nhello\r\n", ChunkedError::SizeLine),
        (b"5 x\r\nhello\r\n", ChunkedError::SizeLine),
        (b"-5\r\n", ChunkedError::SizeLine),
        (b"+5\r\n", ChunkedError::SizeLine),
        (b"5;a\x00b\r\n", ChunkedError::SizeLine),
        (
            b"10000000000000005\r\nhello\r\n",
            ChunkedError::SizeTooLarge,
        ),
        (
            b"00000000000000005\r\nhello\r\n",
            ChunkedError::SizeTooLarge,
        ),
        (b"5\nhello\r\n", ChunkedError::LineEnd),
        (b"5\r\r\nhello\r\n", ChunkedError::LineEnd),
        (b"5;a\rb\r\nhello\r\n", ChunkedError::LineEnd),
        (b"3\r\nhello\r\n", ChunkedError::DataEnd),
        (b"5\r\nhello\n", ChunkedError::DataEnd),
        (b"5\r\nhelloX\r\n", ChunkedError::DataEnd),
        (b"0\r\nno colon\r\n\r\n", ChunkedError::Trailer),
        (b"0\r\n folded: x\r\n\r\n", ChunkedError::Trailer),
        (b"0\r\nA: b\n\r\n", ChunkedError::LineEnd),
    ];
    for (input, want) in cases {
        assert_eq!(run(input).map(|_| ()), Err(want.clone()), "{input:?}");
    }
}

#[test]
fn lines_are_bounded() {
    let mut long = b"5;".to_vec();
    long.resize(MAX_CHUNK_LINE + 1, b'x');
    assert_eq!(run(&long).map(|_| ()), Err(ChunkedError::LineTooLong));
    let mut ok = b"5;".to_vec();
    ok.resize(MAX_CHUNK_LINE - 2, b'x');
    ok.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert!(run(&ok).unwrap().2);

    let mut trailers = b"0\r\n".to_vec();
    while trailers.len() <= MAX_TRAILERS + 16 {
        trailers.extend_from_slice(b"X-Filler: 0123456789abcdef0123456789\r\n");
    }
    assert_eq!(
        run(&trailers).map(|_| ()),
        Err(ChunkedError::TrailersTooLarge)
    );
}

#[test]
fn a_huge_chunk_streams_without_buffering() {
    let mut body = ChunkedBody::new();
    let mut out = Vec::new();
    body.feed(b"ffffffffffffffff\r\n", &mut out).unwrap();
    assert_eq!(out, b"ffffffffffffffff\r\n");
    out.clear();
    let fed = body.feed(&[7u8; 1000], &mut out).unwrap();
    assert_eq!((fed.consumed, fed.done, out.len()), (1000, false, 1000));
}
