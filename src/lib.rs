//! ferrolog: a Kafka-compatible, replicated commit-log broker built as actix
//! actors.
//!
//! # Layout
//! - `storage`: partition logs, segments, indexes, checkpoints, recovery (no actix).
//! - `config`: `server.properties` loading with Kafka's names and defaults.
//! - `topic_partition`: the name of a partition.
//! - `actors` (the top-level `actors/` folder): the shared log actor and the
//!   supervisor; one actor per file.
//!
//! `ARCHITECTURE.md` at the repository root is the map.

pub mod api;
pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod metadata;
pub mod net;
pub mod protocol;
pub mod storage;
pub mod topic_partition;

#[path = "../actors/mod.rs"]
pub mod actors;
