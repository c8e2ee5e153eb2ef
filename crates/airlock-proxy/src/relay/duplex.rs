//! Both directions of one tunnel, on the proxy's event loop.

use super::{pump::pump, Meter, RelayError};
use tokio::net::TcpStream;

/// Relays both ways until both sides have sent end of file (each EOF is passed on as a
/// half-close, the other direction continues) or one direction fails, which ends both.
/// Returns why it ended early, if it did.
pub(crate) async fn relay(
    client: &TcpStream,
    upstream: &TcpStream,
    up: Meter<'_>,
    down: Meter<'_>,
) -> Result<(), RelayError> {
    let up = pump(client, upstream, &up);
    let down = pump(upstream, client, &down);
    tokio::pin!(up, down);
    let (mut up_done, mut down_done) = (false, false);
    while !(up_done && down_done) {
        tokio::select! {
            r = &mut up, if !up_done => { r?; up_done = true; }
            r = &mut down, if !down_done => { r?; down_done = true; }
        }
    }
    Ok(())
}
