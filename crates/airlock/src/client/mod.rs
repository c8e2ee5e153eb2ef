//! `airlock sandbox ...`: the command-line client of `airlock serve`. One module per
//! subcommand; [`Api`] is the connection (server address, API key, what refusals mean).

mod api;
mod code;
mod copy;
mod create;
mod exec;
mod kill;
mod lifecycle;
mod list;
mod pairs;
mod stdout;

pub use api::Api;
pub use code::code;
pub use copy::copy;
pub use create::create;
pub use exec::exec;
pub use kill::kill;
pub use lifecycle::{fork, pause, resume, snapshot};
pub use list::list;
