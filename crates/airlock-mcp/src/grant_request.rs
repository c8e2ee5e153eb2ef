//! `request_network_grant`: the model asks for one destination its box's policy refuses, with a
//! reason. The model only asks: the person at the client (MCP elicitation) says yes or no, and
//! a client that cannot be asked gets the exact grant that would allow it, to pass on. A yes
//! widens the box's allowlist by exactly that grant for the rest of the session; the proxy
//! still runs its whole decision for every connection (deny rules win, a name that resolves to
//! a private address stays refused).

use airlock_policy::GrantList;
use airlock_proxy::addr::classify;
use airlock_proxy::approval::GrantTarget;
use rmcp::model::JsonObject;

/// Longest reason shown to the person.
const MAX_REASON: usize = 500;

/// What the model asked for, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantAsk {
    /// `NAME:PORT` or `IP:PORT` (`[IPv6]:PORT`), normalised.
    pub grant: String,
    /// Which list of the policy it goes into.
    pub list: GrantList,
    pub reason: String,
}

/// The model's `reason` in a grant request's arguments, as the person is shown it: trimmed,
/// control characters blanked, cut at [`MAX_REASON`] characters.
pub fn reason_of(args: &JsonObject) -> Result<String, String> {
    let reason = args
        .get("reason")
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or("give `reason`: one sentence the user reads before deciding")?;
    Ok(reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON)
        .collect())
}

impl GrantAsk {
    /// The request in the tool's arguments, or why it cannot be asked about.
    pub fn parse(args: &JsonObject) -> Result<GrantAsk, String> {
        let host = args
            .get("host")
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or("give `host`: the host name or IP address the refusal named")?;
        let port = args
            .get("port")
            .and_then(|v| v.as_u64())
            .filter(|p| (1..=65535).contains(p))
            .ok_or("give `port`: a number between 1 and 65535")?;
        let reason = reason_of(args)?;
        if host.contains(['*', '/']) {
            return Err(format!(
                "{host:?} is not one host: ask for exactly the host the refusal named (no wildcard, no range)"
            ));
        }
        let text = match host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        let target = GrantTarget::parse(&text).map_err(|e| e.to_string())?;
        let list = match &target {
            GrantTarget::Host { .. } => GrantList::AllowDomain,
            GrantTarget::Range(range) => {
                if !classify(range.net.addr()).is_public() {
                    return Err(format!("{host} is not a public address: private, loopback, link-local (cloud metadata) and other special addresses are never granted through a request; the user may add --allow-ip for it"));
                }
                GrantList::AllowIp
            }
        };
        Ok(GrantAsk {
            grant: target.to_string(),
            list,
            reason,
        })
    }

    /// The flag and policy-file line that allow it, for a person to add.
    pub fn remedy(&self) -> String {
        let flag = match self.list {
            GrantList::AllowDomain => "--allow-domain",
            GrantList::AllowIp => "--allow-ip",
        };
        format!(
            "{flag} {} (in a policy file: [network] {} = [\"{}\"])",
            self.grant,
            self.list.key(),
            self.grant
        )
    }
}

#[cfg(test)]
#[path = "grant_request_tests.rs"]
mod tests;
