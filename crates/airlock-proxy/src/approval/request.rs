//! What an approver is asked: [`ApprovalRequest`], data shared with the policy crate (it
//! crosses the host process's control socket and the server's API unchanged).

pub use airlock_policy::ApprovalRequest;

use std::net::SocketAddr;
use std::sync::Arc;

/// Names the box's processes that hold a connection to the proxy, given the connection's
/// client address and the proxy's listening address (both inside the box's network
/// namespace), for [`ApprovalRequest::process`]. Blocking (it reads `/proc`); called only for
/// a connection about to be asked about, never on the allowed path.
pub type PeerNamer = Arc<dyn Fn(SocketAddr, SocketAddr) -> Option<String> + Send + Sync>;

/// A held connection's two ends, and who can name its client.
#[derive(Clone)]
pub(crate) struct Peer {
    pub namer: PeerNamer,
    pub client: SocketAddr,
    pub listener: SocketAddr,
}

impl Peer {
    /// The processes holding the connection, off the proxy's event loop.
    pub(crate) async fn name(&self) -> Option<String> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || (me.namer)(me.client, me.listener))
            .await
            .ok()
            .flatten()
    }
}
