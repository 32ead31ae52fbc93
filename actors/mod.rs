//! The actors. One actor per file, its typed messages beside it.
//!
//! - `log_manager`: Kafka's LogManager, the one door to persistence, and
//!   under it `log_manager::shard`, a blocking thread owning a subset of
//!   the partition logs.
//! - `log_cleaner`: compaction of `cleanup.policy=compact` logs.
//! - `supervisor`: one supervision mechanism for every actor kind.
//! - `event_bus`: typed broker events fanned out to subscribers.
//! - `extension`: the public API for actors added from outside.
//! - `pool`: the arbiters partition and group actors are spread over.
//!
//! Where to add an actor: a new file here with a `//!` paragraph saying what
//! it owns and what it must never do, its messages next to it, and a line in
//! ARCHITECTURE.md.

// What an extension uses (`extension` re-exports the `SupervisorLink` it
// needs; the rest of supervision is internal).
pub mod event_bus;
pub mod extension;

crate::internal_modules! {
    mod acceptor;
    mod acl_change_listener;
    mod connection;
    mod consumer_group;
    mod controller;
    mod controller_channel;
    mod group_coordinator;
    mod log_manager;
    mod log_cleaner;
    mod partition;
    mod pool;
    mod replica_fetcher;
    mod replica_manager;
    mod supervisor;
}
