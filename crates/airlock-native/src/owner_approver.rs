//! The host process's approver when the box's owner answers (the server): each held
//! connection's request goes to the owner as a typed control message
//! ([`FromHost::ApprovalRequested`]), a request whose deadline passed as
//! [`FromHost::ApprovalWithdrawn`]; the owner's answer comes back as [`ToHost::Approval`] and
//! is checked here exactly as the approver program's line is ([`answer_from_owner`]).
//!
//! [`ToHost::Approval`]: crate::ToHost::Approval

use crate::sandbox_host::FromHost;
use airlock_policy::ApprovalRequest;
pub(crate) use airlock_proxy::approval::answer_from_owner;
use airlock_proxy::approval::{Answer, Approver, Asker, PendingQueue};
use std::sync::Arc;

/// Sends one message to the owner; an error means the owner is gone.
pub(crate) type SendToOwner = Arc<dyn Fn(&FromHost) -> std::io::Result<()> + Send + Sync>;

/// Asks the box's owner over the control socket.
pub(crate) struct OwnerApprover {
    send: SendToOwner,
    pending: Arc<PendingQueue>,
}

/// Who the audit log says is asked.
const NAME: &str = "the owner (api)";

impl OwnerApprover {
    /// The asker for a box whose owner answers over `send`.
    pub(crate) fn asker(send: SendToOwner) -> Asker {
        let pending = Arc::new(PendingQueue::new());
        let approver = Arc::new(OwnerApprover {
            send,
            pending: pending.clone(),
        });
        Asker { approver, pending }
    }
}

impl Approver for OwnerApprover {
    fn name(&self) -> String {
        NAME.into()
    }

    fn ask(&self, request: &ApprovalRequest) {
        let msg = FromHost::ApprovalRequested {
            request: Box::new(request.clone()),
        };
        if (self.send)(&msg).is_err() {
            // Nobody can answer: refused now rather than at the deadline.
            let _ = self
                .pending
                .answer(request.id, Answer::deny(format!("{NAME} (gone)")));
        }
    }

    fn withdrawn(&self, id: u64) {
        let _ = (self.send)(&FromHost::ApprovalWithdrawn { id });
    }
}
