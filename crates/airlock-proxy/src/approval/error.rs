//! Why an approval step failed.

/// An approval that could not be asked, answered or applied. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("approval request #{id} is not waiting (it was answered, withdrawn at its deadline, or never made); list the pending ones and answer one of those")]
    NotPending { id: u64 },
    #[error("the grant {grant:?} in the answer is not valid: {problem}; write NAME:PORT for a host or CIDR[:PORT] for an IP address")]
    BadGrant { grant: String, problem: String },
    #[error("the grant {grant} does not cover the request for {host}:{port}; answer with the request's own grant ({suggested}) or a range that contains it")]
    GrantDoesNotCover {
        grant: String,
        host: String,
        port: u16,
        suggested: String,
    },
    #[error("the answer line is not valid: {problem}; write one JSON object per line, e.g. {{\"id\":1,\"answer\":\"allow\",\"scope\":\"run\"}}")]
    BadAnswer { problem: String },
    #[error("the scope `save` writes the grant to a policy file, which only the terminal approver can do; answer `run` and keep the rule in your own program")]
    SaveUnsupported,
    #[error("--approval {mode} needs someone to ask: give --approver CMD (a program on the host that answers each request; see docs/approvals.md)")]
    NoApprover { mode: String },
    #[error("cannot open airlock's controlling terminal to ask about held connections: {source}; run airlock from a terminal, or give --approver CMD")]
    NoTerminal {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set up the terminal approver: {source}")]
    Terminal {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the approver program `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
}
