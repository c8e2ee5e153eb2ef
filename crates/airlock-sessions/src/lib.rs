//! Sessions: long-lived boxes the server creates, lists, extends and kills on request. A cap on
//! boxes alive at once queues further sessions FIFO (each with its own queue deadline); every box
//! has a timeout (300 s by default, extendable) after which it is stopped and its record says why.
//!
//! The [`SessionManager`] keeps the records and decides; a [`BoxFactory`] starts and stops the
//! actual boxes; a [`SessionObserver`] (the server's store) is told of every change.
//!
//! The manager decides over records only: it never names a pid, a backend, the jail or the proxy,
//! and must not depend on them (nor on the store, which the server attaches as an observer). It
//! depends on no other airlock crate.

mod error;
mod manager;
mod model;
mod ports;
mod table;

pub use error::ManagerError;
pub use manager::SessionManager;
pub use model::{ManagerConfig, OnTimeout, Paused, SessionInfo, SessionSpec, SessionState};
pub use ports::{BoxFactory, Clock, NoopObserver, SessionObserver, SystemClock};
