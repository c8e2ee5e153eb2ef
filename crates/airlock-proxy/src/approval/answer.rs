//! What an approver answers.

use super::error::ApprovalError;
use airlock_policy::{ApprovalAnswer, ApprovalScope};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Yes or no (the policy crate's data type, under the proxy's short name).
pub use airlock_policy::ApprovalVerdict as Verdict;

/// An answer as an approver writes it: one JSON object, e.g.
/// `{"id":1,"answer":"allow","scope":"run","ttl_secs":600,"byte_budget":1048576}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerLine {
    /// The request's `id`.
    pub id: u64,
    pub answer: Verdict,
    /// Default `once`.
    #[serde(default)]
    pub scope: ApprovalScope,
    /// The grant's time to live (scope `run`/`save`); none: until the box ends.
    #[serde(default)]
    pub ttl_secs: Option<u64>,
    /// Bytes (both directions, all its connections) the grant may move.
    #[serde(default)]
    pub byte_budget: Option<u64>,
    /// The grant to make instead of the request's own (it must contain the request).
    #[serde(default)]
    pub grant: Option<String>,
}

/// An answer to one request, with who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub verdict: Verdict,
    pub scope: ApprovalScope,
    pub ttl: Option<Duration>,
    pub byte_budget: Option<u64>,
    pub grant: Option<String>,
    /// Who answered, as the audit log names them.
    pub by: String,
}

impl Answer {
    /// A no from `by`.
    pub fn deny(by: impl Into<String>) -> Answer {
        Answer {
            verdict: Verdict::Deny,
            scope: ApprovalScope::Once,
            ttl: None,
            byte_budget: None,
            grant: None,
            by: by.into(),
        }
    }
}

/// Longest time to live an answer may give a grant (a day); longer is refused, not cut.
const MAX_TTL_SECS: u64 = 86_400;

impl AnswerLine {
    /// The line an answer to request `id` that crossed a process boundary (the server's API,
    /// a host process's control socket) would be: checked by [`AnswerLine::into_answer`]
    /// exactly as the approver program's.
    pub fn of(id: u64, answer: ApprovalAnswer) -> AnswerLine {
        AnswerLine {
            id,
            answer: answer.answer,
            scope: answer.scope,
            ttl_secs: answer.ttl_secs,
            byte_budget: answer.byte_budget,
            grant: answer.grant,
        }
    }

    /// Parses one line an approver wrote.
    pub fn parse(line: &str) -> Result<AnswerLine, ApprovalError> {
        serde_json::from_str(line.trim()).map_err(|e| ApprovalError::BadAnswer {
            problem: e.to_string(),
        })
    }

    /// The answer, credited to `by`. A time to live of 0 or above a day is refused.
    pub fn into_answer(self, by: impl Into<String>) -> Result<Answer, ApprovalError> {
        if let Some(ttl) = self.ttl_secs {
            if ttl == 0 || ttl > MAX_TTL_SECS {
                return Err(ApprovalError::BadAnswer {
                    problem: format!("ttl_secs {ttl} is not between 1 and {MAX_TTL_SECS}"),
                });
            }
        }
        Ok(Answer {
            verdict: self.answer,
            scope: self.scope,
            ttl: self.ttl_secs.map(Duration::from_secs),
            byte_budget: self.byte_budget,
            grant: self.grant,
            by: by.into(),
        })
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
