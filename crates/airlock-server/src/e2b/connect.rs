//! The Connect protocol with the JSON codec, as E2B's SDKs speak it to envd: unary calls
//! (`application/json` in and out), server streams (one enveloped request, a chunked stream of
//! enveloped messages ending with an end-of-stream frame) and client streams (a stream of
//! envelopes). Everything here is bounded; malformed input becomes `invalid_argument`.
//!
//! An envelope is `[flags: u8][length: u32 big-endian][message]`. Flag `0x01` marks a compressed
//! message (never used by the SDKs, refused here); flag `0x02` marks the end-of-stream frame,
//! whose message is `{}` or `{"error": {"code", "message"}}`.

use super::error::E2bError;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;

/// The largest message accepted in either direction (a unary body or one envelope).
pub const MAX_MESSAGE: usize = 16 << 20;
/// The content type of unary calls.
pub const UNARY_CONTENT_TYPE: &str = "application/json";
/// The content type of streaming calls.
pub const STREAM_CONTENT_TYPE: &str = "application/connect+json";
/// Envelope flag: the message is compressed.
pub const FLAG_COMPRESSED: u8 = 0x01;
/// Envelope flag: the end-of-stream frame.
pub const FLAG_END_STREAM: u8 = 0x02;

/// One envelope of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub flags: u8,
    pub message: Bytes,
}

fn invalid(msg: impl Into<String>) -> E2bError {
    E2bError::InvalidArgument(msg.into())
}

/// The media type of a request, lowercased and without parameters (`""` if absent).
fn media_type(headers: &HeaderMap) -> String {
    let raw = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    raw.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The call's deadline from `Connect-Timeout-Ms`, if given and valid.
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let ms = headers
        .get("connect-timeout-ms")?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(Duration::from_millis(ms))
}

/// Decodes one JSON message (proto3 JSON: unknown fields are ignored by the target types; an
/// empty message counts as `{}`).
pub fn decode<T: DeserializeOwned>(message: &[u8]) -> Result<T, E2bError> {
    let message = if message.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        message
    };
    serde_json::from_slice(message).map_err(|e| {
        invalid(format!(
            "the request message is not valid JSON for this method: {e}"
        ))
    })
}

/// Parses a unary request body: `application/json` (or no content type), at most
/// [`MAX_MESSAGE`] bytes.
pub fn parse_unary<T: DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, E2bError> {
    let media = media_type(headers);
    if !media.is_empty() && media != UNARY_CONTENT_TYPE {
        return Err(invalid(format!(
            "content type {media:?} is not supported; send the JSON codec ({UNARY_CONTENT_TYPE})"
        )));
    }
    if body.len() > MAX_MESSAGE {
        return Err(invalid(format!(
            "the request message is larger than {MAX_MESSAGE} bytes"
        )));
    }
    decode(body)
}

/// Reads a whole request body, refusing one larger than `limit` bytes. Chunked bodies are fine.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, E2bError> {
    let mut chunks = body.into_data_stream();
    let mut all = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| invalid(format!("the request body broke off: {e}")))?;
        if all.len() + chunk.len() > limit {
            return Err(invalid(format!(
                "the request body is larger than {limit} bytes"
            )));
        }
        all.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(all))
}

/// A successful unary response: 200 with the JSON message.
pub fn unary_ok<T: Serialize>(message: &T) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => ([(header::CONTENT_TYPE, UNARY_CONTENT_TYPE)], body).into_response(),
        Err(e) => E2bError::Internal(format!("cannot encode the response: {e}")).connect_response(),
    }
}

/// A failed unary response: the Connect status and `{"code", "message"}`.
pub fn unary_error(e: &E2bError) -> Response {
    e.connect_response()
}

/// One envelope's bytes.
pub fn envelope(flags: u8, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(flags);
    // Messages are bounded far below 4 GiB; a larger one cannot be framed and is cut to an error.
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// The end-of-stream frame: `{}`, or `{"error": {"code", "message"}}`.
pub fn end_frame(error: Option<&E2bError>) -> Bytes {
    let body = match error {
        None => serde_json::json!({}),
        Some(e) => {
            serde_json::json!({ "error": { "code": e.connect_code(), "message": e.to_string() } })
        }
    };
    envelope(FLAG_END_STREAM, body.to_string().as_bytes())
}

/// A data frame carrying `message`.
pub fn data_frame(message: &Value) -> Bytes {
    envelope(0, message.to_string().as_bytes())
}

/// Incremental envelope parser over any byte chunks.
#[derive(Debug, Default)]
pub struct EnvelopeDecoder {
    buf: Vec<u8>,
}

impl EnvelopeDecoder {
    /// Adds bytes as they arrive.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete envelope, if the buffer holds one. A length over [`MAX_MESSAGE`] or a
    /// compressed message is an error.
    pub fn next(&mut self) -> Result<Option<Envelope>, E2bError> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let flags = self.buf[0];
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if len > MAX_MESSAGE {
            return Err(invalid(format!(
                "an envelope announces {len} bytes; the most accepted is {MAX_MESSAGE}"
            )));
        }
        if flags & FLAG_COMPRESSED != 0 {
            return Err(invalid(
                "compressed envelopes are not supported; disable compression in the client",
            ));
        }
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        let message = Bytes::copy_from_slice(&self.buf[5..5 + len]);
        self.buf.drain(..5 + len);
        Ok(Some(Envelope { flags, message }))
    }

    /// Whether bytes of an incomplete envelope are left.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }
}

/// Reads the envelopes of a client stream (or the single envelope of a server-stream request)
/// from a request body as they arrive.
pub struct EnvelopeReader {
    chunks: axum::body::BodyDataStream,
    decoder: EnvelopeDecoder,
    done: bool,
}

impl EnvelopeReader {
    /// A reader of `body`; checks that the request is `application/connect+json`.
    pub fn new(headers: &HeaderMap, body: Body) -> Result<EnvelopeReader, E2bError> {
        let media = media_type(headers);
        if media != STREAM_CONTENT_TYPE {
            return Err(invalid(format!("content type {media:?} is not supported for a streaming call; send {STREAM_CONTENT_TYPE}")));
        }
        Ok(EnvelopeReader {
            chunks: body.into_data_stream(),
            decoder: EnvelopeDecoder::default(),
            done: false,
        })
    }

    /// The next envelope, or `None` at the end of the body. A body that ends inside an envelope
    /// is an error.
    pub async fn next(&mut self) -> Result<Option<Envelope>, E2bError> {
        loop {
            if let Some(env) = self.decoder.next()? {
                return Ok(Some(env));
            }
            if self.done {
                return if self.decoder.has_partial() {
                    Err(invalid("the request stream ended inside an envelope"))
                } else {
                    Ok(None)
                };
            }
            match self.chunks.next().await {
                Some(Ok(chunk)) => self.decoder.push(&chunk),
                Some(Err(e)) => return Err(invalid(format!("the request stream broke off: {e}"))),
                None => self.done = true,
            }
        }
    }

    /// The next message decoded as `T`, skipping nothing: `None` at the end of the stream.
    pub async fn next_message<T: DeserializeOwned>(&mut self) -> Result<Option<T>, E2bError> {
        match self.next().await? {
            None => Ok(None),
            Some(env) if env.flags & FLAG_END_STREAM != 0 => Ok(None),
            Some(env) => decode(&env.message).map(Some),
        }
    }
}

/// How long a server-stream request's body may take to end after its one message.
const REQUEST_END_WAIT: Duration = Duration::from_secs(10);

/// Parses the request of a server-stream call: exactly one envelope, and the body read to its
/// end. The end matters: a request body left unread (a chunked body's last chunk arriving after
/// its message) makes the server close the connection with bytes unread when the response
/// ends, which the kernel answers with a reset that destroys whatever of a large, fast response
/// the client had not read yet ("Connection reset by peer").
pub async fn parse_stream_request<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
) -> Result<T, E2bError> {
    let mut reader = EnvelopeReader::new(headers, body)?;
    let first = reader
        .next_message::<T>()
        .await?
        .ok_or_else(|| invalid("the streaming request carries no message"))?;
    match tokio::time::timeout(REQUEST_END_WAIT, reader.next()).await {
        Ok(Ok(None)) => Ok(first),
        Ok(Ok(Some(env))) if env.flags & FLAG_END_STREAM != 0 => Ok(first),
        Ok(Ok(Some(_))) => Err(invalid(
            "a server-streaming request carries exactly one message; this one sent more",
        )),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(invalid(format!(
            "the streaming request's body did not end within {} s of its message",
            REQUEST_END_WAIT.as_secs()
        ))),
    }
}

/// A streamed response: 200 `application/connect+json`, one data frame per `Ok` message as it
/// arrives, then the end frame. An `Err` item ends the stream with that error in the end frame;
/// the sender being dropped ends it with `{}`. Errors mid-stream keep HTTP 200, as Connect says.
/// The one exception is the box ending under the stream ([`E2bError::SandboxGone`]): envd dies
/// with its sandbox, so its clients see the connection drop, never an end frame, and that drop
/// is what the SDKs read as "the sandbox was killed". The stream is dropped the same way.
pub fn stream_response(rx: mpsc::Receiver<Result<Value, E2bError>>) -> Response {
    let frames = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(Ok(message)) => {
                Some((Ok::<Bytes, std::io::Error>(data_frame(&message)), Some(rx)))
            }
            Some(Err(e)) if e.drops_stream() => Some((Err(dropped(&e)), None)),
            Some(Err(e)) => Some((Ok(end_frame(Some(&e))), None)),
            None => Some((Ok(end_frame(None)), None)),
        }
    });
    stream_with(Body::from_stream(frames))
}

/// The body error that makes the server drop a streamed response's connection mid-stream (no
/// last chunk is sent), as a client of a killed envd sees it.
pub fn dropped(e: &E2bError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, e.to_string())
}

/// `response` with `Connection: close`: for answers given before the request's body was read to
/// its end, so that an HTTP/1.1 client does not send its next request on this connection.
pub fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// A streamed response that is only the end frame carrying `error` (how a streaming call fails
/// before its first message).
pub fn stream_error(error: &E2bError) -> Response {
    stream_with(Body::from(end_frame(Some(error))))
}

fn stream_with(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, STREAM_CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
