//! Producer ids for idempotent producers (InitProducerId), handed out from
//! blocks of 1000 claimed in the metadata store's
//! `/latest_producer_id_block` with a conditional write, as Kafka's
//! ZooKeeper-era `ZkProducerIdManager` does. The same code runs on the
//! embedded store and on ZooKeeper, so no id is handed out twice, across
//! brokers or restarts (a restart claims a fresh block; the rest of the old
//! one is never used).
//!
//! It never holds the store's answer across a claim by another broker: a
//! refused write (BadVersion) re-reads and tries the next block.

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::metadata::znodes::ProducerIdBlockZNode;
use crate::metadata::{MetadataError, MetadataStore};

/// Ids per claimed block (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;
/// Claims tried before giving up when other brokers keep winning.
const CLAIM_ATTEMPTS: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    #[error("claiming a producer id block: {0}")]
    Store(#[from] MetadataError),
    #[error("every producer id has been handed out")]
    Exhausted,
    #[error("other brokers won {CLAIM_ATTEMPTS} claims in a row")]
    Contended,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    next: i64,
    last: i64,
}

#[derive(Debug)]
pub struct ProducerIdManager {
    store: Arc<dyn MetadataStore>,
    broker_id: i32,
    block: Mutex<Option<Block>>,
}

impl ProducerIdManager {
    pub fn new(store: Arc<dyn MetadataStore>, broker_id: i32) -> ProducerIdManager {
        ProducerIdManager {
            store,
            broker_id,
            block: Mutex::new(None),
        }
    }

    /// A producer id never handed out before.
    pub async fn generate(&self) -> Result<i64, ProducerIdError> {
        let mut block = self.block.lock().await;
        let current = match *block {
            Some(b) if b.next <= b.last => b,
            _ => self.claim_block().await?,
        };
        *block = Some(Block {
            next: current.next + 1,
            last: current.last,
        });
        Ok(current.next)
    }

    async fn claim_block(&self) -> Result<Block, ProducerIdError> {
        let path = ProducerIdBlockZNode::PATH;
        for _ in 0..CLAIM_ATTEMPTS {
            let current = self.store.get(path).await?;
            let previous_end = match &current {
                Some((bytes, _)) => ProducerIdBlockZNode::decode_block_end(bytes)?,
                None => None,
            };
            let start = previous_end.map_or(Ok(0), |end| {
                end.checked_add(1).ok_or(ProducerIdError::Exhausted)
            })?;
            let last = start
                .checked_add(PRODUCER_ID_BLOCK_SIZE - 1)
                .ok_or(ProducerIdError::Exhausted)?;
            let data = ProducerIdBlockZNode::encode(self.broker_id, start, last);
            let written = match current {
                Some((_, stat)) => self
                    .store
                    .set(path, data, Some(stat.version))
                    .await
                    .map(|_| ()),
                None => {
                    self.store
                        .create(path, data, crate::metadata::CreateMode::Persistent)
                        .await
                }
            };
            match written {
                Ok(()) => {
                    log::info!(
                        "broker {} claimed producer ids {start}..={last}",
                        self.broker_id
                    );
                    return Ok(Block { next: start, last });
                }
                Err(MetadataError::BadVersion { .. } | MetadataError::NodeExists(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ProducerIdError::Contended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::EmbeddedStore;

    #[test]
    fn blocks_never_overlap_across_managers_and_restarts() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
            let first = ProducerIdManager::new(store.clone(), 0);
            let second = ProducerIdManager::new(store.clone(), 1);
            let mut seen = std::collections::HashSet::new();
            for _ in 0..1500 {
                assert!(seen.insert(first.generate().await.unwrap()));
                assert!(seen.insert(second.generate().await.unwrap()));
            }
            // A restart (a new manager) starts after every claimed block.
            let restarted = ProducerIdManager::new(store.clone(), 0);
            let id = restarted.generate().await.unwrap();
            assert_eq!(id, 4 * PRODUCER_ID_BLOCK_SIZE);
            let (bytes, _) = store
                .get(ProducerIdBlockZNode::PATH)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                String::from_utf8(bytes).unwrap(),
                r#"{"version":1,"broker":0,"block_start":"4000","block_end":"4999"}"#
            );
        });
    }
}
