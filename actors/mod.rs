//! The actors. One actor per file, its typed messages beside it.
//!
//! - `log`: the shared log actor, the one door to persistence.
//! - `log_shard`: a blocking thread owning a subset of the partition logs.
//! - `supervisor`: the restart budget supervisors consult.
//!
//! Where to add an actor: a new file here with a `//!` paragraph saying what
//! it owns and what it must never do, its messages next to it, and a line in
//! ARCHITECTURE.md.

pub mod acceptor;
pub mod connection;
pub mod consumer_group;
pub mod controller;
pub mod group_coordinator;
pub mod log;
pub mod log_shard;
pub mod partition;
pub mod supervisor;
