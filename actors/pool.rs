//! The arbiters partition and consumer-group actors run on: `num.io.threads`
//! event-loop threads, so a machine with several cores uses them. An actor
//! is pinned to one arbiter by a hash of its key (a partition, a group id),
//! so the messages of one partition are still handled one at a time, in
//! order.
//!
//! Not an actor itself. It never runs blocking work: file I/O belongs to the
//! log shards.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use actix::{Arbiter, ArbiterHandle};

/// A fixed set of arbiters; cheap to clone.
#[derive(Clone)]
pub struct ActorPool(Arc<Vec<ArbiterHandle>>);

/// Owns the pool's threads; `stop` ends them (at broker shutdown).
pub struct ActorPoolThreads(Vec<Arbiter>);

impl ActorPool {
    /// Start `threads` arbiters (at least one).
    pub fn start(threads: usize) -> (ActorPool, ActorPoolThreads) {
        let arbiters: Vec<Arbiter> = (0..threads.max(1)).map(|_| Arbiter::new()).collect();
        let handles = arbiters.iter().map(|a| a.handle()).collect();
        (ActorPool(Arc::new(handles)), ActorPoolThreads(arbiters))
    }

    /// The arbiter that runs the actor for `key`, stable for the process.
    pub fn pick(&self, key: &impl Hash) -> ArbiterHandle {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        // Never empty: `start` makes at least one.
        self.0[(hasher.finish() % self.0.len() as u64) as usize].clone()
    }

    #[cfg(any(test, feature = "internals"))]
    /// How many arbiters the pool has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ActorPoolThreads {
    pub fn stop(&self) {
        for arbiter in &self.0 {
            arbiter.stop();
        }
    }
}
