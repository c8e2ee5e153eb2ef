//! Warm pools: boxes of a kind started before anyone asks, so that a create matching a pool is
//! answered with a ready box (`airlock serve --pool SPEC`, `GET /v1/pools`). What a pool is
//! made of is [`spec`] and [`policy`], how a create is matched [`key`], the ready boxes and
//! their claim [`set`], keeping them full [`refill`], the memory they may hold [`budget`].

pub mod budget;
pub mod key;
pub mod policy;
pub mod set;
pub mod sink;
pub mod spec;

pub mod refill;

pub use set::{PoolError, Pools, PoolsView};
pub use spec::{PoolSpec, PoolSpecError};
