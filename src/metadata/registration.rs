//! Claiming the ephemeral znodes a broker owns, `/brokers/ids/<id>` and
//! `/controller`, the way Kafka's `checkedEphemeralCreate` does, over any
//! [`MetadataStore`]. It owns the rules for a znode that already exists:
//! ours (a create retried after a lost connection) is success; one left by
//! this broker's previous, dead process is waited out until ZooKeeper
//! expires its session; one held by a live session for longer than a
//! session timeout is someone else's. It must never delete another
//! session's znode (KAFKA-7165, KAFKA-14845: that is how two brokers end up
//! fighting over one id in a NodeExists loop).

use std::time::{Duration, Instant};

use super::store::{CreateMode, MetadataError, MetadataStore, Stat};

/// Why an ephemeral znode could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// A live session kept the znode for the whole wait.
    #[error("{path} is held by another live ZooKeeper session ({owner:#x})")]
    HeldByAnother { path: String, owner: i64 },
    #[error(transparent)]
    Store(#[from] MetadataError),
}

/// Creates the ephemeral `path` holding `data` for this session (parents
/// created as needed) and returns its stat. An existing znode of another
/// session is waited on for up to `wait`, since a broker restarted right
/// after a crash finds its previous registration until ZooKeeper expires
/// the dead session.
pub async fn claim_ephemeral(
    store: &dyn MetadataStore,
    path: &str,
    data: &[u8],
    wait: Duration,
) -> Result<Stat, ClaimError> {
    let deadline = Instant::now() + wait;
    let mut announced = false;
    loop {
        match store
            .create_recursive(path, data.to_vec(), CreateMode::Ephemeral)
            .await
        {
            Ok(()) => {}
            Err(MetadataError::NodeExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        // Watch before reading, so a deletion in between is not missed.
        let gone = store.watch(path).await?;
        let Some((_, stat)) = store.get(path).await? else {
            continue;
        };
        if stat.ephemeral_owner == store.session_id() {
            return Ok(stat);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(ClaimError::HeldByAnother {
                path: path.to_owned(),
                owner: stat.ephemeral_owner,
            });
        }
        if !announced {
            log::info!(
                "{path} is held by ZooKeeper session {:#x}; waiting up to {} ms for it to expire",
                stat.ephemeral_owner,
                (deadline - now).as_millis()
            );
            announced = true;
        }
        // Woken by the deletion, or by the deadline for the last check.
        let _ = tokio::time::timeout(deadline - now, gone).await;
    }
}


