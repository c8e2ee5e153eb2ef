//! What the proxy reads after a head: a chunked body (`ChunkedBody`, from the client or the
//! upstream) fed in arbitrary pieces, and an upstream response head (`parse_response_head`).
//! Checks that the body ends at the same byte however it is split, never past its input, and
//! that its re-encoding is itself a valid chunked body of the same data; and that the head the
//! client gets is one well-formed head that says `Connection: close`.
#![no_main]

use airlock_proxy::http::{
    parse_response_head, Answering, ChunkedBody, HttpVersion, MAX_RESPONSE_HEAD,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, data)) = data.split_first() else {
        return;
    };
    check_chunked(data, usize::from(split) + 1);
    for head_request in [false, true] {
        let answering = Answering {
            head_request,
            version: HttpVersion::Http11,
        };
        check_response_head(data, answering);
    }
});

/// Feeds `data` whole and in pieces of `piece` bytes: same outcome, same output.
fn check_chunked(data: &[u8], piece: usize) {
    let mut whole = ChunkedBody::new();
    let mut whole_out = Vec::new();
    let whole_result = whole.feed(data, &mut whole_out);

    let mut split = ChunkedBody::new();
    let mut split_out = Vec::new();
    let mut consumed = 0;
    let mut split_err = None;
    for part in data.chunks(piece) {
        match split.feed(part, &mut split_out) {
            Ok(fed) => {
                assert!(fed.consumed <= part.len());
                consumed += fed.consumed;
                if fed.done {
                    break;
                }
                assert_eq!(fed.consumed, part.len(), "stopped early without being done");
            }
            Err(e) => {
                split_err = Some(e);
                break;
            }
        }
    }
    match whole_result {
        Ok(fed) => {
            assert!(split_err.is_none());
            assert_eq!(fed.done, split.is_done());
            if fed.done {
                assert_eq!(fed.consumed, consumed);
                assert_eq!(whole_out, split_out);
                // The re-encoding is canonical: reading it again gives itself, all of it.
                let mut again = ChunkedBody::new();
                let mut again_out = Vec::new();
                let re = again.feed(&whole_out, &mut again_out);
                assert_eq!(
                    re.ok().map(|f| (f.consumed, f.done)),
                    Some((whole_out.len(), true))
                );
                assert_eq!(again_out, whole_out);
            }
        }
        Err(e) => assert_eq!(split_err, Some(e)),
    }
}

fn check_response_head(data: &[u8], answering: Answering) {
    let Ok(Some((head, len))) = parse_response_head(data, answering) else {
        return;
    };
    assert!(len <= data.len() && len <= MAX_RESPONSE_HEAD);
    let out = &head.client_head;
    assert!(out.ends_with(b"\r\n\r\n"));
    assert_eq!(
        out.windows(4).position(|w| w == b"\r\n\r\n"),
        Some(out.len() - 4)
    );
    for (i, &b) in out.iter().enumerate() {
        match b {
            b'\n' => assert!(i > 0 && out[i - 1] == b'\r'),
            b'\r' => assert_eq!(out.get(i + 1), Some(&b'\n')),
            0 => panic!("NUL in the client head"),
            _ => {}
        }
    }
    let closes = out
        .split(|&b| b == b'\n')
        .filter(|l| l.len() >= 11 && l[..11].eq_ignore_ascii_case(b"connection:"))
        .count();
    assert_eq!(closes, usize::from(!head.is_interim()));
}
