//! The actors. One actor per file, its typed messages beside it.
//!
//! - `log`: the shared log actor, the one door to persistence, and under it
//!   `log::shard`, a blocking thread owning a subset of the partition logs.
//! - `log_cleaner`: compaction of `cleanup.policy=compact` logs.
//! - `supervisor`: one supervision mechanism for every actor kind.
//! - `event_bus`: typed broker events fanned out to subscribers.
//! - `extension`: the public API for actors added from outside.
//! - `pool`: the arbiters partition and group actors are spread over.
//!
//! Where to add an actor: a new file here with a `//!` paragraph saying what
//! it owns and what it must never do, its messages next to it, and a line in
//! ARCHITECTURE.md.

pub mod acceptor;
pub mod connection;
pub mod consumer_group;
pub mod controller;
pub mod controller_channel;
pub mod event_bus;
pub mod extension;
pub mod group_coordinator;
pub mod log;
pub mod log_cleaner;
pub mod partition;
pub mod pool;
pub mod replica_fetcher;
pub mod supervisor;
