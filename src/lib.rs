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
//!   controller, partition, log manager and shards, supervision.
//!
//! The public API is `broker`, `config` (`BrokerConfig`, `ConfigError`,
//! `ConfigWarning`, `Listener`), `clock`, `topic_partition` and
//! `actors::{extension, event_bus}`: enough to run a broker,
//! embed one, and extend it with actors. The other modules are internal
//! (see `internal_modules!`). `ARCHITECTURE.md` at the repository root is
//! the map.

// No unwrap/expect where a request or a disk read can reach: outside
// tests, errors are typed (clippy enforces it in CI).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(not(feature = "internals"), warn(missing_docs))]

/// Declares internal modules: crate-visible, and `pub` (hidden from the
/// docs) only under the `internals` feature, which the crate's own tests
/// and benches turn on through a dev-dependency on itself. A build without
/// it, such as the daemon's, checks that the public API stands alone.
macro_rules! internal_modules {
    ($($(#[$attr:meta])* mod $name:ident;)*) => {$(
        $(#[$attr])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}
pub(crate) use internal_modules;

/// Re-exports internal items from a public module: `pub` (hidden) under
/// the `internals` feature, crate-visible otherwise, as
/// `internal_modules!` does for whole modules.
macro_rules! internal_use {
    ($($path:tt)*) => {
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub use $($path)*;
        #[cfg(not(feature = "internals"))]
        #[allow(unused_imports)]
        pub(crate) use $($path)*;
    };
}
pub(crate) use internal_use;

/// A fail point's crash (`--features failpoints`): the process dies at
/// once, as with an operator's SIGKILL, so crash recovery is tested at an
/// exact step (a cleaner swap, a controller mid-operation).
#[cfg(feature = "failpoints")]
pub(crate) fn crash_for_test() -> ! {
    // SAFETY: kill(2) on our own pid has no memory effects.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

// The public API: what `main`, embedders and extensions use.
#[path = "../actors/mod.rs"]
pub mod actors;
pub mod broker;
pub mod cli;
pub mod clock;
pub mod config;
pub mod security;
pub mod topic_partition;

internal_modules! {
    mod api;
    mod auto_topic_creation;
    mod broker_context;
    mod broker_state;
    mod cluster;
    mod controlled_shutdown;
    mod controller;
    mod group;
    mod metadata;
    mod metrics;
    mod net;
    mod open_files;
    mod producer_ids;
    mod protocol;
    mod quota;
    mod replication;
    mod storage;
}
