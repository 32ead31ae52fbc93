//! Kafka's ReplicaManager: the broker side of what a controller decides.
//! LeaderAndIsr, UpdateMetadata and StopReplica are fenced by controller
//! and broker epoch here, then applied: logs found, created or deleted,
//! partition actors and replica fetchers started and stopped, the metadata
//! cache updated. The active controller's decisions about its own broker
//! (`BecomeLeaderOrFollower`, `StopReplicas`) pass the same fence and the
//! same code as a remote controller's requests.
//!
//! It owns the controller epochs this broker has seen (`ControllerEpochs`
//! in `src/controller/fence.rs`, a pure type). It never writes the metadata store and never waits on the
//! controller actor: it tells a deposed local controller with `do_send`, so
//! the controller may wait on it, and a newer controller's requests are
//! applied while the old one is still busy in a handler.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use futures_util::StreamExt;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leader_and_isr_response::{
    LeaderAndIsrPartitionError, LeaderAndIsrTopicError,
};
use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
use kafka_protocol::messages::{
    LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse, TopicName,
    UpdateMetadataRequest, UpdateMetadataResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::controller::ControllerError;
use super::event_bus::BrokerEvent;
use super::log_manager::{
    AssignTopicId, CreateLog, DeleteLog, GetLogOffsets, LogAdmin, LogManagerError, LogOffsets,
    UpdateLogConfig,
};
use super::partition::{
    ApplyAssignment, GetState, PartitionAssignment, PartitionError, PartitionRuntime,
    PartitionStart, StopPartition,
};
use super::replica_fetcher::ReplicaFetchers;
use super::supervisor::SupervisorLink;
use crate::cluster::{
    is_internal_topic, BrokerEndpoint, MetadataCache, PartitionMetadata, TopicMetadata,
};
use crate::config::topic::TopicConfig;
use crate::controller::fence::{ControllerEpochs, Fence};
use crate::controller::requests::LEADER_DURING_DELETE;
use crate::metadata::store::MetadataStore;
use crate::metadata::znodes::{ConfigEntityZNode, ConfigType, ControllerEpochZNode};
use crate::replication::ReplicationError;
use crate::storage::LogConfig;
use crate::topic_partition::TopicPartition;

/// Logs created and partition actors started at once (see
/// `Replicas::become_leader_or_follower`).
const LOG_CREATION_CONCURRENCY: usize = 4;

// ---------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------

/// A LeaderAndIsr request from a controller.
#[derive(Debug)]
pub struct ApplyLeaderAndIsr(pub LeaderAndIsrRequest);

impl Message for ApplyLeaderAndIsr {
    type Result = Result<LeaderAndIsrResponse, ControllerError>;
}

/// An UpdateMetadata request from a controller.
#[derive(Debug)]
pub struct ApplyUpdateMetadata(pub UpdateMetadataRequest);

impl Message for ApplyUpdateMetadata {
    type Result = Result<UpdateMetadataResponse, ControllerError>;
}

/// A StopReplica request from a controller.
#[derive(Debug)]
pub struct ApplyStopReplica(pub StopReplicaRequest);

impl Message for ApplyStopReplica {
    type Result = Result<StopReplicaResponse, ControllerError>;
}

/// This broker's active controller makes its replicas of `topic`'s
/// `partitions` what their states say (its LeaderAndIsr to itself).
#[derive(Debug)]
pub struct BecomeLeaderOrFollower {
    pub controller_epoch: i32,
    pub topic: TopicMetadata,
    pub partitions: Vec<i32>,
    /// `host:port` of the partitions' leaders (LeaderAndIsr's live leaders).
    pub leaders: BTreeMap<i32, String>,
}

/// The answer to each partition of a LeaderAndIsr, by partition index: 0,
/// or the Kafka error code the partition was refused with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionCodes(pub Vec<(i32, i16)>);

impl Message for BecomeLeaderOrFollower {
    type Result = Result<PartitionCodes, ControllerError>;
}

/// This broker's active controller stops its replicas of `partitions`,
/// deleting their logs when `delete` (its StopReplica to itself).
#[derive(Debug)]
pub struct StopReplicas {
    pub controller_epoch: i32,
    pub partitions: Vec<TopicPartition>,
    pub delete: bool,
}

/// Whether every replica stopped (and, when asked, every log was deleted;
/// a log already gone counts as deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicasStopped {
    pub all: bool,
}

impl Message for StopReplicas {
    type Result = Result<ReplicasStopped, ControllerError>;
}

/// Stop every partition actor and fetcher (broker shutdown).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopAllReplicas;

/// This broker's controller registered (with `broker_epoch`) and holds the
/// controller role at `active_epoch`, or none.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LocalControllerRole {
    pub broker_epoch: i64,
    pub active_epoch: Option<i32>,
}

/// Where to tell this broker's controller that a newer one deposed it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct FollowLocalController(pub Recipient<ControllerDeposed>);

/// Sent to this broker's controller: a controller with a newer `epoch`
/// (confirmed by `/controller_epoch`) is giving orders; step down.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ControllerDeposed {
    pub epoch: i32,
}

// ---------------------------------------------------------------------
// The actor
// ---------------------------------------------------------------------

pub struct ReplicaManager {
    replicas: Replicas,
    epochs: ControllerEpochs,
    controller: Option<Recipient<ControllerDeposed>>,
    link: SupervisorLink,
}

/// What applying a decision needs; cloned into each request's future.
#[derive(Clone)]
struct Replicas {
    broker_id: i32,
    /// The broker's config now: its log defaults are what topic overrides
    /// apply to.
    broker_config: crate::config::dynamic::DynamicBrokerConfig,
    store: Arc<dyn MetadataStore>,
    log: LogAdmin,
    cache: MetadataCache,
    partitions: PartitionRuntime,
    fetchers: ReplicaFetchers,
    /// The partitions this broker leads (for leadership events).
    led: Arc<Mutex<HashSet<TopicPartition>>>,
}

impl ReplicaManager {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        broker_id: i32,
        clustered: bool,
        broker_config: crate::config::dynamic::DynamicBrokerConfig,
        store: Arc<dyn MetadataStore>,
        log: LogAdmin,
        cache: MetadataCache,
        partitions: PartitionRuntime,
        fetchers: ReplicaFetchers,
        link: SupervisorLink,
    ) -> ReplicaManager {
        ReplicaManager {
            replicas: Replicas {
                broker_id,
                broker_config,
                store,
                log,
                cache,
                partitions,
                fetchers,
                led: Arc::default(),
            },
            epochs: ControllerEpochs::new(broker_id, clustered),
            controller: None,
            link,
        }
    }

    /// Runs `work` once the fence lets `(controller_id, epoch,
    /// broker_epoch)` through, else answers `refused(code)`; one request at
    /// a time (Kafka's replica state change lock).
    fn fenced<R, W, F>(
        &mut self,
        controller_id: i32,
        epoch: i32,
        broker_epoch: i64,
        refused: impl FnOnce(i16) -> R + 'static,
        work: W,
    ) -> AtomicResponse<Self, R>
    where
        R: 'static,
        W: FnOnce(Replicas) -> F + 'static,
        F: std::future::Future<Output = R> + 'static,
    {
        let verdict = self.epochs.check(controller_id, epoch, broker_epoch);
        let store = self.replicas.store.clone();
        let confirmed = async move {
            match verdict {
                Fence::Accept => Ok(()),
                Fence::Refuse(code) => Err(code),
                Fence::ConfirmNewer => {
                    confirm_newer_controller(store.as_ref(), controller_id, epoch).await
                }
            }
        };
        AtomicResponse::new(Box::pin(confirmed.into_actor(self).then(
            move |verdict, actor, _ctx| {
                let replicas = match verdict {
                    Ok(()) => {
                        actor.accept(controller_id, epoch);
                        Ok(actor.replicas.clone())
                    }
                    Err(code) => {
                        log::warn!(
                            "refusing a control request from controller {controller_id} \
                             (epoch {epoch}): error {code}; newest controller epoch seen {}",
                            actor.epochs.newest
                        );
                        Err(code)
                    }
                };
                async move {
                    match replicas {
                        Ok(replicas) => work(replicas).await,
                        Err(code) => refused(code),
                    }
                }
                .into_actor(actor)
            },
        )))
    }

    fn accept(&mut self, controller_id: i32, epoch: i32) {
        if let Some(local) = self.epochs.accept(controller_id, epoch) {
            // This broker's claim went with a session it has not yet seen
            // expire (a pause longer than the session timeout).
            log::warn!(
                "broker {controller_id} is the controller with epoch {epoch}: this broker's \
                 controller (epoch {local}) steps down"
            );
            if let Some(controller) = &self.controller {
                controller.do_send(ControllerDeposed { epoch });
            }
        }
        self.replicas
            .cache
            .update(|m| m.controller_id = controller_id);
    }
}

/// Whether `/controller_epoch` has reached `epoch`: only then does this
/// broker's active controller give way to `controller_id`.
async fn confirm_newer_controller(
    store: &dyn MetadataStore,
    controller_id: i32,
    epoch: i32,
) -> Result<(), i16> {
    let stored = match store.get(ControllerEpochZNode::path()).await {
        Ok(Some((bytes, _))) => ControllerEpochZNode::decode(&bytes).ok(),
        _ => None,
    };
    if stored.is_some_and(|stored| stored >= epoch) {
        return Ok(());
    }
    log::warn!(
        "ignoring a control request from broker {controller_id} with controller epoch {epoch}: \
         /controller_epoch says {stored:?}, and this broker is the controller"
    );
    Err(ResponseError::StaleControllerEpoch.code())
}

impl Actor for ReplicaManager {
    type Context = Context<Self>;
}

impl actix::Supervised for ReplicaManager {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // The epochs, the fetchers and the partition registry live on in
        // this struct: a restarted manager fences and applies as before.
        if let Some(cause) = self.link.escalated() {
            log::error!("the replica manager keeps failing ({cause}); the broker shuts down");
        } else {
            log::warn!("the replica manager restarts");
        }
    }
}

/// A controller's request over the wire: fenced by the epochs it carries,
/// refused with the response's error code, else applied by `$apply`.
macro_rules! control_request_handler {
    ($message:ident -> $response:ident, $apply:ident) => {
        impl Handler<$message> for ReplicaManager {
            type Result = AtomicResponse<Self, Result<$response, ControllerError>>;

            fn handle(&mut self, msg: $message, _ctx: &mut Context<Self>) -> Self::Result {
                let request = msg.0;
                self.fenced(
                    request.controller_id.0,
                    request.controller_epoch,
                    request.broker_epoch,
                    |code| Ok($response::default().with_error_code(code)),
                    move |replicas| async move { replicas.$apply(request).await },
                )
            }
        }
    };
}

control_request_handler!(ApplyLeaderAndIsr -> LeaderAndIsrResponse, apply_leader_and_isr);
control_request_handler!(ApplyUpdateMetadata -> UpdateMetadataResponse, apply_update_metadata);
control_request_handler!(ApplyStopReplica -> StopReplicaResponse, apply_stop_replica);

impl ReplicaManager {
    /// A decision of this broker's own controller at `epoch`: fenced like a
    /// remote controller's request; refused means that controller was
    /// deposed and its epoch is no longer current.
    fn fenced_local<T, W, F>(
        &mut self,
        epoch: i32,
        work: W,
    ) -> AtomicResponse<Self, Result<T, ControllerError>>
    where
        T: 'static,
        W: FnOnce(Replicas) -> F + 'static,
        F: std::future::Future<Output = Result<T, ControllerError>> + 'static,
    {
        let broker_id = self.replicas.broker_id;
        self.fenced(
            broker_id,
            epoch,
            -1,
            move |_| Err(ControllerError::ControllerMoved { epoch }),
            work,
        )
    }
}

impl Handler<BecomeLeaderOrFollower> for ReplicaManager {
    type Result = AtomicResponse<Self, Result<PartitionCodes, ControllerError>>;

    fn handle(&mut self, msg: BecomeLeaderOrFollower, _ctx: &mut Context<Self>) -> Self::Result {
        fail::fail_point!("replica_manager.BecomeLeaderOrFollower");
        let epoch = msg.controller_epoch;
        self.fenced_local(epoch, move |replicas| async move {
            replicas
                .become_leader_or_follower(&msg.topic, &msg.partitions, &msg.leaders, epoch)
                .await
                .map(PartitionCodes)
        })
    }
}

impl Handler<StopReplicas> for ReplicaManager {
    type Result = AtomicResponse<Self, Result<ReplicasStopped, ControllerError>>;

    fn handle(&mut self, msg: StopReplicas, _ctx: &mut Context<Self>) -> Self::Result {
        self.fenced_local(msg.controller_epoch, move |replicas| async move {
            let mut all = true;
            for tp in &msg.partitions {
                replicas.stop_replica(tp);
                if msg.delete {
                    all &= replicas.delete_log(tp).await?;
                }
            }
            Ok(ReplicasStopped { all })
        })
    }
}

impl Handler<StopAllReplicas> for ReplicaManager {
    type Result = ();

    fn handle(&mut self, _msg: StopAllReplicas, _ctx: &mut Context<Self>) {
        self.replicas.fetchers.stop_all();
        let all: HashMap<TopicPartition, _> = self
            .replicas
            .partitions
            .registry
            .all()
            .into_iter()
            .collect();
        for tp in all.keys() {
            self.replicas.stop_replica(tp);
        }
    }
}

impl Handler<LocalControllerRole> for ReplicaManager {
    type Result = ();

    fn handle(&mut self, msg: LocalControllerRole, _ctx: &mut Context<Self>) {
        self.epochs.broker_epoch = msg.broker_epoch;
        self.epochs.set_local(msg.active_epoch);
    }
}

impl Handler<FollowLocalController> for ReplicaManager {
    type Result = ();

    fn handle(&mut self, msg: FollowLocalController, _ctx: &mut Context<Self>) {
        self.controller = Some(msg.0);
    }
}

// ---------------------------------------------------------------------
// Applying what a controller decided
// ---------------------------------------------------------------------

impl Replicas {
    /// Stops this broker's replica of `tp`, if it has one (deletion,
    /// StopReplica, shutdown).
    fn stop_replica(&self, tp: &TopicPartition) {
        self.fetchers.unfollow(tp);
        let Some(handle) = self.partitions.registry.remove(tp) else {
            return;
        };
        handle.addr.do_send(StopPartition);
        self.note_leadership(tp, false, -1);
    }

    /// Deletes `tp`'s log here; a log that is already gone counts as
    /// deleted. `Ok(false)`: the deletion failed (logged).
    async fn delete_log(&self, tp: &TopicPartition) -> Result<bool, ControllerError> {
        match self.log.delete.send(DeleteLog { tp: tp.clone() }).await {
            Ok(Ok(())) | Ok(Err(LogManagerError::UnknownPartition(_))) => Ok(true),
            Ok(Err(e)) => {
                log::error!("deleting the log of {tp} failed: {e}");
                Ok(false)
            }
            Err(_) => Err(ControllerError::Stopped),
        }
    }

    /// Makes this broker's replicas of `topic`'s partitions `indexes` what
    /// their states say (Kafka's `becomeLeaderOrFollower`): finds or
    /// creates their logs, starts or re-assigns their partition actors,
    /// publishes leadership changes, and starts or stops the replica
    /// fetchers. `addresses` names leaders the metadata cache may not know
    /// yet (LeaderAndIsr's live leaders). Answers an error code per
    /// partition.
    async fn become_leader_or_follower(
        &self,
        topic: &TopicMetadata,
        indexes: &[i32],
        addresses: &BTreeMap<i32, String>,
        controller_epoch: i32,
    ) -> Result<Vec<(i32, i16)>, ControllerError> {
        let mine: Vec<(TopicPartition, PartitionMetadata)> = indexes
            .iter()
            .filter_map(|index| {
                let p = topic.partitions.get(index)?;
                (p.replicas.contains(&self.broker_id) || p.leader == self.broker_id)
                    .then(|| (TopicPartition::new(topic.name.clone(), *index), p.clone()))
            })
            .collect();
        // Find or create the logs of replicas new here a few at a time:
        // faster than one after another, without filling the shards'
        // queues so that other partitions' appends wait behind a creation.
        let missing = mine
            .iter()
            .filter(|(tp, _)| self.partitions.registry.get(tp).is_none())
            .map(|(tp, _)| {
                let log = self.log.clone();
                let config = topic.config.log.clone();
                let tp = tp.clone();
                let topic_id = topic.topic_id;
                async move {
                    (
                        tp.clone(),
                        find_or_create_log(&log, tp, config, topic_id).await,
                    )
                }
            });
        let mut found: HashMap<TopicPartition, Result<LogOffsets, ControllerError>> =
            futures_util::stream::iter(missing)
                .buffer_unordered(LOG_CREATION_CONCURRENCY)
                .collect()
                .await;
        let mut codes = Vec::with_capacity(mine.len());
        // A new partition's first act is to record its leader epoch on its
        // shard, with an fsync. Started all at once, thousands of those
        // would queue ahead of other partitions' appends on the same
        // shards (a 2,000-partition creation stalled a producer for over a
        // second); a few at a time, appends interleave with them.
        let mut starting = futures_util::stream::FuturesUnordered::new();
        for (tp, p) in mine {
            let assignment = PartitionAssignment {
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                isr: p.isr.clone(),
                replicas: p.replicas.clone(),
                zk_version: p.zk_version,
                controller_epoch,
            };
            let (handle, offsets) = match found.remove(&tp) {
                None => {
                    let Some(handle) = self.partitions.registry.get(&tp) else {
                        continue;
                    };
                    match handle.addr.send(ApplyAssignment(assignment)).await {
                        Ok(Ok(offsets)) => (handle, offsets),
                        Ok(Err(e)) => {
                            log::warn!("partition {tp}: assignment refused: {e}");
                            // Kafka answers a stale leader epoch so.
                            let code = match e {
                                PartitionError::Replication(
                                    ReplicationError::FencedLeaderEpoch { .. },
                                ) => ResponseError::StaleControllerEpoch.code(),
                                e => e.code(),
                            };
                            codes.push((tp.partition, code));
                            continue;
                        }
                        Err(_) => {
                            codes.push((tp.partition, ResponseError::KafkaStorageError.code()));
                            continue;
                        }
                    }
                }
                Some(Ok(offsets)) => {
                    let start = PartitionStart {
                        assignment,
                        min_insync_replicas: topic.config.min_insync_replicas,
                    };
                    let handle = self.partitions.start(&tp, offsets, start);
                    let addr = handle.addr.clone();
                    // Answered once its start-up (`ctx.wait`) is done.
                    starting.push(async move {
                        let _ = addr.send(GetState).await;
                    });
                    if starting.len() >= LOG_CREATION_CONCURRENCY {
                        starting.next().await;
                    }
                    (handle, offsets)
                }
                Some(Err(ControllerError::Log(
                    e @ LogManagerError::Log(crate::storage::LogError::InconsistentTopicId {
                        ..
                    }),
                ))) => {
                    // Kafka refuses the partition and keeps the files for
                    // the operator: they are another topic's records.
                    log::error!("partition {tp} is not taken up here: {e}");
                    codes.push((tp.partition, ResponseError::InconsistentTopicId.code()));
                    continue;
                }
                Some(Err(ControllerError::Log(e @ LogManagerError::PartitionOffline { .. }))) => {
                    // A log that cannot be read: this partition stays
                    // offline here, the rest are served.
                    log::error!("partition {tp} stays offline: {e}");
                    codes.push((tp.partition, ResponseError::KafkaStorageError.code()));
                    continue;
                }
                Some(Err(e)) => return Err(e),
            };
            self.note_leadership(&tp, p.leader == self.broker_id, p.leader_epoch);
            if p.leader == self.broker_id || p.leader < 0 {
                self.fetchers.unfollow(&tp);
            } else {
                match self.address_of(p.leader, addresses) {
                    Some(address) => self.fetchers.follow(
                        &tp,
                        p.leader,
                        address,
                        p.leader_epoch,
                        handle,
                        offsets,
                    ),
                    None => log::warn!(
                        "partition {tp}: leader {} has no known address; not fetching yet",
                        p.leader
                    ),
                }
            }
            codes.push((tp.partition, 0));
        }
        while starting.next().await.is_some() {}
        Ok(codes)
    }

    /// `host:port` of broker `id`.
    fn address_of(&self, id: i32, addresses: &BTreeMap<i32, String>) -> Option<String> {
        addresses.get(&id).cloned().or_else(|| {
            self.cache
                .read(|m| m.brokers.get(&id).map(|b| format!("{}:{}", b.host, b.port)))
        })
    }

    /// Publishes LeadershipGained/LeadershipLost when this broker's role
    /// for `tp` changed.
    fn note_leadership(&self, tp: &TopicPartition, leads: bool, leader_epoch: i32) {
        let changed = {
            let mut led = self.led.lock().unwrap_or_else(|p| p.into_inner());
            if leads {
                led.insert(tp.clone())
            } else {
                led.remove(tp)
            }
        };
        if !changed {
            return;
        }
        let event = if leads {
            BrokerEvent::LeadershipGained {
                tp: tp.clone(),
                leader_epoch,
            }
        } else {
            BrokerEvent::LeadershipLost { tp: tp.clone() }
        };
        self.partitions.events.publish(event);
    }

    /// A topic's configs and log config: those of `known` (the cache's
    /// entry), or read from `/config/topics/<name>` for a topic not known
    /// here yet.
    async fn configs_of(
        &self,
        name: &str,
        known: Option<&TopicMetadata>,
    ) -> Result<(BTreeMap<String, String>, TopicConfig), ControllerError> {
        if let Some(known) = known {
            return Ok((known.configs.clone(), known.config.clone()));
        }
        let configs = read_topic_configs(self.store.as_ref(), name).await?;
        let config = topic_config(&self.broker_config.current().log_config(), &configs)?;
        Ok((configs, config))
    }

    async fn apply_leader_and_isr(
        &self,
        request: LeaderAndIsrRequest,
    ) -> Result<LeaderAndIsrResponse, ControllerError> {
        let addresses: BTreeMap<i32, String> = request
            .live_leaders
            .iter()
            .map(|l| (l.broker_id.0, format!("{}:{}", l.host_name, l.port)))
            .collect();
        let mut topics = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            let known = self.cache.topic(&name);
            let (configs, config) = self.configs_of(&name, known.as_ref()).await?;
            let partitions: BTreeMap<i32, PartitionMetadata> = topic
                .partition_states
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        PartitionMetadata {
                            leader: p.leader.0,
                            leader_epoch: p.leader_epoch,
                            replicas: p.replicas.iter().map(|b| b.0).collect(),
                            isr: p.isr.iter().map(|b| b.0).collect(),
                            zk_version: p.partition_epoch,
                        },
                    )
                })
                .collect();
            let indexes: Vec<i32> = partitions.keys().copied().collect();
            let metadata = TopicMetadata {
                name: name.clone(),
                topic_id: *topic.topic_id.as_bytes(),
                is_internal: is_internal_topic(&name),
                partitions,
                configs,
                config,
            };
            let codes = self
                .become_leader_or_follower(
                    &metadata,
                    &indexes,
                    &addresses,
                    request.controller_epoch,
                )
                .await?;
            topics.push(
                LeaderAndIsrTopicError::default()
                    .with_topic_id(topic.topic_id)
                    .with_partition_errors(
                        codes
                            .into_iter()
                            .map(|(index, code)| {
                                LeaderAndIsrPartitionError::default()
                                    .with_partition_index(index)
                                    .with_error_code(code)
                            })
                            .collect(),
                    ),
            );
        }
        Ok(LeaderAndIsrResponse::default().with_topics(topics))
    }

    async fn apply_update_metadata(
        &self,
        request: UpdateMetadataRequest,
    ) -> Result<UpdateMetadataResponse, ControllerError> {
        // Brokers dial each other on the inter-broker listener; clients are
        // told the endpoints of the listener they came in on. (`current` is
        // an Arc: the listener name is static, and a clone of the whole
        // static config per UpdateMetadata is not.)
        let inter_broker = self.broker_config.current().inter_broker_listener_name();
        let brokers: BTreeMap<i32, BrokerEndpoint> = request
            .live_brokers
            .iter()
            .filter_map(|b| {
                let listeners: Vec<crate::cluster::ListenerEndpoint> = b
                    .endpoints
                    .iter()
                    .filter_map(|e| {
                        Some(crate::cluster::ListenerEndpoint {
                            name: e.listener.to_string(),
                            security_protocol: crate::config::SecurityProtocol::from_id(
                                e.security_protocol,
                            )?,
                            host: e.host.to_string(),
                            port: u16::try_from(e.port).ok()?,
                        })
                    })
                    .collect();
                let reach = listeners
                    .iter()
                    .find(|l| l.name == inter_broker)
                    .or(listeners.first())?;
                Some((
                    b.id.0,
                    BrokerEndpoint {
                        id: b.id.0,
                        host: reach.host.clone(),
                        port: reach.port,
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                        listeners: listeners.clone(),
                    },
                ))
            })
            .collect();
        let (joined, left) = self.cache.update(|m| {
            let before = std::mem::replace(&mut m.brokers, brokers);
            crate::cluster::membership_changes(&before, &m.brokers)
        });
        for broker_id in joined {
            self.partitions
                .events
                .publish(BrokerEvent::BrokerRegistered { broker_id });
        }
        for broker_id in left {
            self.partitions
                .events
                .publish(BrokerEvent::BrokerLeft { broker_id });
        }
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            if topic
                .partition_states
                .iter()
                .any(|p| p.leader.0 == LEADER_DURING_DELETE)
            {
                self.cache.update(|m| m.topics.remove(&name));
                continue;
            }
            let known = self.cache.topic(&name);
            let (configs, config) = self.configs_of(&name, known.as_ref()).await?;
            let mut partitions = known.map(|t| t.partitions).unwrap_or_default();
            for p in topic.partition_states {
                partitions.insert(
                    p.partition_index,
                    PartitionMetadata {
                        leader: p.leader.0,
                        leader_epoch: p.leader_epoch,
                        replicas: p.replicas.iter().map(|b| b.0).collect(),
                        isr: p.isr.iter().map(|b| b.0).collect(),
                        zk_version: p.zk_version,
                    },
                );
            }
            let metadata = TopicMetadata {
                name: name.clone(),
                topic_id: *topic.topic_id.as_bytes(),
                is_internal: is_internal_topic(&name),
                partitions,
                configs,
                config,
            };
            self.cache.update(|m| m.topics.insert(name, metadata));
        }
        Ok(UpdateMetadataResponse::default())
    }

    async fn apply_stop_replica(
        &self,
        request: StopReplicaRequest,
    ) -> Result<StopReplicaResponse, ControllerError> {
        let mut errors = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            for p in topic.partition_states {
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                self.stop_replica(&tp);
                let code = if p.delete_partition && !self.delete_log(&tp).await? {
                    ResponseError::KafkaStorageError.code()
                } else {
                    0
                };
                errors.push(
                    StopReplicaPartitionError::default()
                        .with_topic_name(TopicName(StrBytes::from_string(name.clone())))
                        .with_partition_index(p.partition_index)
                        .with_error_code(code),
                );
            }
        }
        Ok(StopReplicaResponse::default().with_partition_errors(errors))
    }
}

/// A topic's config overrides, from `/config/topics/<name>` (none when the
/// znode is absent).
pub async fn read_topic_configs(
    store: &dyn MetadataStore,
    name: &str,
) -> Result<BTreeMap<String, String>, ControllerError> {
    Ok(
        match store
            .get(&ConfigEntityZNode::path(ConfigType::Topic, name))
            .await?
        {
            Some((bytes, _)) => ConfigEntityZNode::decode(ConfigType::Topic, name, &bytes)?,
            None => BTreeMap::new(),
        },
    )
}

/// The config of a topic with `configs` over the broker's log defaults
/// `base`.
pub fn topic_config(
    base: &LogConfig,
    configs: &BTreeMap<String, String>,
) -> Result<TopicConfig, ControllerError> {
    let pairs: Vec<(String, String)> = configs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    TopicConfig::from_overrides(base, &pairs)
        .map_err(|e| ControllerError::InvalidConfig(e.to_string()))
}

/// The log of `tp` here, tied to `topic_id` (`partition.metadata`): found,
/// or created empty. A log that exists but cannot be read is reported
/// offline; one that belongs to another topic of the same name is
/// INCONSISTENT_TOPIC_ID and left untouched.
async fn find_or_create_log(
    log: &LogAdmin,
    tp: TopicPartition,
    config: LogConfig,
    topic_id: [u8; 16],
) -> Result<LogOffsets, ControllerError> {
    let offsets = find_or_create_untied_log(log, tp.clone(), config).await?;
    // The zero id: a topic from before topic ids (Kafka's ZERO_UUID).
    if topic_id == [0; 16] {
        return Ok(offsets);
    }
    match log.topic_id.send(AssignTopicId { tp, topic_id }).await {
        Ok(Ok(())) => Ok(offsets),
        Ok(Err(e)) => Err(ControllerError::Log(e)),
        Err(_) => Err(ControllerError::Stopped),
    }
}

async fn find_or_create_untied_log(
    log: &LogAdmin,
    tp: TopicPartition,
    config: LogConfig,
) -> Result<LogOffsets, ControllerError> {
    match log.offsets.send(GetLogOffsets { tp: tp.clone() }).await {
        // Loaded at start-up with the broker's defaults: the topic's own
        // configs (retention, segment size, cleanup.policy...) apply now.
        Ok(Ok(offsets)) => match log.update_config.send(UpdateLogConfig { tp, config }).await {
            Ok(Ok(())) => Ok(offsets),
            Ok(Err(e)) => Err(ControllerError::Log(e)),
            Err(_) => Err(ControllerError::Stopped),
        },
        Ok(Err(LogManagerError::UnknownPartition(_))) => log
            .create
            .send(CreateLog { tp, config })
            .await
            .map_err(|_| ControllerError::Stopped)
            .and_then(|created| created.map_err(ControllerError::from)),
        Ok(Err(e)) => Err(ControllerError::Log(LogManagerError::PartitionOffline {
            tp,
            reason: e.to_string(),
        })),
        Err(_) => Err(ControllerError::Stopped),
    }
}
