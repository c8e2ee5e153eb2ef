//! `airlock sandbox cp`: a file into a sandbox (`PUT .../files`, streamed from the local file
//! or stdin) or out of it (`GET .../files`, streamed to the local file or stdout). Neither
//! direction holds the file in memory.

use super::api::{segment, Api};
use crate::cli::CpArgs;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// One side of a copy.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// `-`: stdin as a source, stdout as a destination.
    Std,
    Local(PathBuf),
    /// `ID:/absolute/path`.
    Sandbox {
        id: String,
        path: String,
    },
}

/// Parses one side: `-`, `ID:/abs/path`, or a local path (`./a:b` for a local name with a
/// colon).
pub(super) fn endpoint(arg: &str) -> Result<Endpoint> {
    if arg == "-" {
        return Ok(Endpoint::Std);
    }
    match arg.split_once(':') {
        Some((id, path)) if !id.is_empty() && !id.contains('/') => {
            if !path.starts_with('/') {
                bail!("{arg:?}: the path inside the sandbox must be absolute, e.g. {id}:/tmp/file (for a local file whose name has a colon, write ./{arg})");
            }
            Ok(Endpoint::Sandbox {
                id: id.to_string(),
                path: path.to_string(),
            })
        }
        _ => Ok(Endpoint::Local(PathBuf::from(arg))),
    }
}

/// Copies SRC to DST; exactly one of them is in a sandbox.
pub fn copy(api: &Api, args: &CpArgs) -> Result<i32> {
    match (endpoint(&args.src)?, endpoint(&args.dst)?) {
        (Endpoint::Sandbox { .. }, Endpoint::Sandbox { .. }) => {
            bail!("both sides are in a sandbox; copy to a local file first, then from it")
        }
        (Endpoint::Sandbox { id, path }, local) => download(api, &id, &path, local),
        (local, Endpoint::Sandbox { id, path }) => upload(api, local, &id, &path),
        _ => bail!("neither side is in a sandbox; write one side as ID:/absolute/path"),
    }
}

fn files_path(id: &str) -> String {
    format!("/v1/sandboxes/{}/files", segment(id))
}

fn upload(api: &Api, src: Endpoint, id: &str, path: &str) -> Result<i32> {
    // The server refuses an unknown sandbox before reading the body, which the client would see
    // as a broken pipe mid-upload; asking first turns that into the server's own message.
    api.json("GET", &format!("/v1/sandboxes/{}", segment(id)), None)?;
    let req = |path: &str| {
        api.request("PUT", &files_path(id))
            .query("path", path)
            .set("Content-Type", "application/octet-stream")
    };
    let sent = match src {
        Endpoint::Local(local) => {
            let file = File::open(&local).with_context(|| {
                format!("cannot open {} to copy it; check the path", local.display())
            })?;
            let meta = file
                .metadata()
                .with_context(|| format!("cannot read what {} is", local.display()))?;
            if meta.is_dir() {
                bail!(
                    "{} is a directory; cp copies one file at a time",
                    local.display()
                );
            }
            // `ID:/dir/` names a directory: the file keeps its name there.
            let path = match (path.ends_with('/'), local.file_name()) {
                (true, Some(name)) => format!("{path}{}", name.to_string_lossy()),
                _ => path.to_string(),
            };
            req(&path).send(file)
        }
        _ => req(path).send(std::io::stdin().lock()),
    };
    api.answer(sent)?;
    Ok(0)
}

fn download(api: &Api, id: &str, path: &str, dst: Endpoint) -> Result<i32> {
    let resp = api.answer(
        api.request("GET", &files_path(id))
            .query("path", path)
            .call(),
    )?;
    let mut body = resp.into_reader();
    let broke = |e: std::io::Error| {
        anyhow::Error::new(e).context(format!("the copy of {id}:{path} broke off; retry"))
    };
    match dst {
        Endpoint::Local(local) => {
            let local = into_dir(local, path);
            let mut file = File::create(&local).with_context(|| {
                format!(
                    "cannot create {}; check that its directory exists and is writable",
                    local.display()
                )
            })?;
            if let Err(e) = std::io::copy(&mut body, &mut file).and_then(|_| file.flush()) {
                // Leave no truncated file that looks complete.
                let _ = std::fs::remove_file(&local);
                return Err(broke(e));
            }
            file.sync_all()
                .with_context(|| format!("cannot write {} to disk", local.display()))?;
        }
        _ => {
            let mut out = std::io::stdout().lock();
            match std::io::copy(&mut body, &mut out).and_then(|_| out.flush()) {
                Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(0),
                other => other.map_err(broke)?,
            }
        }
    }
    Ok(0)
}

/// A local directory as destination means the file keeps its name inside it.
fn into_dir(local: PathBuf, remote: &str) -> PathBuf {
    match Path::new(remote).file_name() {
        Some(name) if local.is_dir() => local.join(name),
        _ => local,
    }
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
