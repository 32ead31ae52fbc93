//! The stopping broker's half of Kafka's controlled shutdown: in a cluster,
//! before it stops serving, a broker asks the active controller
//! (ControlledShutdown v3) to move its leaderships to other in-sync
//! replicas and take it out of every ISR, so clients and followers move on
//! at once instead of waiting for a failover. While the controller answers
//! that some replicated partitions are still led here, it asks again, up to
//! `controlled.shutdown.max.retries` times, `controlled.shutdown.retry.backoff.ms`
//! apart.
//!
//! It never stops anything itself and never fails the shutdown: when the
//! attempts run out the broker stops anyway (Kafka's "unclean shutdown"),
//! and the controller fails its partitions over as after a crash.

use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, BrokerId, ControlledShutdownRequest, ControlledShutdownResponse,
};

use crate::cluster::MetadataCache;
use crate::config::BrokerConfig;
use crate::metadata::znodes::{BrokerIdZNode, ControllerZNode};
use crate::metadata::{MetadataError, MetadataStore};
use crate::net::client::{BrokerClient, ClientError};

/// The ControlledShutdown version sent (Kafka 2.2+: carries the broker epoch).
const VERSION: i16 = 3;

/// How long one attempt (finding the controller, the exchange) may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a controlled shutdown ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlledShutdownOutcome {
    /// Not in a cluster, or `controlled.shutdown.enable=false`.
    Skipped,
    /// The controller moved every replicated leadership away.
    Done { attempts: u32 },
    /// The attempts ran out; the last one's reason.
    GaveUp { attempts: u32, reason: String },
}

/// Why one attempt did not let the broker go.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    #[error("no controller is elected")]
    NoController,
    #[error("cannot read the controller: {0}")]
    ReadController(MetadataError),
    #[error("this broker is not registered")]
    NotRegistered,
    #[error("cannot read this broker's registration: {0}")]
    ReadRegistration(MetadataError),
    #[error("the controller, broker {0}, has no known address")]
    NoControllerAddress(i32),
    #[error(transparent)]
    Exchange(#[from] ClientError),
}

/// Asks the active controller to let this broker go; see the module doc.
pub async fn request_controlled_shutdown(
    config: &BrokerConfig,
    store: &dyn MetadataStore,
    cache: &MetadataCache,
    security: &std::sync::Arc<crate::net::inter_broker::InterBrokerSecurity>,
) -> ControlledShutdownOutcome {
    if config.zookeeper_connect.is_none() || !config.controlled_shutdown_enable {
        return ControlledShutdownOutcome::Skipped;
    }
    let broker_id = config.broker_id;
    let mut reason = String::from("no attempt made (controlled.shutdown.max.retries=0)");
    for attempt in 1..=config.controlled_shutdown_max_retries {
        match tokio::time::timeout(ATTEMPT_TIMEOUT, ask(broker_id, store, cache, security)).await {
            Ok(Ok(response)) if response.error_code == 0 => {
                if response.remaining_partitions.is_empty() {
                    log::info!("controlled shutdown of broker {broker_id} succeeded");
                    return ControlledShutdownOutcome::Done { attempts: attempt };
                }
                let names: Vec<String> = response
                    .remaining_partitions
                    .iter()
                    .map(|p| format!("{}-{}", p.topic_name.0, p.partition_index))
                    .collect();
                reason = format!("partitions still led here: {}", names.join(", "));
            }
            Ok(Ok(response)) => {
                reason = format!("the controller answered error {}", response.error_code);
            }
            Ok(Err(e)) => reason = e.to_string(),
            Err(_) => reason = format!("no answer within {ATTEMPT_TIMEOUT:?}"),
        }
        log::warn!("controlled shutdown attempt {attempt} of broker {broker_id}: {reason}");
        if attempt < config.controlled_shutdown_max_retries {
            tokio::time::sleep(Duration::from_millis(
                config.controlled_shutdown_retry_backoff_ms,
            ))
            .await;
        }
    }
    log::warn!(
        "proceeding with an unclean shutdown of broker {broker_id}: controlled shutdown gave up \
         ({reason})"
    );
    ControlledShutdownOutcome::GaveUp {
        attempts: config.controlled_shutdown_max_retries,
        reason,
    }
}

/// One attempt: find the controller and this broker's epoch, ask.
async fn ask(
    broker_id: i32,
    store: &dyn MetadataStore,
    cache: &MetadataCache,
    security: &std::sync::Arc<crate::net::inter_broker::InterBrokerSecurity>,
) -> Result<ControlledShutdownResponse, AttemptError> {
    let controller = match store.get(ControllerZNode::path()).await {
        Ok(Some((bytes, _))) => {
            ControllerZNode::decode(&bytes).map_err(AttemptError::ReadController)?
        }
        Ok(None) => return Err(AttemptError::NoController),
        Err(e) => return Err(AttemptError::ReadController(e)),
    };
    let broker_epoch = match store.get(&BrokerIdZNode::path(broker_id)).await {
        Ok(Some((_, stat))) => stat.creation_zxid,
        Ok(None) => return Err(AttemptError::NotRegistered),
        Err(e) => return Err(AttemptError::ReadRegistration(e)),
    };
    let Some(endpoint) = cache.read(|m| m.brokers.get(&controller).cloned()) else {
        return Err(AttemptError::NoControllerAddress(controller));
    };
    let mut client = BrokerClient::new(
        format!("{}:{}", endpoint.host, endpoint.port),
        format!("broker-{broker_id}-controlled-shutdown"),
        ATTEMPT_TIMEOUT,
        1024 * 1024,
        security.clone(),
    );
    client
        .call(
            ApiKey::ControlledShutdown,
            VERSION,
            &ControlledShutdownRequest::default()
                .with_broker_id(BrokerId(broker_id))
                .with_broker_epoch(broker_epoch),
        )
        .await
        .map_err(AttemptError::from)
}
