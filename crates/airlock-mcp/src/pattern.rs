//! Tool-name patterns (`read_*`, `search`, `?et`) and the allow/deny filter built from
//! `--tools` and `--deny-tools`: deny wins over allow, and with an allow list a tool must match
//! one of its patterns.

/// Why a pattern list is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    #[error("{flag} has an empty pattern; give comma-separated tool names or globs such as 'read_*,search'")]
    Empty { flag: &'static str },
    #[error("{flag} pattern {pattern:?} has a character other than letters, digits, '_', '-', '.', '/', '*' or '?'")]
    BadChar { flag: &'static str, pattern: String },
}

/// One glob over tool names: `*` matches any run of characters, `?` exactly one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPattern(String);

impl ToolPattern {
    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        glob(self.0.as_bytes(), name.as_bytes())
    }
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(c) if *c == b'?' || *c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

/// Parses `read_*,search` (commas; repeated flags are concatenated by the caller).
pub fn parse_patterns(
    flag: &'static str,
    values: &[String],
) -> Result<Vec<ToolPattern>, PatternError> {
    let mut out = Vec::new();
    for value in values {
        for part in value.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(PatternError::Empty { flag });
            }
            if !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./*?".contains(&b))
            {
                return Err(PatternError::BadChar {
                    flag,
                    pattern: part.to_string(),
                });
            }
            out.push(ToolPattern(part.to_string()));
        }
    }
    Ok(out)
}

/// What the filter says about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolVerdict {
    Allowed,
    /// An allow list is set and no pattern in it matches.
    NotAllowed {
        allow: String,
    },
    /// A deny pattern matches.
    Denied {
        pattern: String,
    },
}

/// `--tools` (allow list; empty = every tool) and `--deny-tools` (deny list; wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    pub allow: Vec<ToolPattern>,
    pub deny: Vec<ToolPattern>,
}

impl ToolFilter {
    /// Builds the filter from the flags' values.
    pub fn from_flags(tools: &[String], deny_tools: &[String]) -> Result<ToolFilter, PatternError> {
        Ok(ToolFilter {
            allow: parse_patterns("--tools", tools)?,
            deny: parse_patterns("--deny-tools", deny_tools)?,
        })
    }

    /// Whether `name` may be listed and called.
    pub fn verdict(&self, name: &str) -> ToolVerdict {
        if let Some(p) = self.deny.iter().find(|p| p.matches(name)) {
            return ToolVerdict::Denied {
                pattern: p.as_str().to_string(),
            };
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.matches(name)) {
            return ToolVerdict::NotAllowed {
                allow: self
                    .allow
                    .iter()
                    .map(ToolPattern::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            };
        }
        ToolVerdict::Allowed
    }
}

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
