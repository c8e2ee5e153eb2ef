//! HTTP/1.x proxy requests: the head a client inside the box writes to the proxy, either
//! `CONNECT host:port` (a tunnel) or an absolute-URI request such as `GET http://host/path`
//! (forwarded by the proxy).
//!
//! The input is untrusted. Parsing is bounded by [`MAX_HEAD`] and [`MAX_HEADERS`], never panics,
//! and is strict: anything that two HTTP implementations could read differently (userinfo in the
//! authority, percent-encoded hosts, obs-fold, conflicting framing headers) is refused rather
//! than guessed at. Error messages never echo request bytes, so they are safe to put in a
//! response.
//!
//! - `request`: the request line, the target and [`parse_request`].
//! - `authority`: `host:port` as a client would connect to it.
//! - `headers`: header lines and the framing checks against request smuggling.
//! - `chunked`: a chunked request or response body, checked and re-encoded.
//! - `forward`: the head sent upstream for a forwarded request.
//! - `upstream`: the upstream's response head, and the head the client gets instead.
//! - `response`: the responses the proxy itself writes.

mod authority;
mod chunked;
mod error;
mod forward;
mod headers;
mod request;
mod response;
mod upstream;

pub use chunked::{ChunkedBody, ChunkedError, Fed, MAX_CHUNK_LINE, MAX_TRAILERS};
pub use error::HttpError;
pub use forward::forward_head;
pub use headers::{BodyFraming, MAX_HEADERS};
pub use request::{parse_request, HttpVersion, ProxyRequest, MAX_HEAD};
pub use response::{denied_response, error_response, CONNECT_ESTABLISHED};
pub use upstream::{
    parse_response_head, Answering, ResponseBody, UpstreamError, UpstreamHead, MAX_RESPONSE_HEAD,
    MAX_RESPONSE_HEADERS,
};
