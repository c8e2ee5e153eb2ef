#![allow(clippy::unwrap_used)]

use super::*;
use axum::http::HeaderValue;

fn headers(ct: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
    h
}

#[test]
fn unary_requests_parse_json_and_refuse_other_codecs() {
    #[derive(serde::Deserialize, Default)]
    struct P {
        path: String,
    }
    let p: P = parse_unary(
        &headers("application/json"),
        br#"{"path":"/a","unknown":1}"#,
    )
    .unwrap();
    assert_eq!(p.path, "/a");
    let empty: serde_json::Value =
        parse_unary(&headers("application/json; charset=utf-8"), b"").unwrap();
    assert_eq!(empty, serde_json::json!({}));
    let e = parse_unary::<P>(&headers("application/proto"), b"\x0a\x02/a")
        .err()
        .unwrap();
    assert_eq!(e.connect_code(), "invalid_argument");
    assert_eq!(
        parse_unary::<P>(&headers("application/json"), b"{not json")
            .err()
            .unwrap()
            .connect_code(),
        "invalid_argument"
    );
}

#[test]
fn errors_use_connect_codes_and_statuses() {
    let cases = [
        (E2bError::NotFound("x".into()), "not_found", 404),
        (E2bError::AlreadyExists("x".into()), "already_exists", 409),
        (
            E2bError::InvalidArgument("x".into()),
            "invalid_argument",
            400,
        ),
        (
            E2bError::Unauthenticated("x".into()),
            "unauthenticated",
            401,
        ),
        (
            E2bError::DeadlineExceeded("x".into()),
            "deadline_exceeded",
            504,
        ),
        (E2bError::Unimplemented("x".into()), "unimplemented", 501),
        (E2bError::SandboxGone("x".into()), "unavailable", 502),
    ];
    for (e, code, status) in cases {
        assert_eq!(e.connect_code(), code);
        assert_eq!(e.connect_status().as_u16(), status, "{code}");
    }
}

#[test]
fn envelopes_round_trip_in_any_split() {
    let mut wire = envelope(0, br#"{"a":1}"#).to_vec();
    wire.extend_from_slice(&end_frame(Some(&E2bError::NotFound("gone".into()))));
    for split in 0..wire.len() {
        let mut d = EnvelopeDecoder::default();
        let mut got = Vec::new();
        for part in [&wire[..split], &wire[split..]] {
            d.push(part);
            while let Some(env) = d.next().unwrap() {
                got.push(env);
            }
        }
        assert_eq!(got.len(), 2, "split at {split}");
        assert_eq!(
            got[0],
            Envelope {
                flags: 0,
                message: Bytes::from_static(br#"{"a":1}"#)
            }
        );
        assert_eq!(got[1].flags, FLAG_END_STREAM);
        let end: serde_json::Value = serde_json::from_slice(&got[1].message).unwrap();
        assert_eq!(end["error"]["code"], "not_found");
        assert!(!d.has_partial());
    }
    assert_eq!(&end_frame(None)[..], b"\x02\x00\x00\x00\x02{}");
}

#[test]
fn oversized_and_compressed_envelopes_are_refused() {
    let mut d = EnvelopeDecoder::default();
    d.push(&[0, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(d.next().unwrap_err().connect_code(), "invalid_argument");
    let mut d = EnvelopeDecoder::default();
    d.push(&envelope(FLAG_COMPRESSED, b"xx"));
    assert_eq!(d.next().unwrap_err().connect_code(), "invalid_argument");
}

#[tokio::test]
async fn stream_requests_accept_chunked_bodies_and_refuse_truncation() {
    let env = envelope(0, br#"{"path":"/x"}"#);
    let chunks: Vec<Result<Bytes, std::io::Error>> = env
        .chunks(3)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    let v: serde_json::Value = parse_stream_request(&headers(STREAM_CONTENT_TYPE), body)
        .await
        .unwrap();
    assert_eq!(v["path"], "/x");
    let cut = Body::from(env.slice(..env.len() - 1));
    let e = parse_stream_request::<serde_json::Value>(&headers(STREAM_CONTENT_TYPE), cut)
        .await
        .unwrap_err();
    assert_eq!(e.connect_code(), "invalid_argument");
    let wrong = parse_stream_request::<serde_json::Value>(
        &headers("application/json"),
        Body::from(env.clone()),
    )
    .await
    .unwrap_err();
    assert_eq!(wrong.connect_code(), "invalid_argument");
    let none =
        parse_stream_request::<serde_json::Value>(&headers(STREAM_CONTENT_TYPE), Body::empty())
            .await
            .unwrap_err();
    assert_eq!(none.connect_code(), "invalid_argument");
}

/// The request body is read to its end (a last chunk that arrives late included), so the
/// connection never closes with request bytes unread; a second message is refused.
#[tokio::test]
async fn stream_requests_are_read_to_their_end_and_carry_one_message() {
    let env = envelope(0, br#"{"path":"/x"}"#);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let body = Body::from_stream(tokio_stream_of(rx));
    tx.send(Ok(env.clone())).await.unwrap();
    let late = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        tx.send(Ok(end_frame(None))).await.unwrap();
    });
    let started = std::time::Instant::now();
    let v: serde_json::Value = parse_stream_request(&headers(STREAM_CONTENT_TYPE), body)
        .await
        .unwrap();
    assert_eq!(v["path"], "/x");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(150),
        "returned before the body ended"
    );
    late.await.unwrap();
    let mut two = env.to_vec();
    two.extend_from_slice(&env);
    let e =
        parse_stream_request::<serde_json::Value>(&headers(STREAM_CONTENT_TYPE), Body::from(two))
            .await
            .unwrap_err();
    assert_eq!(e.connect_code(), "invalid_argument");
    assert!(e.to_string().contains("exactly one message"), "{e}");
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[tokio::test]
async fn client_streams_yield_every_message() {
    let mut wire = envelope(0, br#"{"n":1}"#).to_vec();
    wire.extend_from_slice(&envelope(0, br#"{"n":2}"#));
    let mut r = EnvelopeReader::new(&headers(STREAM_CONTENT_TYPE), Body::from(wire)).unwrap();
    let mut seen = Vec::new();
    while let Some(v) = r.next_message::<serde_json::Value>().await.unwrap() {
        seen.push(v["n"].as_i64().unwrap());
    }
    assert_eq!(seen, vec![1, 2]);
}

#[tokio::test]
async fn stream_responses_end_with_the_end_frame() {
    async fn collect(res: Response) -> (StatusCode, Vec<Envelope>) {
        let status = res.status();
        assert_eq!(res.headers()[header::CONTENT_TYPE], STREAM_CONTENT_TYPE);
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        let mut d = EnvelopeDecoder::default();
        d.push(&bytes);
        let mut out = Vec::new();
        while let Some(e) = d.next().unwrap() {
            out.push(e);
        }
        (status, out)
    }
    let (tx, rx) = mpsc::channel(4);
    tx.send(Ok(serde_json::json!({"event": {"start": {"pid": 7}}})))
        .await
        .unwrap();
    drop(tx);
    let (status, frames) = collect(stream_response(rx)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(frames.len(), 2);
    assert_eq!(&frames[1].message[..], b"{}");
    let (tx, rx) = mpsc::channel(4);
    tx.send(Ok(serde_json::json!({}))).await.unwrap();
    tx.send(Err(E2bError::NotFound("no such process".into())))
        .await
        .unwrap();
    tx.send(Ok(serde_json::json!({"after": true})))
        .await
        .unwrap();
    let (status, frames) = collect(stream_response(rx)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(frames.len(), 2, "nothing after the error");
    assert_eq!(frames[1].flags, FLAG_END_STREAM);
    let (_, frames) = collect(stream_error(&E2bError::Unimplemented("x".into()))).await;
    assert_eq!(frames.len(), 1);
    assert!(std::str::from_utf8(&frames[0].message)
        .unwrap()
        .contains("unimplemented"));
}

#[test]
fn connect_timeout_header() {
    let mut h = HeaderMap::new();
    assert_eq!(timeout(&h), None);
    h.insert("connect-timeout-ms", HeaderValue::from_static("60000"));
    assert_eq!(timeout(&h), Some(Duration::from_secs(60)));
    h.insert("connect-timeout-ms", HeaderValue::from_static("soon"));
    assert_eq!(timeout(&h), None);
}
