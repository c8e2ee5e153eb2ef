//! Why a request head was refused, and the HTTP status that says so.

/// A request head the proxy refuses. Every message is a fixed sentence (no request bytes are
/// echoed), fit for the body of the response built with [`super::error_response`] and
/// [`HttpError::status`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The head did not end within [`super::MAX_HEAD`] bytes.
    #[error("the request head is larger than {} bytes", super::MAX_HEAD)]
    HeadTooLarge,
    /// More than [`super::MAX_HEADERS`] header lines.
    #[error("the request has more than {} header lines", super::MAX_HEADERS)]
    TooManyHeaders,
    /// A CR that is not followed by LF.
    #[error("the request head contains a carriage return that does not end a line")]
    BareCarriageReturn,
    /// The first line is not `METHOD SP target SP HTTP/1.x`.
    #[error("malformed request line: {0}")]
    RequestLine(&'static str),
    /// An `HTTP/x.y` version other than 1.0 and 1.1.
    #[error("unsupported HTTP version: use HTTP/1.0 or HTTP/1.1")]
    UnsupportedVersion,
    /// The request target is malformed.
    #[error("invalid request target: {0}")]
    Target(&'static str),
    /// An origin-form or asterisk-form target: the client is talking to the proxy as if it
    /// were the origin server.
    #[error("the request target is not an absolute http:// URI: configure this address as an HTTP proxy")]
    NotProxyRequest,
    /// `https://` in an absolute-URI request.
    #[error("https URLs must be requested through a CONNECT tunnel, not as an absolute URI")]
    HttpsNeedsConnect,
    /// A scheme other than `http` (or `https`).
    #[error("unsupported URL scheme: only http:// URIs and CONNECT are proxied")]
    UnsupportedScheme,
    /// `user@` or `user:pass@` before the host. Refused rather than dropped, because the same
    /// URL can name a different host depending on which parser reads it.
    #[error("userinfo in proxy requests is refused: remove the `user@` part from the URL")]
    Userinfo,
    /// The host or port is malformed.
    #[error("invalid host or port: {0}")]
    Authority(&'static str),
    /// A header line starting with whitespace (obsolete line folding).
    #[error("folded header lines (obs-fold) are refused")]
    ObsFold,
    /// A malformed header line.
    #[error("malformed header: {0}")]
    Header(&'static str),
    /// Content-Length / Transfer-Encoding that could frame the body two ways.
    #[error("ambiguous message framing: {0}")]
    Framing(&'static str),
}

impl HttpError {
    /// The status code of the response to send before closing the connection.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::HeadTooLarge | HttpError::TooManyHeaders => 431,
            HttpError::UnsupportedVersion => 505,
            HttpError::BareCarriageReturn
            | HttpError::RequestLine(_)
            | HttpError::Target(_)
            | HttpError::NotProxyRequest
            | HttpError::HttpsNeedsConnect
            | HttpError::UnsupportedScheme
            | HttpError::Userinfo
            | HttpError::Authority(_)
            | HttpError::ObsFold
            | HttpError::Header(_)
            | HttpError::Framing(_) => 400,
        }
    }
}
