//! Extended ZooKeeper recipes from [Apache Curator](http://curator.apache.org/).
pub mod cache;
pub mod distributed_queue;
pub mod leader_latch;
pub mod shared_lock;
