//! Paths inside a writable workspace that stay read-only: writing them would let code in the box
//! run code on the host later (a git hook on the next commit, a shell rc file on the next login,
//! an editor or agent config that starts tools).

/// Whether a protected path is a file or a directory when it has to be created as a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtectedKind {
    File,
    Dir,
}

/// One protected path, relative to the workspace root, with the reason it is protected.
#[derive(Debug, Clone, Copy)]
pub struct ProtectedPath {
    pub relative: &'static str,
    pub kind: ProtectedKind,
    pub reason: &'static str,
}

const fn p(relative: &'static str, kind: ProtectedKind, reason: &'static str) -> ProtectedPath {
    ProtectedPath {
        relative,
        kind,
        reason,
    }
}

/// The protected paths of every writable workspace.
pub const PROTECTED_PATHS: &[ProtectedPath] = &[
    p(".git/hooks", ProtectedKind::Dir, "git runs hooks on the host at the next commit, checkout or push"),
    p(".git/config", ProtectedKind::File, "git config can name programs (core.fsmonitor, core.sshCommand, filters) that run on the host"),
    p(".bashrc", ProtectedKind::File, "shell start-up file, run by a host shell opened here"),
    p(".bash_profile", ProtectedKind::File, "shell start-up file"),
    p(".bash_login", ProtectedKind::File, "shell start-up file"),
    p(".profile", ProtectedKind::File, "shell start-up file"),
    p(".zshrc", ProtectedKind::File, "shell start-up file"),
    p(".zshenv", ProtectedKind::File, "shell start-up file"),
    p(".zprofile", ProtectedKind::File, "shell start-up file"),
    p(".zlogin", ProtectedKind::File, "shell start-up file"),
    p(".envrc", ProtectedKind::File, "direnv runs it when a host shell enters the directory"),
    p(".mcp.json", ProtectedKind::File, "agent config: names MCP servers an agent starts on the host"),
    p(".vscode", ProtectedKind::Dir, "editor config: tasks and settings can run programs on the host"),
    p(".idea", ProtectedKind::Dir, "editor config: run configurations can run programs on the host"),
    p(".claude", ProtectedKind::Dir, "agent config: hooks in its settings run commands on the host, and its permission lists widen what the host agent may do"),
    p(".cursor", ProtectedKind::Dir, "agent config: names MCP servers an agent starts on the host"),
    p(".gemini", ProtectedKind::Dir, "agent config: names MCP servers and tools an agent starts on the host"),
];
