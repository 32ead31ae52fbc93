//! Topic auto-creation (`auto.create.topics.enable`), Kafka's
//! AutoTopicCreationManager: Metadata creates a topic and answers with it,
//! Produce starts the creation and does not wait. Either way the
//! controller creates it with the broker defaults; internal topics only
//! with their own settings.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::actors::controller::{ControllerError, CreateTopic, TopicRequester};
use crate::actors::group_coordinator::{offsets_topic, CoordinatorConfig};
use crate::broker_context::BrokerContext;
use crate::cluster::TopicMetadata;

/// Create `name` with the broker defaults, as auto-creation does. A topic
/// that exists already is answered from this broker's cache, or with
/// LEADER_NOT_AVAILABLE while the cache lacks it (Kafka's answer).
pub async fn auto_create_topic(
    ctx: &BrokerContext,
    name: &str,
) -> Result<TopicMetadata, ControllerError> {
    let request = auto_create_request(ctx, name);
    let outcome = ctx
        .controller
        .send(request)
        .await
        .unwrap_or(Err(ControllerError::Stopped));
    match outcome {
        // Kafka's ZkAutoTopicCreationManager: another broker (or an earlier
        // life of this one) created it; the clients retry.
        Err(ControllerError::AlreadyExists(_)) => ctx
            .metadata
            .topic(name)
            .ok_or_else(|| ControllerError::LeaderNotAvailable(name.to_string())),
        other => other,
    }
}

/// What auto-creating `name` asks the controller for. Internal topics are
/// only ever created with their own settings.
fn auto_create_request(ctx: &BrokerContext, name: &str) -> CreateTopic {
    if name == crate::group::OFFSETS_TOPIC {
        offsets_topic(&CoordinatorConfig::from_broker(&ctx.config))
    } else {
        CreateTopic {
            name: name.to_string(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: BTreeMap::new(),
            configs: Vec::new(),
            validate_only: false,
            requester: TopicRequester::Broker,
        }
    }
}

/// Kafka's AutoTopicCreationManager for Produce: the creation is asked of
/// the controller and not waited for (the request answers
/// UNKNOWN_TOPIC_OR_PARTITION and the client retries), so a connection's
/// later requests do not queue behind it. A topic already being created is
/// not asked for again, so a producer retrying every 100 ms does not
/// queue a CreateTopic each time.
#[derive(Debug, Default, Clone)]
pub struct AutoTopicCreations {
    in_flight: Arc<Mutex<HashSet<String>>>,
}

impl AutoTopicCreations {
    /// Start creating `name` in the background unless that is under way.
    pub fn start(&self, ctx: &BrokerContext, name: &str) {
        if !self.in_flight().insert(name.to_string()) {
            return;
        }
        let request = auto_create_request(ctx, name);
        let controller = ctx.controller.clone();
        let creations = self.clone();
        let name = name.to_string();
        actix_rt::spawn(async move {
            match controller.send(request).await {
                Ok(Ok(_)) => log::info!("auto-created topic {name} for a produce"),
                Ok(Err(ControllerError::AlreadyExists(_))) => {}
                Ok(Err(e)) => log::debug!("auto-creation of {name} failed: {e}"),
                Err(_) => log::debug!("auto-creation of {name}: the controller is gone"),
            }
            creations.in_flight().remove(&name);
        });
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // A panic while holding it leaves a plain set behind: keep using it.
        self.in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
