//! One forwarded plain-HTTP request and its response. The proxy passes on exactly one request
//! per client connection (its head, then the body its checked framing declares) and exactly
//! one response (interim ones, the final head with `Connection: close`, then the body as that
//! head frames it), then closes both connections. Whatever the client sends after its request
//! (a pipelined or smuggled second request) is read and dropped, never forwarded; whatever the
//! upstream sends after its response never reaches the client.
//!
//! - `body`: the request body, client → upstream, then the dropped rest.
//! - `response`: the response, upstream → client.
//! - `session`: both directions at once, refusals, and a clean close.
//! - `error`: why an exchange ended early.

mod body;
mod error;
mod response;
mod session;

pub(crate) use session::{forward_one, Request};
