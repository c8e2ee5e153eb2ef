//! Why a forwarded request ended before its response was complete.

use crate::http::{ChunkedError, UpstreamError};
use crate::relay::RelayError;

/// An exchange that ended early. [`ExchangeError::reason`] is the token recorded in the
/// connection's event; [`ExchangeError::status`] the response the client gets, if nothing was
/// written to it yet.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// The client's chunked body is malformed; the upstream connection is dropped.
    #[error("the request's chunked body is malformed: {0}")]
    Body(ChunkedError),
    /// The upstream's response head cannot be passed on safely.
    #[error("the upstream's response was refused: {0}")]
    Upstream(UpstreamError),
    /// More interim (1xx) responses than [`super::response::MAX_INTERIM`].
    #[error(
        "the upstream sent more than {} interim responses",
        super::response::MAX_INTERIM
    )]
    TooManyInterim,
    /// The upstream closed before its response head was complete.
    #[error("the upstream closed the connection without a complete response head")]
    NoResponse,
    /// The upstream closed before the body its head declared was complete.
    #[error("the upstream closed the connection before the response body was complete")]
    Truncated,
    /// The response body's chunked framing is malformed.
    #[error("the upstream's chunked response body is malformed: {0}")]
    ResponseBody(ChunkedError),
    /// Reading or writing a socket failed, or the byte budget is used up.
    #[error("the relay failed")]
    Relay(#[from] RelayError),
}

impl ExchangeError {
    /// The event's `reason`.
    pub(crate) fn reason(&self) -> String {
        match self {
            ExchangeError::Body(e) => format!("bad-request-body: {e}"),
            ExchangeError::Upstream(e) => format!("bad-upstream-response: {e}"),
            ExchangeError::ResponseBody(e) => format!("bad-upstream-response: {e}"),
            ExchangeError::TooManyInterim | ExchangeError::NoResponse => {
                format!("bad-upstream-response: {self}")
            }
            ExchangeError::Truncated => "upstream-response-truncated".into(),
            ExchangeError::Relay(e) => e.reason(),
        }
    }

    /// The status of the response the proxy writes itself when the client has not received
    /// anything yet; `None` when the connection is just cut (a failing socket, or the byte
    /// budget used up).
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            ExchangeError::Body(_) => Some(400),
            ExchangeError::Upstream(_)
            | ExchangeError::TooManyInterim
            | ExchangeError::NoResponse
            | ExchangeError::Truncated
            | ExchangeError::ResponseBody(_) => Some(502),
            // Cut, as every other tunnel is: no byte beyond the budget, not even an answer.
            ExchangeError::Relay(_) => None,
        }
    }
}
