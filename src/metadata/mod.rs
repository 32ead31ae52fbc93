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
pub mod registration;
pub mod store;
pub mod znodes;
pub mod zookeeper;

pub use assignment::{
    assign_for_new_topic, assign_replicas, assign_replicas_rack_aware, assign_replicas_random,
    AssignmentError,
};
pub use embedded::{EmbeddedStore, EMBEDDED_STORE_FILE_NAME};
pub use store::{
    validate_path, CreateMode, MetadataError, MetadataStore, Stat, StoreFuture, StoreOp,
    WatchedEvent,
};
pub use znodes::{ensure_paths, persistent_paths, BrokerInfo, ConfigType, LeaderAndIsr};
pub use zookeeper::{ConnectString, ZooKeeperStore};
