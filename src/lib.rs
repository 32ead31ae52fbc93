//! ferrolog: a Kafka-compatible, replicated commit-log broker built as actix
//! actors.
//!
//! # Layout
//! - `storage`: partition logs, segments, indexes, checkpoints, recovery (no actix).
//! - `protocol`: Kafka wire protocol glue over `kafka-protocol`; zero-copy responses.
//! - `net`: request frames in, response frames out (`sendfile`).
//! - `api`: one file per Kafka API, and the broker context handlers use.
//! - `metadata`: the metadata store trait, the embedded store, the znode catalogue.
//! - `cluster`: the metadata cache Metadata requests read.
//! - `replication`: a leader's follower bookkeeping, ISR and high watermark rules.
//! - `config`: `server.properties` loading with Kafka's names and defaults.
//! - `broker`: `Broker::start`, the one entry point.
//! - `clock`, `topic_partition`: injected time; partition names.
//! - `actors` (the top-level `actors/` folder): acceptor, connection,
//!   controller, partition, log actor and shards, supervision.
//!
//! `ARCHITECTURE.md` at the repository root is the map.

// No unwrap/expect where a request or a disk read can reach: outside
// tests, errors are typed (clippy enforces it in CI).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod controlled_shutdown;
pub mod group;
pub mod metadata;
pub mod net;
pub mod open_files;
pub mod producer_ids;
pub mod protocol;
pub mod replication;
pub mod storage;
pub mod topic_config;
pub mod topic_partition;

#[path = "../actors/mod.rs"]
pub mod actors;
