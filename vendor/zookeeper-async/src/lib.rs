#![allow(warnings, clippy::all)]
#![allow(deprecated)] // XXX temporary to silence expected warnings

mod acl;
mod consts;
mod data;
mod io;
mod listeners;
mod paths;
mod proto;
pub mod recipes;
mod watch;
mod zookeeper;
mod zookeeper_ext;

pub use self::zookeeper::{ZkResult, ZooKeeper};
// ferrolog patch: the `multi` request types.
pub use proto::{CheckVersionRequest, CreateRequest, DeleteRequest, MultiOp, MultiResult, SetDataRequest};
pub use acl::*;
pub use consts::*;
pub use data::*;
pub use watch::{Watch, WatchType, WatchedEvent, Watcher};
pub use zookeeper_ext::ZooKeeperExt;

pub use listeners::Subscription;
