//! The controller's decisions as plain Rust, with no actor and no store
//! (Kafka's `kafka.controller` package without its event thread): the
//! actor in `actors/controller/` reads state, asks these functions what
//! changes, and writes and sends the answers.
//!
//! - `election`: Kafka's partition leader election algorithms (offline,
//!   unclean, preferred, controlled shutdown), a new partition's first
//!   state, and the partitions the automatic rebalance moves back.
//! - `context`: Kafka's ControllerContext, the state only the controller
//!   owns (role and epoch, live brokers' epochs, shutdowns, deletions).
//! - `deletion`: Kafka's TopicDeletionManager states: which brokers must
//!   still delete their replicas of a topic being deleted.
//! - `requests`: Kafka's ControllerBrokerRequestBatch's requests, built
//!   for one broker from the partitions that changed.
//! - `fence`: the broker's side: which controller's requests it obeys
//!   (controller and broker epochs), applied by the ReplicaManager.

pub mod context;
pub mod deletion;
pub mod election;
pub mod fence;
pub mod requests;
