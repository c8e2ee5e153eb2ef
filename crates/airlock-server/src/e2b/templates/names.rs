//! E2B's template names and tags as template store names: `NAME` (E2B's `NAME:latest`) is the
//! store name `NAME`, and `NAME:TAG` is the store name `NAME:TAG`. So a built template is
//! found by `Sandbox.create("NAME")` or `Sandbox.create("NAME:TAG")` like any stored one.

/// The tag a name without one means.
pub const LATEST: &str = "latest";

/// Why a name or tag is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NameError(String);

/// A template name split into its name and tag (`None`: no tag given).
pub fn split(full: &str) -> Result<(String, Option<String>), NameError> {
    let (name, tag) = match full.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (full, None),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !name_ok {
        return Err(NameError(format!(
            "{full:?} is not a template name: use letters, digits, `-`, `_` and `.`, starting with a letter or digit, optionally followed by `:TAG`"
        )));
    }
    if let Some(t) = tag {
        check_tag(t)?;
    }
    Ok((name.to_string(), tag.map(str::to_string)))
}

/// Checks one tag.
pub fn check_tag(tag: &str) -> Result<(), NameError> {
    let ok = !tag.is_empty()
        && tag.len() <= 27
        && tag
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    match ok {
        true => Ok(()),
        false => Err(NameError(format!(
            "{tag:?} is not a tag: use up to 27 letters, digits, `-`, `_` and `.`, starting with a letter or digit"
        ))),
    }
}

/// The store name of `name` tagged `tag`.
pub fn store_name(name: &str, tag: &str) -> String {
    match tag {
        LATEST => name.to_string(),
        t => format!("{name}:{t}"),
    }
}

/// The store name a client's `NAME[:TAG]` means.
pub fn store_name_of(full: &str) -> String {
    match full.split_once(':') {
        Some((n, t)) => store_name(n, t),
        None => full.to_string(),
    }
}

/// The tag of store name `stored` if it is one of `name`'s.
pub fn tag_of<'a>(stored: &'a str, name: &str) -> Option<&'a str> {
    if stored == name {
        return Some(LATEST);
    }
    stored.strip_prefix(name)?.strip_prefix(':')
}

/// The tags a build of `requested` (`NAME[:TAG]`) with `tags` assigns: the name's own tag and
/// `tags`, or `latest` when there are neither.
pub fn build_tags(requested: Option<&str>, tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = requested.into_iter().map(str::to_string).collect();
    for t in tags {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    if out.is_empty() {
        out.push(LATEST.into());
    }
    out
}

/// A UUID-shaped build id for a template digest (`sha256:…`): E2B's tag routes name builds by
/// UUID, and a stored template's digest is what identifies its build here.
pub fn build_id_of_digest(digest: &str) -> String {
    let hex: String = digest
        .strip_prefix("sha256:")
        .unwrap_or(digest)
        .chars()
        .filter(|c| c.is_ascii_hexdigit())
        .chain(std::iter::repeat('0'))
        .take(32)
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
