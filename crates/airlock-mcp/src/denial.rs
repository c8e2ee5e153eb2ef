//! Refusals the model can read: what was refused, by which rule, and what grant would allow it.
//! A refusal is a tool result with `isError: true`, never a protocol error or a hang.

use crate::catalogue::Unlisted;
use crate::pattern::ToolVerdict;
use crate::roots::PathDenied;

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// What was refused.
    pub what: String,
    /// The rule that refused it.
    pub rule: String,
    /// What would allow it.
    pub remedy: String,
}

impl Denial {
    /// The text shown to the model.
    pub fn text(&self) -> String {
        format!(
            "airlock refused: {}. Rule: {}. To allow it: {}.",
            self.what, self.rule, self.remedy
        )
    }

    /// A tool that is not offered (or not offered any more) was called anyway.
    pub fn tool(name: &str, why: &Unlisted) -> Denial {
        let what = format!("the call to tool {name:?}");
        match why {
            Unlisted::Unknown => Denial { what, rule: "airlock has no tool by that name".into(), remedy: "call one of the tools that tools/list returns".into() },
            Unlisted::Profile(p) => Denial {
                what,
                rule: format!("profile {p} offers only tools that read (no tool that writes files or runs code or commands)"),
                remedy: "start airlock with --profile workspace-write".into(),
            },
            Unlisted::Filter(ToolVerdict::Denied { pattern }) => {
                Denial { what, rule: format!("--deny-tools pattern {pattern:?}"), remedy: format!("remove {pattern:?} from --deny-tools") }
            }
            Unlisted::Filter(ToolVerdict::NotAllowed { allow }) => {
                Denial { what, rule: format!("it matches no pattern of --tools {allow:?}"), remedy: format!("add {name} to --tools") }
            }
            Unlisted::NoApprovals => Denial {
                what,
                rule: "request_network_grant is offered only when approvals are on".into(),
                remedy: "start airlock mcp with --net proxy --approval on-request".into(),
            },
            Unlisted::Filter(ToolVerdict::Allowed) => Denial { what, rule: "none".into(), remedy: "retry".into() },
        }
    }

    /// A path outside the box's grants.
    pub fn path(action: &str, why: &PathDenied) -> Denial {
        Denial {
            what: format!("{action}: {why}"),
            rule: "file tools may only touch the directories granted to the box".into(),
            remedy: why.remedy(),
        }
    }
}

#[cfg(test)]
#[path = "denial_tests.rs"]
mod tests;
