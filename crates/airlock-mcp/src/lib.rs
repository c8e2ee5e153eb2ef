//! airlock over MCP.
//!
//! `airlock mcp` serves code execution as MCP tools (`run_code`, `run_command`, `read_file`,
//! `write_file`, `list_files`, `sandbox_info`), one box per MCP session, over stdio or
//! streamable HTTP. The profile decides which tools exist at all, `--tools`/`--deny-tools`
//! narrow further, and every call is checked again at dispatch; refusals are tool results the
//! model can read.
//!
//! `airlock wrap` runs another MCP server inside a box and relays its JSON-RPC, filtering
//! `tools/list`, refusing calls to filtered tools, and auditing every call.

mod boxes;
mod calls;
mod catalogue;
mod consent;
mod denial;
mod fs_grant;
mod grant_program;
mod grant_request;
mod held;
mod pattern;
mod roots;
mod serve;
mod server;
pub mod wrap;

pub use boxes::{BackendStarter, StartBox};
pub use catalogue::ToolName;
pub use pattern::{PatternError, ToolFilter};
pub use serve::{http_service, serve_stdio, ServeError, DEFAULT_IDLE};
pub use server::{McpSession, SessionSettings, SettingsBuilder};
