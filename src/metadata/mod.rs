//! Cluster metadata in ZooKeeper's znode layout: brokers, topics and their
//! replica assignments, partition leader/ISR state, config overrides, the
//! controller claim. It owns the [`MetadataStore`] interface, the embedded
//! store used without `zookeeper.connect`, Kafka's typed znode catalogue and
//! the replica assignment algorithm. It knows nothing of actix and does no
//! network I/O outside `zookeeper`: the embedded store writes only its own
//! file, and the ZooKeeper store implements the same trait over one
//! client session.
//!
//! - `store`: the trait, its errors, and ZooKeeper's path rules.
//! - `embedded`: the in-process store, persisted to one JSON file.
//! - `zookeeper`: the same trait over a ZooKeeper ensemble.
//! - `registration`: claiming a broker's ephemeral znodes, Kafka's way.
//! - `znodes`: one type per znode with its path and Kafka's JSON.
//! - `assignment`: Kafka's replica placement for new partitions.

pub mod assignment;
pub mod embedded;
pub mod entity_config;
pub mod registration;
pub mod store;
pub mod znodes;
pub mod zookeeper;

// The module's short names, for the crate and its tests (the daemon alone
// does not use every one).
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use assignment::{
    assign_for_new_topic, assign_replicas, assign_replicas_rack_aware, assign_replicas_random,
    AssignmentError,
};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use embedded::{EmbeddedStore, EMBEDDED_STORE_FILE_NAME};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use store::{
    validate_path, CreateMode, MetadataError, MetadataStore, Stat, StoreFuture, StoreOp,
    WatchedEvent,
};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use znodes::{ensure_paths, persistent_paths, BrokerInfo, ConfigType, LeaderAndIsr};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use zookeeper::{ConnectString, ZooKeeperStore};
