//! The controller actor: the only writer of topic metadata. It registers
//! the broker under `/brokers/ids`, becomes controller by creating
//! `/controller` (bumping `/controller_epoch`), loads every topic from the
//! metadata store at start, and serves topic creation, deletion, partition
//! addition and config changes one at a time, in Kafka's znode layout. For
//! the partitions this broker leads it creates logs (through the log actor)
//! and starts partition actors.
//!
//! It works the same over the embedded store and ZooKeeper (one trait). It
//! never touches a data file and never answers clients directly.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use actix::prelude::*;

use crate::cluster::{
    is_internal_topic, validate_topic_name, BrokerEndpoint, MetadataCache, PartitionMetadata,
    TopicMetadata,
};
use crate::config::{apply_topic_overrides, BrokerConfig};
use crate::metadata::assignment::{assign_for_new_topic, assign_replicas, AssignmentError};
use crate::metadata::registration::{claim_ephemeral, ClaimError};
use crate::metadata::store::{CreateMode, MetadataError, MetadataStore, Stat, StoreOp};
use crate::metadata::znodes::{
    ensure_paths, BrokerIdZNode, BrokerInfo, ClusterIdZNode, ConfigEntityZNode, ConfigType,
    ControllerEpochZNode, ControllerZNode, DeleteTopicsTopicZNode, LeaderAndIsr, TopicAssignment,
    TopicPartitionStateZNode, TopicPartitionZNode, TopicPartitionsZNode, TopicZNode, TopicsZNode,
};
use crate::replication::ReplicationError;
use crate::storage::LogConfig;
use crate::topic_partition::TopicPartition;

use super::event_bus::BrokerEvent;
use super::log::{
    AssignTopicId, CreateLog, DeleteLog, GetLogOffsets, LogActorError, LogAdmin, LogOffsets,
    UpdateLogConfig,
};
use super::partition::{
    ApplyAssignment, GetState, PartitionAssignment, PartitionRuntime, StopPartition, UpdateConfig,
};
use super::replica_fetcher::{ReplicaFetcherConfig, ReplicaFetchers};
use super::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};
use kafka_protocol::error::ResponseError;

/// Logs created at once while a topic is created (see `become_leader`).
const LOG_CREATION_CONCURRENCY: usize = 4;

/// Why a topic operation failed; each maps to one Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("topic '{0}' already exists")]
    AlreadyExists(String),
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    #[error("unknown topic '{0}'")]
    UnknownTopic(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("topic deletion is disabled (delete.topic.enable=false)")]
    DeletionDisabled,
    #[error("{0}")]
    InvalidRequest(String),
    #[error("metadata store: {0}")]
    Store(#[from] MetadataError),
    #[error("log: {0}")]
    Log(#[from] LogActorError),
    #[error("the controller is not running")]
    Stopped,
    #[error("this broker is not the controller")]
    NotController,
    /// A controller write found `/controller_epoch` moved on: another
    /// broker was elected meanwhile. This one resigns.
    #[error("another controller was elected (controller epoch {epoch} is no longer current)")]
    ControllerMoved { epoch: i32 },
    #[error(
        "broker.id {broker_id} is already registered by another live broker (ZooKeeper \
         session {owner:#x}); give each broker its own broker.id"
    )]
    DuplicateBrokerId { broker_id: i32, owner: i64 },
    #[error(
        "another broker is the controller of this cluster (ZooKeeper session {owner:#x}); \
         ferrolog does not run several brokers in one cluster yet"
    )]
    ControllerElsewhere { owner: i64 },
    #[error("broker {0} is not registered")]
    BrokerNotAvailable(i32),
    #[error("{0}")]
    PolicyViolation(String),
    #[error("broker {broker}'s epoch {requested} is older than its registration's {current}")]
    StaleBrokerEpoch {
        broker: i32,
        requested: i64,
        current: i64,
    },
}

impl TopicError {
    pub fn code(&self) -> i16 {
        use kafka_protocol::error::ResponseError as E;
        match self {
            TopicError::AlreadyExists(_) => E::TopicAlreadyExists.code(),
            TopicError::InvalidTopic(_) => E::InvalidTopicException.code(),
            TopicError::UnknownTopic(_) => E::UnknownTopicOrPartition.code(),
            TopicError::InvalidPartitions(_) => E::InvalidPartitions.code(),
            TopicError::InvalidReplicationFactor(_) => E::InvalidReplicationFactor.code(),
            TopicError::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment.code(),
            TopicError::InvalidConfig(_) => E::InvalidConfig.code(),
            TopicError::DeletionDisabled => E::TopicDeletionDisabled.code(),
            TopicError::InvalidRequest(_) => E::InvalidRequest.code(),
            TopicError::Log(e) => crate::api::error_code(e),
            TopicError::BrokerNotAvailable(_) => E::BrokerNotAvailable.code(),
            TopicError::PolicyViolation(_) => E::PolicyViolation.code(),
            TopicError::StaleBrokerEpoch { .. } => E::StaleBrokerEpoch.code(),
            // The controller may be elsewhere (or the store unreachable):
            // clients retry and refresh metadata.
            TopicError::ControllerElsewhere { .. }
            | TopicError::NotController
            | TopicError::ControllerMoved { .. } => E::NotController.code(),
            TopicError::Store(_) | TopicError::Stopped | TopicError::DuplicateBrokerId { .. } => {
                E::UnknownServerError.code()
            }
        }
    }
}

impl From<AssignmentError> for TopicError {
    fn from(e: AssignmentError) -> Self {
        match e {
            AssignmentError::InvalidPartitions(_) => TopicError::InvalidPartitions(e.to_string()),
            AssignmentError::InvalidReplicationFactor { .. } => {
                TopicError::InvalidReplicationFactor(e.to_string())
            }
            AssignmentError::DuplicateBroker(_) => {
                TopicError::InvalidReplicaAssignment(e.to_string())
            }
        }
    }
}

/// What a read of `/brokers/ids` found against the brokers known before.
struct BrokerChanges {
    /// New, or registered again (`bounced` are here too).
    joined: Vec<i32>,
    left: Vec<i32>,
    /// Registered again with a new broker epoch before this controller saw
    /// them go (KIP-380).
    bounced: Vec<i32>,
}

/// The shared pieces every controller operation works on.
#[derive(Clone)]
struct Shared {
    broker_id: i32,
    config: BrokerConfig,
    store: Arc<dyn MetadataStore>,
    log: LogAdmin,
    cache: MetadataCache,
    partitions: PartitionRuntime,
    /// Whether this broker is the active controller, and its epoch; on a
    /// standby, the newest controller epoch seen in control requests (older
    /// ones are fenced off with STALE_CONTROLLER_EPOCH).
    role: Arc<std::sync::Mutex<Role>>,
    /// The active controller's channel to each other live broker.
    channels: Arc<std::sync::Mutex<HashMap<i32, ChannelHandle>>>,
    /// The newest `/config/changes` notification applied here.
    config_changes_seen: Arc<std::sync::atomic::AtomicI64>,
    /// The replica fetchers copying the partitions this broker follows.
    fetchers: ReplicaFetchers,
    /// The partitions this broker leads (for leadership events).
    led: Arc<std::sync::Mutex<std::collections::HashSet<TopicPartition>>>,
    /// Brokers in a controlled shutdown (active controller only): live,
    /// but never given a leadership, until they leave or register again.
    shutting_down: Arc<std::sync::Mutex<std::collections::BTreeSet<i32>>>,
}

/// This broker's part in the controller election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Role {
    active: bool,
    /// Between a session expiry and the registration on the new session:
    /// no election may run (this broker is not registered).
    registering: bool,
    controller_epoch: i32,
    /// While active: the version of `/controller_epoch` this controller
    /// wrote its epoch at. Every controller write checks it in the same
    /// transaction (Kafka's `wrapRequestWithControllerEpochCheck`), so a
    /// controller that was paused or cut off while a successor was elected
    /// can write nothing.
    epoch_zk_version: i32,
    /// This broker's epoch (its registration's czxid, KIP-380).
    broker_epoch: i64,
}

pub struct Controller {
    shared: Shared,
    link: SupervisorLink,
    registration: Registration,
    /// Whether the active controller's watches run already.
    watching_active: bool,
    /// Topics whose znode this controller watches.
    topic_watches: std::collections::HashSet<String>,
    /// Losing the registration for good (another live broker took the
    /// id after a session expiry) ends the broker.
    fatal: BrokerFatal,
}

/// What this broker claims in the metadata store: its registration under
/// `/brokers/ids` and the controller role.
#[derive(Debug, Clone)]
struct Registration {
    broker_id: i32,
    info: BrokerInfo,
    /// How long a znode held by another session is waited on: one session
    /// timeout, enough for ZooKeeper to expire this broker's previous
    /// process after a crash.
    wait: std::time::Duration,
}

impl Registration {
    fn new(config: &BrokerConfig, advertised: &AdvertisedEndpoint) -> Registration {
        let broker_id = config.broker_id.max(0);
        Registration {
            broker_id,
            info: BrokerInfo {
                id: broker_id,
                host: advertised.host.clone(),
                port: advertised.port as i32,
                endpoints: vec![format!(
                    "PLAINTEXT://{}:{}",
                    advertised.host, advertised.port
                )],
                rack: config.broker_rack.clone(),
                timestamp_ms: 0,
            },
            wait: match config.zookeeper_connect {
                // ZooKeeper notices a dead session within its timeout.
                Some(_) => std::time::Duration::from_millis(
                    config.zookeeper_session_timeout_ms.saturating_add(2_000),
                ),
                // The embedded store drops every ephemeral znode at open.
                None => std::time::Duration::ZERO,
            },
        }
    }

    /// Registers the broker; its epoch is the registration's creation
    /// zxid (KIP-380).
    async fn register(&self, store: &dyn MetadataStore) -> Result<i64, TopicError> {
        let broker_id = self.broker_id;
        let now_ms = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        let info = BrokerInfo {
            timestamp_ms: now_ms,
            ..self.info.clone()
        };
        let registered = claim_ephemeral(
            store,
            &BrokerIdZNode::path(broker_id),
            &BrokerIdZNode::encode(&info),
            self.wait,
        )
        .await
        .map_err(|e| match e {
            ClaimError::HeldByAnother { owner, .. } => {
                TopicError::DuplicateBrokerId { broker_id, owner }
            }
            ClaimError::Store(e) => TopicError::Store(e),
        })?;
        Ok(registered.creation_zxid)
    }

    /// Runs for controller as Kafka's `registerControllerAndIncrementControllerEpoch`
    /// does: one transaction creates `/controller` and moves
    /// `/controller_epoch` on from the version read, so no broker ever
    /// holds `/controller` without a new epoch, or an epoch without
    /// `/controller`. Returns the new epoch and the version it was written
    /// at; `Ok(None)` when another live broker holds the role. A claim left
    /// by this broker's own dead predecessor is waited out (one session
    /// timeout); a claim of this very session (a transaction whose reply
    /// was lost) is the win it looks like.
    async fn elect(&self, store: &dyn MetadataStore) -> Result<Option<(i32, i32)>, TopicError> {
        let broker_id = self.broker_id;
        let now_ms = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        let claim = ControllerZNode::encode(broker_id, now_ms);
        let deadline = std::time::Instant::now() + self.wait;
        // Bounded: each pass either wins, finds a holder, or lost a race
        // that changed what it read.
        for _ in 0..ELECTION_ATTEMPTS {
            let (epoch, epoch_version) = match store.get(ControllerEpochZNode::path()).await? {
                Some((bytes, stat)) => (ControllerEpochZNode::decode(&bytes)?, stat.version),
                // Kafka creates it at 0 first, so the first controller has 1.
                None => match store
                    .create(
                        ControllerEpochZNode::path(),
                        ControllerEpochZNode::encode(0),
                        CreateMode::Persistent,
                    )
                    .await
                {
                    Ok(()) | Err(MetadataError::NodeExists(_)) => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            let gone = store.watch(ControllerZNode::path()).await?;
            if let Some((bytes, stat)) = store.get(ControllerZNode::path()).await? {
                let holder = ControllerZNode::decode(&bytes)?;
                if stat.ephemeral_owner == store.session_id() {
                    return Ok(Some((epoch, epoch_version)));
                }
                if holder != broker_id {
                    return Ok(None);
                }
                // Our own previous process: wait for its session to end.
                let now = std::time::Instant::now();
                if now >= deadline {
                    return Err(TopicError::ControllerElsewhere {
                        owner: stat.ephemeral_owner,
                    });
                }
                let _ = tokio::time::timeout(deadline - now, gone).await;
                continue;
            }
            let ops = vec![
                StoreOp::Create {
                    path: ControllerZNode::path().to_owned(),
                    data: claim.clone(),
                    mode: CreateMode::Ephemeral,
                },
                StoreOp::Set {
                    path: ControllerEpochZNode::path().to_owned(),
                    data: ControllerEpochZNode::encode(epoch + 1),
                    expected_version: Some(epoch_version),
                },
            ];
            match store.multi(ops).await {
                Ok(stats) => {
                    let version = stats.get(1).map_or(epoch_version + 1, |s| s.version);
                    return Ok(Some((epoch + 1, version)));
                }
                // Someone else won, or the reply was lost and the retry met
                // its own writes: the next pass reads which.
                Err(MetadataError::NodeExists(_) | MetadataError::BadVersion { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }
}

/// How often the active controller looks for topics without a watch on
/// their znode.
const TOPIC_WATCH_SCAN: std::time::Duration = std::time::Duration::from_secs(2);

/// `/config/changes` notifications the controller keeps.
const KEPT_CONFIG_CHANGES: usize = 100;

/// Attempts at the election before deferring to whoever holds `/controller`.
const ELECTION_ATTEMPTS: usize = 10;

/// How long a topic deletion waits for the brokers holding replicas to
/// answer StopReplica; one that does not keeps the deletion pending.
const DELETION_CONFIRMATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How often the active controller tries pending deletions again (Kafka
/// retries them when an ineligible replica's broker comes back; a broker
/// that stayed registered but did not answer is retried on this timer).
const PENDING_DELETION_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// This broker's advertised endpoint.
#[derive(Debug, Clone)]
pub struct AdvertisedEndpoint {
    pub host: String,
    pub port: u16,
}

impl Controller {
    /// Register, elect, load every topic, start partition actors for the
    /// partitions led here, then start the actor.
    pub async fn start(
        config: BrokerConfig,
        store: Arc<dyn MetadataStore>,
        log: LogAdmin,
        cache: MetadataCache,
        partitions: PartitionRuntime,
        advertised: AdvertisedEndpoint,
        fatal: BrokerFatal,
    ) -> Result<Addr<Controller>, TopicError> {
        let broker_id = config.broker_id.max(0);
        ensure_paths(store.as_ref()).await?;
        let cluster_id = match store.get(ClusterIdZNode::path()).await? {
            Some((bytes, _)) => ClusterIdZNode::decode(&bytes)?,
            None => {
                let id = ClusterIdZNode::id_from_uuid(*uuid::Uuid::new_v4().as_bytes());
                store
                    .create_recursive(
                        ClusterIdZNode::path(),
                        ClusterIdZNode::encode(&id),
                        CreateMode::Persistent,
                    )
                    .await?;
                id
            }
        };
        let registration = Registration::new(&config, &advertised);
        let broker_epoch = registration.register(store.as_ref()).await?;
        log::info!(
            "broker {broker_id} registered at {} (broker epoch {broker_epoch})",
            BrokerIdZNode::path(broker_id)
        );
        cache.update(|m| {
            m.cluster_id = cluster_id.clone();
            m.controller_id = -1;
            m.brokers.insert(
                broker_id,
                BrokerEndpoint {
                    id: broker_id,
                    host: advertised.host.clone(),
                    port: advertised.port,
                    rack: config.broker_rack.clone(),
                },
            );
        });
        let fetcher_config = ReplicaFetcherConfig::from_broker(&config);
        let shared = Shared {
            broker_id,
            config,
            store,
            log,
            cache,
            partitions,
            role: Arc::new(std::sync::Mutex::new(Role {
                active: false,
                registering: false,
                controller_epoch: 0,
                epoch_zk_version: -1,
                broker_epoch,
            })),
            channels: Arc::default(),
            config_changes_seen: Arc::new(std::sync::atomic::AtomicI64::new(-1)),
            fetchers: ReplicaFetchers::new(fetcher_config),
            led: Arc::default(),
            shutting_down: Arc::default(),
        };
        // Notifications older than start-up are in the configs read below.
        for name in shared
            .store
            .children(ConfigEntityChangeNotificationZNode::PATH)
            .await?
        {
            shared.note_config_change(&name);
        }
        shared
            .partitions
            .events
            .publish(BrokerEvent::BrokerRegistered { broker_id });
        match registration.elect(shared.store.as_ref()).await? {
            Some((epoch, epoch_zk_version)) => {
                log::info!(
                    "broker {broker_id} is the controller (epoch {epoch}) of cluster {cluster_id}"
                );
                shared.activate(epoch, epoch_zk_version).await?;
            }
            None => {
                let holder = shared.controller_holder().await?;
                log::info!(
                    "broker {broker_id} joined cluster {cluster_id}; broker {holder} is the controller"
                );
                shared.cache.update(|m| m.controller_id = holder);
            }
        }
        let link = SupervisorLink::default();
        let controller = Controller {
            shared,
            link: link.clone(),
            registration,
            watching_active: false,
            topic_watches: Default::default(),
            fatal: fatal.clone(),
        };
        Ok(supervise(
            None,
            ChildSpec::new("the controller", Escalation::ShutdownBroker(fatal)),
            link,
            move |_| controller,
        ))
    }
}

impl Shared {
    fn base_log_config(&self) -> LogConfig {
        self.config.log_config()
    }

    fn live_brokers(&self) -> Vec<i32> {
        self.cache.read(|m| m.brokers.keys().copied().collect())
    }

    async fn resume_deletions(&self, _msg: ResumeDeletions) -> Result<(), TopicError> {
        if !self.is_active() || !self.config.delete_topic_enable {
            return Ok(());
        }
        self.finish_pending_deletions().await
    }

    async fn finish_pending_deletions(&self) -> Result<(), TopicError> {
        for topic in self
            .store
            .children(crate::metadata::znodes::DeleteTopicsZNode::path())
            .await?
        {
            log::info!("finishing the deletion of topic {topic} interrupted by a restart");
            self.delete_topic_data(&topic).await?;
        }
        Ok(())
    }

    async fn load_topics(&self) -> Result<(), TopicError> {
        for name in self.store.children(TopicsZNode::path()).await? {
            // A deletion waiting for an offline replica: not served again.
            if self.marked_for_deletion(&name).await? {
                continue;
            }
            self.load_topic(&name).await?;
        }
        Ok(())
    }

    /// Whether `/admin/delete_topics/<name>` marks the topic (a deletion in
    /// progress, or waiting for a broker that holds one of its replicas).
    async fn marked_for_deletion(&self, name: &str) -> Result<bool, TopicError> {
        Ok(self
            .store
            .get(&DeleteTopicsTopicZNode::path(name))
            .await?
            .is_some())
    }

    /// Takes up a topic from its znodes: ids and missing partition states
    /// are filled in, the partitions led here start.
    async fn load_topic(&self, name: &str) -> Result<(), TopicError> {
        let Some((bytes, stat)) = self.store.get(&TopicZNode::path(name)).await? else {
            return Ok(());
        };
        let TopicAssignment {
            partitions: assignment,
            topic_id,
        } = TopicZNode::decode(name, &bytes)?;
        let topic_id = match topic_id {
            Some(id) => id,
            // Written before Kafka 2.8 (or by an older ferrolog): give it
            // an id and keep it, as Kafka's controller does.
            None => {
                let id = new_topic_id();
                self.store
                    .set(
                        &TopicZNode::path(name),
                        TopicZNode::encode(&assignment, id),
                        Some(stat.version),
                    )
                    .await?;
                log::info!("topic {name} had no topic id; assigned one");
                id
            }
        };
        let mut configs = self.topic_configs(name).await?;
        if name == crate::group::OFFSETS_TOPIC {
            self.make_offsets_topic_compacted(&mut configs).await?;
        }
        let log_config = self.log_config_for(&configs)?;
        let topic = self
            .become_leader(name, topic_id, &assignment, configs, log_config)
            .await?;
        self.cache
            .update(|m| m.topics.insert(name.to_owned(), topic));
        Ok(())
    }

    /// `/brokers/topics` changed: take up topics that another writer (a
    /// ZooKeeper-era admin tool, `kafka-topics.sh --zookeeper`) created
    /// there, as Kafka's `TopicChange` handler does. Topics this
    /// controller created are known already.
    async fn topics_changed(&self, change: TopicsChanged) -> Result<(), TopicError> {
        if !self.is_active() {
            return Ok(());
        }
        for name in change.names {
            if self.cache.read(|m| m.topics.contains_key(&name)) {
                continue;
            }
            if let Err(e) = validate_topic_name(&name) {
                log::warn!("ignoring /brokers/topics/{name}: {e}");
                continue;
            }
            if self.marked_for_deletion(&name).await? {
                continue;
            }
            log::info!("taking up topic {name}, created in the metadata store by another writer");
            self.load_topic(&name).await?;
            if let Some(topic) = self.cache.topic(&name) {
                self.propagate(std::slice::from_ref(&topic));
            }
            let partitions = self
                .cache
                .topic(&name)
                .map_or(0, |t| t.partitions.len() as i32);
            self.partitions.events.publish(BrokerEvent::TopicCreated {
                topic: name,
                partitions,
            });
        }
        Ok(())
    }

    /// Gives a topic's new partitions (in `assignment`, written to the
    /// store) their leaders and tells the brokers.
    async fn take_up_partitions(
        &self,
        name: String,
        topic: &TopicMetadata,
        assignment: &BTreeMap<i32, Vec<i32>>,
    ) -> Result<(), TopicError> {
        let updated = self
            .become_leader(
                &name,
                topic.topic_id,
                assignment,
                topic.configs.clone(),
                topic.log_config.clone(),
            )
            .await?;
        log::info!(
            "topic {name} now has {} partitions",
            updated.partitions.len()
        );
        self.propagate(std::slice::from_ref(&updated));
        self.cache.update(|m| m.topics.insert(name, updated));
        Ok(())
    }

    /// `/brokers/topics/<topic>` changed (Kafka's PartitionModifications):
    /// partitions that another broker added there get states, leaders and
    /// the brokers' attention.
    async fn assignment_changed(&self, change: AssignmentChanged) -> Result<(), TopicError> {
        if !self.is_active() {
            return Ok(());
        }
        let name = change.topic;
        let Some(topic) = self.cache.topic(&name) else {
            return Ok(());
        };
        let Some((bytes, _)) = self.store.get(&TopicZNode::path(&name)).await? else {
            return Ok(());
        };
        let assignment = TopicZNode::decode(&name, &bytes)?.partitions;
        if assignment.keys().all(|p| topic.partitions.contains_key(p)) {
            return Ok(());
        }
        if self
            .store
            .get(&TopicPartitionsZNode::path(&name))
            .await?
            .is_none()
        {
            self.store
                .create_if_missing(&TopicPartitionsZNode::path(&name))
                .await?;
        }
        self.take_up_partitions(name, &topic, &assignment).await
    }

    /// `/admin/delete_topics` changed: delete the topics marked there (what
    /// `kafka-topics.sh --zookeeper --delete` writes), or drop the marks
    /// when `delete.topic.enable` is false, as Kafka does.
    async fn deletions_requested(&self, marks: DeletionsRequested) -> Result<(), TopicError> {
        if !self.is_active() {
            return Ok(());
        }
        for name in marks.names {
            let exists = self.cache.read(|m| m.topics.contains_key(&name))
                || self.store.get(&TopicZNode::path(&name)).await?.is_some();
            if exists && self.config.delete_topic_enable {
                self.delete_topic_data(&name).await?;
                continue;
            }
            if exists {
                log::warn!(
                    "not deleting topic {name}, marked in {}: delete.topic.enable is false",
                    crate::metadata::znodes::DeleteTopicsZNode::path()
                );
            }
            match self
                .store
                .delete(&DeleteTopicsTopicZNode::path(&name), None)
                .await
            {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Kafka's election rules for one partition after brokers come or go
    /// (only the active controller calls it): a dead leader is replaced
    /// by the first replica, in assignment order, that is live and in the
    /// ISR, and dead brokers leave the ISR; with no live ISR member the
    /// partition goes offline (leader -1, the ISR kept so its last member
    /// can lead again) unless unclean election is on, when the first live
    /// replica leads and the loss is logged. Every change bumps the leader
    /// epoch. `None`: nothing changes.
    fn elect(
        &self,
        tp: &TopicPartition,
        state: &LeaderAndIsr,
        replicas: &[i32],
        live: &[i32],
        unclean: bool,
    ) -> Option<LeaderAndIsr> {
        let live_isr: Vec<i32> = state
            .isr
            .iter()
            .copied()
            .filter(|b| live.contains(b))
            .collect();
        let next = |leader: i32, isr: Vec<i32>| LeaderAndIsr {
            leader,
            leader_epoch: state.leader_epoch + 1,
            isr,
            controller_epoch: self.controller_epoch(),
        };
        if live.contains(&state.leader) {
            return (live_isr.len() < state.isr.len() && !live_isr.is_empty())
                .then(|| next(state.leader, live_isr));
        }
        // A broker in a controlled shutdown is about to go: never a new leader.
        let shutting_down = self.shutting_down();
        let eligible = |r: &i32| live.contains(r) && !shutting_down.contains(r);
        if let Some(leader) = replicas
            .iter()
            .copied()
            .find(|r| eligible(r) && state.isr.contains(r))
        {
            return Some(next(leader, live_isr));
        }
        if unclean {
            if let Some(leader) = replicas.iter().copied().find(eligible) {
                log::warn!(
                    "partition {tp}: unclean election of broker {leader}, not in the ISR {:?}: \
                     records its old leader {} acknowledged may be lost",
                    state.isr,
                    state.leader
                );
                return Some(next(leader, vec![leader]));
            }
        }
        (state.leader != LeaderAndIsr::NO_LEADER)
            .then(|| next(LeaderAndIsr::NO_LEADER, state.isr.clone()))
    }

    /// Whether `topic` allows unclean leader election (its config, else
    /// the broker's `unclean.leader.election.enable`).
    fn unclean_allowed(&self, configs: &BTreeMap<String, String>) -> bool {
        configs
            .get("unclean.leader.election.enable")
            .and_then(|v| v.to_ascii_lowercase().parse::<bool>().ok())
            .unwrap_or(self.config.unclean_leader_election_enable)
    }

    /// Re-reads `tp`'s state and applies [`Shared::elect`]. Returns the
    /// state in force and its version.
    async fn reelect(
        &self,
        tp: &TopicPartition,
        replicas: &[i32],
        live: &[i32],
        unclean: bool,
    ) -> Result<Option<(LeaderAndIsr, i32)>, TopicError> {
        self.rewrite_state(tp, |state| self.elect(tp, state, replicas, live, unclean))
            .await
    }

    /// Re-reads `tp`'s state, asks `decide` for the next one (`None`:
    /// keep it) and writes it conditionally on the version read (a leader
    /// may be changing the ISR at the same moment: then read again).
    /// Returns the state in force and its version.
    async fn rewrite_state(
        &self,
        tp: &TopicPartition,
        decide: impl Fn(&LeaderAndIsr) -> Option<LeaderAndIsr>,
    ) -> Result<Option<(LeaderAndIsr, i32)>, TopicError> {
        let path = TopicPartitionStateZNode::path(tp);
        for _ in 0..ELECTION_ATTEMPTS {
            let Some((bytes, stat)) = self.store.get(&path).await? else {
                return Ok(None);
            };
            let state = TopicPartitionStateZNode::decode(tp, &bytes)?;
            if !self.is_active() {
                return Ok(Some((state, stat.version)));
            }
            let Some(elected) = decide(&state) else {
                return Ok(Some((state, stat.version)));
            };
            let write = StoreOp::Set {
                path: path.clone(),
                data: TopicPartitionStateZNode::encode(&elected),
                expected_version: Some(stat.version),
            };
            match self.controller_write(vec![write]).await {
                Ok(stats) => {
                    let written = stats.first().copied().unwrap_or(Stat {
                        version: stat.version + 1,
                        creation_zxid: 0,
                        ephemeral_owner: 0,
                    });
                    if elected.leader == LeaderAndIsr::NO_LEADER {
                        log::warn!(
                            "partition {tp} is offline: no in-sync replica of {:?} is live",
                            elected.isr
                        );
                    } else {
                        log::info!(
                            "partition {tp}: leader {} (leader epoch {}), ISR {:?}",
                            elected.leader,
                            elected.leader_epoch,
                            elected.isr
                        );
                    }
                    return Ok(Some((elected, written.version)));
                }
                Err(TopicError::Store(MetadataError::BadVersion { .. })) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(TopicError::Store(MetadataError::BadVersion {
            path,
            expected: -1,
            actual: -1,
        }))
    }

    /// Stops this broker's replica of `tp`, if it has one (deletion,
    /// StopReplica, shutdown). Says whether there was one.
    fn stop_leading(&self, tp: &TopicPartition) -> bool {
        self.fetchers.unfollow(tp);
        let Some(handle) = self.partitions.registry.remove(tp) else {
            return false;
        };
        handle.addr.do_send(StopPartition);
        self.note_leadership(tp, false, -1);
        true
    }

    /// Deletes `tp`'s log here; a log that is already gone counts as
    /// deleted. `Ok(false)`: the deletion failed (logged).
    async fn delete_log(&self, tp: &TopicPartition) -> Result<bool, TopicError> {
        match self.log.delete.send(DeleteLog { tp: tp.clone() }).await {
            Ok(Ok(())) | Ok(Err(LogActorError::UnknownPartition(_))) => Ok(true),
            Ok(Err(e)) => {
                log::error!("deleting the log of {tp} failed: {e}");
                Ok(false)
            }
            Err(_) => Err(TopicError::Stopped),
        }
    }

    /// Makes this broker's replicas of `topic`'s partitions `indexes` what
    /// their states say (the one place both the active controller's own
    /// decisions and a LeaderAndIsr from it land): finds or creates their
    /// logs, starts or re-assigns their partition actors, publishes
    /// leadership changes, and starts or stops the replica fetchers.
    /// `addresses` names leaders the metadata cache may not know yet
    /// (LeaderAndIsr's live leaders). Answers an error code per partition.
    async fn apply_local(
        &self,
        topic: &TopicMetadata,
        indexes: &[i32],
        addresses: &BTreeMap<i32, String>,
    ) -> Result<Vec<(i32, i16)>, TopicError> {
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
                let config = topic.log_config.clone();
                let tp = tp.clone();
                let topic_id = topic.topic_id;
                async move { (tp.clone(), find_or_create_log(&log, tp, config, topic_id).await) }
            });
        use futures_util::StreamExt;
        let mut found: HashMap<TopicPartition, Result<LogOffsets, TopicError>> =
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
                controller_epoch: self.controller_epoch(),
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
                                LogActorError::Replication(
                                    ReplicationError::FencedLeaderEpoch { .. },
                                ) => ResponseError::StaleControllerEpoch.code(),
                                e => crate::api::error_code(&e),
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
                    let handle = self.partitions.start(&tp, offsets, assignment);
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
                Some(Err(TopicError::Log(
                    e @ LogActorError::Log(crate::storage::LogError::InconsistentTopicId { .. }),
                ))) => {
                    // Kafka refuses the partition and keeps the files for
                    // the operator: they are another topic's records.
                    log::error!("partition {tp} is not taken up here: {e}");
                    codes.push((tp.partition, ResponseError::InconsistentTopicId.code()));
                    continue;
                }
                Some(Err(TopicError::Log(e @ LogActorError::PartitionOffline { .. }))) => {
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

    /// `__consumer_offsets` written before compaction existed kept every
    /// record (no retention): it becomes `cleanup.policy=compact`, as Kafka
    /// creates it, so loading reads only what compaction keeps.
    async fn make_offsets_topic_compacted(
        &self,
        configs: &mut BTreeMap<String, String>,
    ) -> Result<(), TopicError> {
        if configs.get("cleanup.policy").map(String::as_str) == Some("compact") {
            return Ok(());
        }
        configs.insert("cleanup.policy".into(), "compact".into());
        configs.remove("retention.ms");
        configs.remove("retention.bytes");
        self.write_topic_configs(crate::group::OFFSETS_TOPIC, configs)
            .await?;
        log::info!(
            "{} is now cleanup.policy=compact (it kept every record before)",
            crate::group::OFFSETS_TOPIC
        );
        Ok(())
    }

    /// Replace `/config/topics/<name>` (created when missing).
    async fn write_topic_configs(
        &self,
        name: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), TopicError> {
        let path = ConfigEntityZNode::path(ConfigType::Topic, name);
        let data = ConfigEntityZNode::encode(configs);
        match self.store.set(&path, data.clone(), None).await {
            Ok(_) => Ok(()),
            Err(MetadataError::NoNode(_)) => Ok(self
                .store
                .create_recursive(&path, data, CreateMode::Persistent)
                .await?),
            Err(e) => Err(e.into()),
        }
    }

    async fn topic_configs(&self, name: &str) -> Result<BTreeMap<String, String>, TopicError> {
        Ok(
            match self
                .store
                .get(&ConfigEntityZNode::path(ConfigType::Topic, name))
                .await?
            {
                Some((bytes, _)) => ConfigEntityZNode::decode(ConfigType::Topic, name, &bytes)?,
                None => BTreeMap::new(),
            },
        )
    }

    fn log_config_for(&self, configs: &BTreeMap<String, String>) -> Result<LogConfig, TopicError> {
        let pairs: Vec<(String, String)> = configs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        apply_topic_overrides(&self.base_log_config(), &pairs)
            .map_err(|e| TopicError::InvalidConfig(e.to_string()))
    }

    /// Write missing partition states (electing leaders where needed),
    /// then make this broker's replicas of the topic lead or follow as the
    /// states say. Returns the topic as Metadata shows it.
    async fn become_leader(
        &self,
        name: &str,
        topic_id: [u8; 16],
        assignment: &BTreeMap<i32, Vec<i32>>,
        configs: BTreeMap<String, String>,
        log_config: LogConfig,
    ) -> Result<TopicMetadata, TopicError> {
        let live = self.live_brokers();
        let unclean = self.unclean_allowed(&configs);
        let mut partitions = BTreeMap::new();
        for (&index, replicas) in assignment {
            let tp = TopicPartition::new(name, index);
            let state_path = TopicPartitionStateZNode::path(&tp);
            let (state, version) = match self.reelect(&tp, replicas, &live, unclean).await? {
                Some(found) => found,
                None => {
                    let state = self.initial_state(replicas, &live);
                    let partition_path = TopicPartitionZNode::path(&tp);
                    let mut ops = Vec::new();
                    if self.store.get(&partition_path).await?.is_none() {
                        if self
                            .store
                            .get(&TopicPartitionsZNode::path(name))
                            .await?
                            .is_none()
                        {
                            ops.push(StoreOp::create(TopicPartitionsZNode::path(name), Vec::new()));
                        }
                        ops.push(StoreOp::create(partition_path, Vec::new()));
                    }
                    ops.push(StoreOp::create(
                        state_path,
                        TopicPartitionStateZNode::encode(&state),
                    ));
                    self.controller_write(ops).await?;
                    (state, 0)
                }
            };
            partitions.insert(index, partition_metadata(&state, replicas, version));
        }
        let topic = TopicMetadata {
            name: name.to_string(),
            topic_id,
            is_internal: is_internal_topic(name),
            partitions,
            configs,
            log_config,
        };
        self.apply_local(
            &topic,
            &topic.partitions.keys().copied().collect::<Vec<_>>(),
            &BTreeMap::new(),
        )
        .await?;
        Ok(topic)
    }

    async fn create_topic(&self, request: CreateTopic) -> Result<TopicMetadata, TopicError> {
        let name = request.name;
        validate_topic_name(&name).map_err(|e| TopicError::InvalidTopic(e.to_string()))?;
        if self.cache.topic(&name).is_some()
            || self.store.get(&TopicZNode::path(&name)).await?.is_some()
        {
            return Err(TopicError::AlreadyExists(name));
        }
        let brokers = self.live_brokers();
        let assignment = if request.assignments.is_empty() {
            let partitions = if request.num_partitions == -1 {
                self.config.num_partitions
            } else {
                request.num_partitions
            };
            self.check_partition_count(partitions)?;
            let replication_factor = if request.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                request.replication_factor
            };
            let racked: Vec<(i32, Option<String>)> = self
                .cache
                .read(|m| m.brokers.values().map(|b| (b.id, b.rack.clone())).collect());
            assign_for_new_topic(&racked, partitions, replication_factor, seed_for(&name))?
        } else {
            if request.num_partitions != -1 || request.replication_factor != -1 {
                return Err(TopicError::InvalidRequest(
                    "both replica assignments and partitions/replication factor were given".into(),
                ));
            }
            self.check_partition_count(request.assignments.len() as i32)?;
            validate_assignment(&request.assignments, &brokers, 0)?;
            request.assignments
        };
        self.check_open_files(assignment.values())?;
        let configs: BTreeMap<String, String> = request.configs.into_iter().collect();
        let log_config = self.log_config_for(&configs)?;
        if request.validate_only {
            return Ok(TopicMetadata {
                name: name.clone(),
                topic_id: new_topic_id(),
                is_internal: is_internal_topic(&name),
                partitions: assignment
                    .iter()
                    .map(|(&p, replicas)| {
                        (
                            p,
                            PartitionMetadata {
                                leader: replicas[0],
                                leader_epoch: 0,
                                replicas: replicas.clone(),
                                isr: replicas.clone(),
                                zk_version: 0,
                            },
                        )
                    })
                    .collect(),
                configs,
                log_config,
            });
        }
        let topic_id = new_topic_id();
        // One transaction: the config first, then the topic, then every
        // partition's state, so a watcher that sees the topic finds its
        // config (Kafka's order) and the store writes once per topic.
        let config_path = ConfigEntityZNode::path(ConfigType::Topic, &name);
        let config_data = ConfigEntityZNode::encode(&configs);
        let mut ops = vec![match self.store.get(&config_path).await? {
            Some(_) => StoreOp::Set {
                path: config_path,
                data: config_data,
                expected_version: None,
            },
            None => StoreOp::create(config_path, config_data),
        }];
        ops.push(StoreOp::create(
            TopicZNode::path(&name),
            TopicZNode::encode(&assignment, topic_id),
        ));
        if !self.is_active() {
            // Not the controller: write the topic as Kafka's AdminZkClient
            // does from any broker; the controller's watch on
            // /brokers/topics takes it up and elects its leaders.
            self.store.multi(ops).await.map_err(|e| match e {
                MetadataError::NodeExists(_) => TopicError::AlreadyExists(name.clone()),
                other => TopicError::Store(other),
            })?;
            log::info!("wrote topic {name} for the controller to take up");
            return Ok(TopicMetadata {
                name: name.clone(),
                topic_id,
                is_internal: is_internal_topic(&name),
                partitions: assignment
                    .iter()
                    .map(|(&p, replicas)| {
                        (
                            p,
                            PartitionMetadata {
                                leader: LeaderAndIsr::NO_LEADER,
                                leader_epoch: 0,
                                replicas: replicas.clone(),
                                isr: Vec::new(),
                                zk_version: 0,
                            },
                        )
                    })
                    .collect(),
                configs,
                log_config,
            });
        }
        ops.push(StoreOp::create(
            TopicPartitionsZNode::path(&name),
            Vec::new(),
        ));
        ops.extend(self.partition_state_ops(&name, &assignment));
        self.controller_write(ops).await.map_err(|e| match e {
            TopicError::Store(MetadataError::NodeExists(_)) => {
                TopicError::AlreadyExists(name.clone())
            }
            other => other,
        })?;
        let topic = self
            .become_leader(&name, topic_id, &assignment, configs, log_config)
            .await?;
        log::info!(
            "created topic {name} with {} partition(s)",
            topic.partitions.len()
        );
        self.cache
            .update(|m| m.topics.insert(name.clone(), topic.clone()));
        self.propagate(std::slice::from_ref(&topic));
        self.partitions.events.publish(BrokerEvent::TopicCreated {
            topic: name.clone(),
            partitions: topic.partitions.len() as i32,
        });
        Ok(topic)
    }

    /// Refuse a partition count over `create.topic.max.partitions` before
    /// anything is allocated for it.
    /// Refuses new partitions whose replicas here would exceed the open-file
    /// limit (`open_files`), before anything is written.
    fn check_open_files<'a>(
        &self,
        replicas: impl Iterator<Item = &'a Vec<i32>>,
    ) -> Result<(), TopicError> {
        let here = replicas.filter(|r| r.contains(&self.broker_id)).count();
        match crate::open_files::refuse_if_out_of_files(here) {
            Some(reason) => Err(TopicError::PolicyViolation(reason)),
            None => Ok(()),
        }
    }

    fn check_partition_count(&self, count: i32) -> Result<(), TopicError> {
        let max = self.config.create_topic_max_partitions;
        if count > max {
            return Err(TopicError::InvalidPartitions(format!(
                "{count} partitions is more than create.topic.max.partitions ({max})"
            )));
        }
        Ok(())
    }

    /// A new partition's first state, as Kafka's: the first live replica
    /// in assignment order leads, leader epoch 0, and the ISR is every live
    /// replica (all empty, so all in sync).
    fn initial_state(&self, replicas: &[i32], live: &[i32]) -> LeaderAndIsr {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| live.contains(r))
            .collect();
        LeaderAndIsr {
            leader: isr.first().copied().unwrap_or(LeaderAndIsr::NO_LEADER),
            leader_epoch: 0,
            isr,
            controller_epoch: self.controller_epoch(),
        }
    }

    /// Create each new partition's znode and its first state.
    fn partition_state_ops(
        &self,
        name: &str,
        assignment: &BTreeMap<i32, Vec<i32>>,
    ) -> Vec<StoreOp> {
        let live = self.live_brokers();
        let mut ops = Vec::with_capacity(assignment.len() * 2);
        for (&index, replicas) in assignment {
            let tp = TopicPartition::new(name, index);
            let state = self.initial_state(replicas, &live);
            ops.push(StoreOp::create(TopicPartitionZNode::path(&tp), Vec::new()));
            ops.push(StoreOp::create(
                TopicPartitionStateZNode::path(&tp),
                TopicPartitionStateZNode::encode(&state),
            ));
        }
        ops
    }

    async fn delete_topic(&self, name: String) -> Result<(), TopicError> {
        if !self.config.delete_topic_enable {
            return Err(TopicError::DeletionDisabled);
        }
        if self.cache.topic(&name).is_none() {
            return Err(TopicError::UnknownTopic(name));
        }
        if !self.is_active() {
            // The mark alone: the controller's watch deletes the topic.
            return Ok(self
                .store
                .create_if_missing(&DeleteTopicsTopicZNode::path(&name))
                .await?);
        }
        // The marker makes an interrupted deletion finish at the next start.
        self.store
            .create_if_missing(&DeleteTopicsTopicZNode::path(&name))
            .await?;
        self.delete_topic_data(&name).await
    }

    /// Deletes a topic as Kafka's TopicDeletionManager does: this broker's
    /// replicas at once, the other live brokers' through StopReplica with
    /// deletion, and the topic's znodes (the deletion mark last) only once
    /// no replica is left on an offline broker. Until then the topic stays
    /// marked, is served nowhere, and cannot be created again; the broker's
    /// return (`brokers_changed`) resumes the deletion.
    async fn delete_topic_data(&self, name: &str) -> Result<(), TopicError> {
        let removed = self.cache.update(|m| m.topics.remove(name));
        let topic = match removed {
            Some(topic) => Some(topic),
            None => self.topic_from_store(name).await?,
        };
        let partitions: BTreeMap<i32, Vec<i32>> = topic
            .as_ref()
            .map(|t| {
                t.partitions
                    .iter()
                    .map(|(&index, p)| (index, p.replicas.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let partition_count = partitions.len() as i32;
        for &index in partitions.keys() {
            let tp = TopicPartition::new(name, index);
            self.stop_leading(&tp);
            self.delete_log(&tp).await?;
        }
        let deleted_on = match &topic {
            Some(topic) => self.propagate_deletion(topic).await,
            None => std::collections::BTreeSet::new(),
        };
        let waiting: std::collections::BTreeSet<i32> = partitions
            .values()
            .flatten()
            .copied()
            .filter(|b| *b != self.broker_id && !deleted_on.contains(b))
            .collect();
        if !waiting.is_empty() {
            log::warn!(
                "topic {name}: the deletion waits for broker(s) {waiting:?}, which hold replicas \
                 of it and have not deleted them (offline, or not answering)"
            );
            return Ok(());
        }
        for path in [
            TopicZNode::path(name),
            ConfigEntityZNode::path(ConfigType::Topic, name),
            DeleteTopicsTopicZNode::path(name),
        ] {
            match self.store.delete_recursive(&path).await {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        log::info!("deleted topic {name}");
        self.partitions.events.publish(BrokerEvent::TopicDeleted {
            topic: name.to_string(),
            partitions: partition_count,
        });
        Ok(())
    }

    /// A topic as its znodes describe it (the assignment, and each
    /// partition's state where there is one), for a deletion resumed after
    /// the topic left the cache.
    async fn topic_from_store(&self, name: &str) -> Result<Option<TopicMetadata>, TopicError> {
        let Some((bytes, _)) = self.store.get(&TopicZNode::path(name)).await? else {
            return Ok(None);
        };
        let assignment = TopicZNode::decode(name, &bytes)?;
        let mut partitions = BTreeMap::new();
        for (&index, replicas) in &assignment.partitions {
            let tp = TopicPartition::new(name, index);
            let (state, version) = match self.store.get(&TopicPartitionStateZNode::path(&tp)).await?
            {
                Some((bytes, stat)) => (TopicPartitionStateZNode::decode(&tp, &bytes)?, stat.version),
                None => (self.initial_state(replicas, &[]), 0),
            };
            partitions.insert(index, partition_metadata(&state, replicas, version));
        }
        Ok(Some(TopicMetadata {
            name: name.to_string(),
            topic_id: assignment.topic_id.unwrap_or([0; 16]),
            is_internal: is_internal_topic(name),
            partitions,
            configs: BTreeMap::new(),
            log_config: self.base_log_config(),
        }))
    }

    async fn create_partitions(&self, request: CreatePartitions) -> Result<(), TopicError> {
        let name = request.name;
        let Some(topic) = self.cache.topic(&name) else {
            return Err(TopicError::UnknownTopic(name));
        };
        let current = topic.partitions.len() as i32;
        self.check_partition_count(request.count)?;
        if request.count <= current {
            return Err(TopicError::InvalidPartitions(format!(
                "topic {name} has {current} partitions; the new count {} must be larger",
                request.count
            )));
        }
        let brokers = self.live_brokers();
        let replication_factor = topic
            .partitions
            .values()
            .next()
            .map_or(1, |p| p.replicas.len()) as i16;
        let added = match request.assignments {
            Some(lists) => {
                if lists.len() as i32 != request.count - current {
                    return Err(TopicError::InvalidReplicaAssignment(format!(
                        "{} assignments given for {} new partitions",
                        lists.len(),
                        request.count - current
                    )));
                }
                let added: BTreeMap<i32, Vec<i32>> = lists
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (current + i as i32, r))
                    .collect();
                validate_assignment(&added, &brokers, current)?;
                added
            }
            None => assign_replicas(
                &brokers,
                request.count - current,
                replication_factor,
                (seed_for(&name) % brokers.len().max(1) as u64) as usize,
                current,
                0,
            )?,
        };
        self.check_open_files(added.values())?;
        if request.validate_only {
            return Ok(());
        }
        let mut assignment: BTreeMap<i32, Vec<i32>> = topic
            .partitions
            .iter()
            .map(|(&p, m)| (p, m.replicas.clone()))
            .collect();
        assignment.extend(added);
        if !self.is_active() {
            // Kafka's AdminZkClient.addPartitions from any broker: the new
            // assignment alone; the controller's watch on the topic znode
            // elects the new partitions' leaders.
            self.store
                .set(
                    &TopicZNode::path(&name),
                    TopicZNode::encode(&assignment, topic.topic_id),
                    None,
                )
                .await?;
            log::info!(
                "wrote {} partitions for topic {name} for the controller",
                assignment.len()
            );
            return Ok(());
        }
        let mut ops = vec![StoreOp::Set {
            path: TopicZNode::path(&name),
            data: TopicZNode::encode(&assignment, topic.topic_id),
            expected_version: None,
        }];
        let added: BTreeMap<i32, Vec<i32>> = assignment
            .iter()
            .filter(|(p, _)| **p >= current)
            .map(|(p, r)| (*p, r.clone()))
            .collect();
        if self
            .store
            .get(&TopicPartitionsZNode::path(&name))
            .await?
            .is_none()
        {
            ops.push(StoreOp::create(
                TopicPartitionsZNode::path(&name),
                Vec::new(),
            ));
        }
        ops.extend(self.partition_state_ops(&name, &added));
        self.controller_write(ops).await?;
        self.take_up_partitions(name, &topic, &assignment).await
    }

    /// Any broker alters a topic's configs as Kafka's `AdminZkClient`
    /// does: write `/config/topics/<topic>`, apply it here at once (so a
    /// DescribeConfigs that follows sees it), then leave a
    /// `/config/changes` notification that every other broker follows.
    async fn alter_configs(&self, request: AlterTopicConfigs) -> Result<(), TopicError> {
        let name = request.name;
        if self.cache.topic(&name).is_none() {
            return Err(TopicError::UnknownTopic(name));
        }
        self.log_config_for(&request.configs)?;
        if request.validate_only {
            return Ok(());
        }
        self.write_topic_configs(&name, &request.configs).await?;
        self.apply_topic_configs(&name).await?;
        let notification = self
            .store
            .create_sequential(
                ConfigChangeNotification::PREFIX,
                ConfigChangeNotification::encode_topic(&name),
            )
            .await?;
        self.note_config_change(&notification);
        Ok(())
    }

    /// Reads a topic's configs from the store and applies them: the
    /// partition actors led here and the metadata cache.
    async fn apply_topic_configs(&self, name: &str) -> Result<(), TopicError> {
        let Some(topic) = self.cache.topic(name) else {
            return Ok(());
        };
        let configs = self.topic_configs(name).await?;
        let log_config = self.log_config_for(&configs)?;
        for &index in topic.partitions.keys() {
            if let Some(handle) = self
                .partitions
                .registry
                .get(&TopicPartition::new(name, index))
            {
                handle
                    .addr
                    .send(UpdateConfig {
                        config: log_config.clone(),
                    })
                    .await
                    .map_err(|_| TopicError::Stopped)??;
            }
        }
        self.cache.update(|m| {
            if let Some(t) = m.topics.get_mut(name) {
                t.configs = configs;
                t.log_config = log_config;
            }
        });
        self.partitions
            .events
            .publish(BrokerEvent::TopicConfigChanged {
                topic: name.to_owned(),
            });
        Ok(())
    }

    /// Remembers the newest notification handled, so older ones are not
    /// applied again.
    fn note_config_change(&self, path: &str) {
        if let Some(seq) = ConfigChangeNotification::sequence(path) {
            self.config_changes_seen
                .fetch_max(seq, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// `/config/changes` changed: apply the notifications newer than the
    /// last one handled (Kafka's `ZkNodeChangeNotificationListener`).
    async fn config_changed(&self, change: ConfigChanged) -> Result<(), TopicError> {
        let seen = self
            .config_changes_seen
            .load(std::sync::atomic::Ordering::SeqCst);
        let mut fresh: Vec<(i64, String)> = change
            .names
            .iter()
            .filter_map(|name| {
                let seq = ConfigChangeNotification::sequence(name)?;
                (seq > seen).then(|| (seq, name.clone()))
            })
            .collect();
        fresh.sort();
        for (seq, name) in fresh {
            let path = format!("{}/{name}", ConfigEntityChangeNotificationZNode::PATH);
            if let Some((bytes, _)) = self.store.get(&path).await? {
                match ConfigChangeNotification::decode_topic(&path, &bytes) {
                    Ok(Some(topic)) => self.apply_topic_configs(&topic).await?,
                    Ok(None) => {}
                    Err(e) => log::warn!("{e}"),
                }
            }
            self.config_changes_seen
                .fetch_max(seq, std::sync::atomic::Ordering::SeqCst);
        }
        // The controller keeps the newest notifications only (Kafka purges
        // by age); brokers read configs fresh at start, so none is lost.
        if self.is_active() && change.names.len() > KEPT_CONFIG_CHANGES {
            let mut names = change.names.clone();
            names.sort_by_key(|n| ConfigChangeNotification::sequence(n).unwrap_or(-1));
            for name in &names[..names.len() - KEPT_CONFIG_CHANGES] {
                let path = format!("{}/{name}", ConfigEntityChangeNotificationZNode::PATH);
                match self.store.delete(&path, None).await {
                    Ok(()) | Err(MetadataError::NoNode(_)) => {}
                    Err(e) => log::warn!("cannot purge {path}: {e}"),
                }
            }
        }
        Ok(())
    }
}

fn partition_metadata(
    state: &LeaderAndIsr,
    replicas: &[i32],
    zk_version: i32,
) -> PartitionMetadata {
    PartitionMetadata {
        leader: state.leader,
        leader_epoch: state.leader_epoch,
        replicas: replicas.to_vec(),
        isr: state.isr.clone(),
        zk_version,
    }
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
) -> Result<LogOffsets, TopicError> {
    let offsets = find_or_create_untied_log(log, tp.clone(), config).await?;
    // The zero id: a topic from before topic ids (Kafka's ZERO_UUID).
    if topic_id == [0; 16] {
        return Ok(offsets);
    }
    match log.topic_id.send(AssignTopicId { tp, topic_id }).await {
        Ok(Ok(())) => Ok(offsets),
        Ok(Err(e)) => Err(TopicError::Log(e)),
        Err(_) => Err(TopicError::Stopped),
    }
}

async fn find_or_create_untied_log(
    log: &LogAdmin,
    tp: TopicPartition,
    config: LogConfig,
) -> Result<LogOffsets, TopicError> {
    match log.offsets.send(GetLogOffsets { tp: tp.clone() }).await {
        // Loaded at start-up with the broker's defaults: the topic's own
        // configs (retention, segment size, cleanup.policy...) apply now.
        Ok(Ok(offsets)) => match log.update_config.send(UpdateLogConfig { tp, config }).await {
            Ok(Ok(())) => Ok(offsets),
            Ok(Err(e)) => Err(TopicError::Log(e)),
            Err(_) => Err(TopicError::Stopped),
        },
        Ok(Err(LogActorError::UnknownPartition(_))) => log
            .create
            .send(CreateLog { tp, config })
            .await
            .map_err(|_| TopicError::Stopped)
            .and_then(|created| created.map_err(TopicError::from)),
        Ok(Err(e)) => Err(TopicError::Log(LogActorError::PartitionOffline {
            tp,
            reason: e.to_string(),
        })),
        Err(_) => Err(TopicError::Stopped),
    }
}

fn validate_assignment(
    assignment: &BTreeMap<i32, Vec<i32>>,
    brokers: &[i32],
    first_partition: i32,
) -> Result<(), TopicError> {
    let invalid = |reason: String| Err(TopicError::InvalidReplicaAssignment(reason));
    for (expected, (&partition, replicas)) in (first_partition..).zip(assignment) {
        if partition != expected {
            return invalid(format!(
                "partitions must be numbered from {first_partition} without gaps"
            ));
        }
        if replicas.is_empty() {
            return invalid(format!("partition {partition} has no replicas"));
        }
        let mut seen = replicas.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != replicas.len() {
            return invalid(format!("partition {partition} lists a broker twice"));
        }
        if let Some(unknown) = replicas.iter().find(|r| !brokers.contains(r)) {
            return invalid(format!("broker {unknown} is not registered"));
        }
    }
    if let Some(first) = assignment.values().next() {
        if assignment.values().any(|r| r.len() != first.len()) {
            return invalid("all partitions must have the same replication factor".into());
        }
    }
    Ok(())
}

/// A new topic's id: random, as Kafka's (a re-created topic gets a new
/// one), and kept in the topic znode.
fn new_topic_id() -> [u8; 16] {
    *uuid::Uuid::new_v4().as_bytes()
}

fn seed_for(name: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish() ^ crate::clock::Clock::now_ms(&crate::clock::SystemClock) as u64
}

impl Actor for Controller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        self.follow_sessions(ctx);
        self.follow_controller(ctx);
        self.follow_children(ctx, ConfigEntityChangeNotificationZNode::PATH, |names| {
            ConfigChanged { names }
        });
        if self.shared.is_active() {
            self.follow_active(ctx);
        }
    }
}

/// How long a failed watch or read of a watched path waits before the next
/// try (the store retries connection losses itself).
const WATCH_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Attempts to re-register after a session expiry while the store keeps
/// failing (ZooKeeper unreachable), one second apart.
const RECLAIM_ATTEMPTS: usize = 30;

impl Controller {
    /// What only the active controller watches: `/brokers/topics`,
    /// `/admin/delete_topics` and `/brokers/ids` (once per actor life; the
    /// handlers do nothing while this broker is not the controller).
    fn follow_active(&mut self, ctx: &mut Context<Self>) {
        if self.watching_active {
            return;
        }
        self.watching_active = true;
        self.follow_children(ctx, TopicsZNode::PATH, |names| TopicsChanged { names });
        self.follow_children(
            ctx,
            crate::metadata::znodes::DeleteTopicsZNode::PATH,
            |names| DeletionsRequested { names },
        );
        self.follow_children(ctx, BrokerIdsZNode::PATH, |_| BrokersChanged {});
        self.follow_children(ctx, IsrChangeNotificationZNode::PATH, |names| {
            IsrChangesNotified { names }
        });
        self.follow_assignments(ctx);
        self.rebalance_leaders_periodically(ctx);
        ctx.run_interval(PENDING_DELETION_RETRY, |actor, ctx| {
            if !actor.shared.is_active() {
                return;
            }
            let me = ctx.address();
            actix::spawn(async move {
                if let Ok(Err(e)) = me.send(ResumeDeletions {}).await {
                    log::warn!("resuming topic deletions failed: {e}");
                }
            });
        });
    }

    /// Kafka's auto leader rebalance task: every
    /// `leader.imbalance.check.interval.seconds` while active.
    fn rebalance_leaders_periodically(&mut self, ctx: &mut Context<Self>) {
        if !self.shared.config.auto_leader_rebalance_enable {
            return;
        }
        let every = std::time::Duration::from_secs(
            self.shared.config.leader_imbalance_check_interval_seconds,
        );
        ctx.run_interval(every, |actor, ctx| {
            if !actor.shared.is_active() {
                return;
            }
            let me = ctx.address();
            actix::spawn(async move {
                if let Ok(Err(e)) = me.send(RebalanceLeaders {}).await {
                    log::warn!("the leader rebalance failed: {e}");
                }
            });
        });
    }

    /// One data watch per topic znode (Kafka's PartitionModifications
    /// handler), for partitions added through other brokers. Checked every
    /// few seconds against the topic list, so new topics get one and
    /// deleted topics' loops end by themselves.
    fn follow_assignments(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(TOPIC_WATCH_SCAN, |actor, ctx| {
            if !actor.shared.is_active() {
                return;
            }
            let names: Vec<String> = actor
                .shared
                .cache
                .read(|m| m.topics.keys().cloned().collect());
            for name in names {
                if actor.topic_watches.insert(name.clone()) {
                    actor.follow_topic(ctx, name);
                }
            }
        });
    }

    fn follow_topic(&mut self, ctx: &mut Context<Self>, topic: String) {
        let store = self.shared.store.clone();
        let me = ctx.address();
        let path = TopicZNode::path(&topic);
        ctx.spawn(
            async move {
                loop {
                    let fired = store.watch(&path).await.ok();
                    match store.get(&path).await {
                        Ok(Some(_)) => {
                            let change = AssignmentChanged {
                                topic: topic.clone(),
                            };
                            if me.send(change).await.is_err() {
                                return topic;
                            }
                        }
                        // Deleted: the loop ends; a re-created topic gets a
                        // new one at the next scan.
                        Ok(None) => return topic,
                        Err(e) => log::warn!("cannot read {path}: {e}"),
                    }
                    match fired {
                        Some(fired) => {
                            let _ = fired.await;
                        }
                        None => tokio::time::sleep(WATCH_RETRY).await,
                    }
                }
            }
            .into_actor(self)
            .map(|topic, actor, _ctx| {
                actor.topic_watches.remove(&topic);
            }),
        );
    }

    /// Every broker watches `/controller`: when the claim goes (the
    /// controller died or resigned), the standbys run for it.
    fn follow_controller(&mut self, ctx: &mut Context<Self>) {
        let store = self.shared.store.clone();
        let me = ctx.address();
        ctx.spawn(
            async move {
                loop {
                    let fired = store.watch(ControllerZNode::PATH).await.ok();
                    match store.get(ControllerZNode::PATH).await {
                        Ok(None) => {
                            if me.send(TryElect).await.is_err() {
                                return;
                            }
                        }
                        Ok(Some(_)) => {}
                        Err(e) => log::warn!("cannot read {}: {e}", ControllerZNode::PATH),
                    }
                    match fired {
                        Some(fired) => {
                            let _ = fired.await;
                        }
                        None => tokio::time::sleep(WATCH_RETRY).await,
                    }
                }
            }
            .into_actor(self),
        );
    }

    /// Turns the children of `path` into a typed message to this actor,
    /// now and after every change: watch first, then read, so no change
    /// between the two is missed. A watch dropped by a session expiry
    /// re-arms and re-reads the same way.
    fn follow_children<M>(
        &mut self,
        ctx: &mut Context<Self>,
        path: &'static str,
        message: fn(Vec<String>) -> M,
    ) where
        M: Message<Result = Result<(), TopicError>> + Send + 'static,
        Self: Handler<M>,
    {
        let store = self.shared.store.clone();
        let me = ctx.address();
        ctx.spawn(
            async move {
                loop {
                    let fired = match store.watch(path).await {
                        Ok(fired) => Some(fired),
                        Err(e) => {
                            log::warn!("cannot watch {path}: {e}");
                            None
                        }
                    };
                    match store.children(path).await {
                        Ok(children) => match me.send(message(children)).await {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => log::error!("handling a change of {path}: {e}"),
                            // The controller stopped.
                            Err(_) => return,
                        },
                        Err(e) => log::warn!("cannot read {path}: {e}"),
                    }
                    match fired {
                        Some(fired) => {
                            let _ = fired.await;
                        }
                        None => tokio::time::sleep(WATCH_RETRY).await,
                    }
                }
            }
            .into_actor(self),
        );
    }

    /// When the metadata store's session is replaced (a ZooKeeper session
    /// expiry), the registration and the `/controller` claim went with the
    /// old one: claim both again, with a new controller epoch. Losing the
    /// broker id to another live broker meanwhile ends this broker.
    fn follow_sessions(&mut self, ctx: &mut Context<Self>) {
        let store = self.shared.store.clone();
        let mut sessions = store.sessions();
        sessions.borrow_and_update();
        let registration = self.registration.clone();
        let role = self.shared.role.clone();
        ctx.spawn(
            async move {
                sessions.changed().await.ok()?;
                // The controller claim went with the old session: step
                // down before anything else, so a newer controller's
                // requests are taken rather than refused.
                {
                    let mut role = role.lock().unwrap_or_else(|p| p.into_inner());
                    role.active = false;
                    role.registering = true;
                }
                log::warn!(
                    "new metadata store session: registering broker {} again",
                    registration.broker_id
                );
                let mut outcome = registration.register(store.as_ref()).await;
                for _ in 1..RECLAIM_ATTEMPTS {
                    match outcome {
                        Err(TopicError::Store(ref e)) => {
                            log::warn!("cannot register again yet: {e}");
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                            outcome = registration.register(store.as_ref()).await;
                        }
                        _ => break,
                    }
                }
                Some(outcome)
            }
            .into_actor(self)
            .map(|outcome, actor, ctx| match outcome {
                // The store is gone: the broker is shutting down.
                None => {}
                Some(Ok(broker_epoch)) => {
                    log::info!(
                        "broker {} registered again (broker epoch {broker_epoch})",
                        actor.registration.broker_id
                    );
                    // The controller claim went with the old session too:
                    // resign and run again (a standby may win).
                    actor.shared.set_role(|r| {
                        r.registering = false;
                        r.broker_epoch = broker_epoch;
                    });
                    ctx.address().do_send(TryElect);
                    actor.follow_sessions(ctx);
                }
                Some(Err(e)) => {
                    log::error!("cannot register again after a session expiry: {e}");
                    actor
                        .fatal
                        .raise(format!("lost the broker registration: {e}"));
                }
            }),
        );
    }
}

impl actix::Supervised for Controller {
    fn restarting(&mut self, ctx: &mut Context<Self>) {
        if let Some(cause) = self.link.escalated() {
            log::error!("the controller keeps failing ({cause}); the broker shuts down");
            return;
        }
        // The watches died with the old context; `started` sets them again.
        self.watching_active = false;
        self.topic_watches.clear();
        // Everything the controller knows lives in the metadata store; take
        // it from there again and start any partition actor that is missing.
        log::warn!("the controller restarts and reloads the topics from the metadata store");
        let shared = self.shared.clone();
        ctx.wait(
            async move { shared.load_topics().await }
                .into_actor(self)
                .map(|result, _actor, _ctx| {
                    if let Err(e) = result {
                        log::error!("the restarted controller could not reload the topics: {e}");
                    }
                }),
        );
    }
}

/// Declares a controller request; requests run one at a time, in order.
macro_rules! controller_request {
    ($(#[$doc:meta])* $name:ident { $($(#[$field_doc:meta])* $field:ident : $ty:ty),* $(,)? } -> $out:ty, $method:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name { $($(#[$field_doc])* pub $field: $ty),* }

        impl Message for $name {
            type Result = Result<$out, TopicError>;
        }

        impl Handler<$name> for Controller {
            type Result = AtomicResponse<Self, Result<$out, TopicError>>;

            fn handle(&mut self, msg: $name, _ctx: &mut Context<Self>) -> Self::Result {
                fail::fail_point!(concat!("controller.", stringify!($name)));
                let shared = self.shared.clone();
                AtomicResponse::new(Box::pin(async move { shared.$method(msg).await }.into_actor(self)))
            }
        }
    };
}

controller_request!(
    /// Go on with the topic deletions that wait for a replica.
    ResumeDeletions {} -> (),
    resume_deletions
);

controller_request!(
    /// Create a topic. `num_partitions`/`replication_factor` of -1 take the
    /// broker defaults; explicit `assignments` replace both.
    CreateTopic {
        name: String,
        num_partitions: i32,
        replication_factor: i16,
        assignments: BTreeMap<i32, Vec<i32>>,
        configs: Vec<(String, String)>,
        validate_only: bool,
    } -> TopicMetadata, create_topic
);

controller_request!(
    /// Raise a topic's partition count to `count`.
    CreatePartitions {
        name: String,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    } -> (), create_partitions
);

controller_request!(
    /// Replace a topic's config overrides with `configs`.
    AlterTopicConfigs {
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    } -> (), alter_configs
);

controller_request!(
    /// The children of `/brokers/topics`, read after a change.
    TopicsChanged {
        names: Vec<String>,
    } -> (), topics_changed
);

controller_request!(
    /// The children of `/admin/delete_topics`, read after a change.
    DeletionsRequested {
        names: Vec<String>,
    } -> (), deletions_requested
);

controller_request!(
    /// The children of `/isr_change_notification`, read after a change.
    IsrChangesNotified {
        names: Vec<String>,
    } -> (), isr_changes_notified
);

/// Delete a topic and its data.
#[derive(Debug)]
pub struct DeleteTopic {
    pub name: String,
}

impl Message for DeleteTopic {
    type Result = Result<(), TopicError>;
}

impl Handler<DeleteTopic> for Controller {
    type Result = AtomicResponse<Self, Result<(), TopicError>>;

    fn handle(&mut self, msg: DeleteTopic, _ctx: &mut Context<Self>) -> Self::Result {
        let shared = self.shared.clone();
        AtomicResponse::new(Box::pin(
            async move { shared.delete_topic(msg.name).await }.into_actor(self),
        ))
    }
}

/// Stop every partition actor (broker shutdown).
#[derive(Debug)]
pub struct StopPartitions;

impl Message for StopPartitions {
    type Result = ();
}

impl Handler<StopPartitions> for Controller {
    type Result = ();

    fn handle(&mut self, _msg: StopPartitions, _ctx: &mut Context<Self>) {
        self.shared.fetchers.stop_all();
        let registry = &self.shared.partitions.registry;
        let all: HashMap<TopicPartition, _> = registry.all().into_iter().collect();
        for (tp, _) in all {
            self.shared.stop_leading(&tp);
        }
    }
}

// ---------------------------------------------------------------------
// The cluster: election, membership, and what the controller tells the
// other brokers (LeaderAndIsr, UpdateMetadata, StopReplica), and how a
// broker applies what it is told.
// ---------------------------------------------------------------------

use kafka_protocol::messages::leader_and_isr_request::{
    LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState, LeaderAndIsrTopicState,
};
use kafka_protocol::messages::leader_and_isr_response::{
    LeaderAndIsrPartitionError, LeaderAndIsrTopicError,
};
use kafka_protocol::messages::stop_replica_request::{
    StopReplicaPartitionState, StopReplicaTopicState,
};
use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
use kafka_protocol::messages::update_metadata_request::{
    UpdateMetadataBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState,
    UpdateMetadataTopicState,
};
use kafka_protocol::messages::{
    BrokerId, LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse,
    TopicName, UpdateMetadataRequest, UpdateMetadataResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::controller_channel::{ChannelHandle, ControlRequest, ControllerChannel, Deliver};
use crate::metadata::znodes::{
    BrokerIdsZNode, ConfigChangeNotification, ConfigEntityChangeNotificationZNode,
    IsrChangeNotificationZNode,
};

/// Kafka's `LeaderAndIsr.LeaderDuringDelete`: UpdateMetadata's mark for a
/// partition being deleted.
const LEADER_DURING_DELETE: i32 = -2;

impl Shared {
    fn role(&self) -> Role {
        match self.role.lock() {
            Ok(role) => *role,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set_role(&self, change: impl FnOnce(&mut Role)) {
        match self.role.lock() {
            Ok(mut role) => change(&mut role),
            Err(poisoned) => change(&mut poisoned.into_inner()),
        }
    }

    fn is_active(&self) -> bool {
        self.role().active
    }

    fn shutting_down(&self) -> std::collections::BTreeSet<i32> {
        match self.shutting_down.lock() {
            Ok(ids) => ids.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn update_shutting_down(&self, change: impl FnOnce(&mut std::collections::BTreeSet<i32>)) {
        match self.shutting_down.lock() {
            Ok(mut ids) => change(&mut ids),
            Err(poisoned) => change(&mut poisoned.into_inner()),
        }
    }

    fn controller_epoch(&self) -> i32 {
        self.role().controller_epoch
    }

    /// The broker id in `/controller`, -1 when nobody holds it.
    async fn controller_holder(&self) -> Result<i32, TopicError> {
        Ok(match self.store.get(ControllerZNode::path()).await? {
            Some((bytes, _)) => ControllerZNode::decode(&bytes)?,
            None => -1,
        })
    }

    /// Takes up the controller role with `epoch`: learns the live brokers,
    /// finishes interrupted deletions, takes up every topic (electing
    /// leaders for partitions whose leader is gone) and tells every other
    /// broker the whole state. Any failure on the way resigns (Kafka's
    /// `triggerControllerMove`): `/controller` is given up so that a
    /// broker that can do the work is elected, rather than held by one
    /// that is not an active controller.
    async fn activate(&self, epoch: i32, epoch_zk_version: i32) -> Result<(), TopicError> {
        self.set_role(|r| {
            r.active = true;
            r.controller_epoch = epoch;
            r.epoch_zk_version = epoch_zk_version;
        });
        self.cache.update(|m| m.controller_id = self.broker_id);
        let activated = async {
            self.load_brokers().await?;
            self.finish_pending_deletions().await?;
            self.load_topics().await?;
            Ok::<_, TopicError>(())
        }
        .await;
        if let Err(e) = activated {
            self.resign(&format!("taking up the controller role failed: {e}"))
                .await;
            return Err(e);
        }
        let topics: Vec<TopicMetadata> = self.cache.read(|m| m.topics.values().cloned().collect());
        for broker in self.remote_brokers() {
            self.send_topics_to(broker, &topics);
        }
        Ok(())
    }

    /// Stops being the controller and gives `/controller` up when this
    /// session still holds it at this controller's epoch (one transaction
    /// that checks `/controller_epoch`, so a successor's claim is never
    /// deleted). The `/controller` watch of every broker then elects again.
    async fn resign(&self, reason: &str) {
        let role = self.role();
        self.set_role(|r| r.active = false);
        self.cache.update(|m| m.controller_id = -1);
        log::warn!(
            "broker {} resigns as controller (epoch {}): {reason}",
            self.broker_id,
            role.controller_epoch
        );
        let Ok(Some((_, stat))) = self.store.get(ControllerZNode::path()).await else {
            return;
        };
        if stat.ephemeral_owner != self.store.session_id() || role.epoch_zk_version < 0 {
            return;
        }
        let give_up = vec![
            StoreOp::Check {
                path: ControllerEpochZNode::path().to_owned(),
                version: role.epoch_zk_version,
            },
            StoreOp::Delete {
                path: ControllerZNode::path().to_owned(),
                expected_version: None,
            },
        ];
        if let Err(e) = self.store.multi(give_up).await {
            log::warn!("giving up {}: {e}", ControllerZNode::path());
        }
    }

    /// A controller write: `ops` in one transaction with a check that
    /// `/controller_epoch` is still at the version this controller wrote
    /// (Kafka's `wrapRequestWithControllerEpochCheck`). A failed check
    /// means a successor exists: this controller resigns and the write is
    /// not made. Returns each op's stat, as `multi` does.
    async fn controller_write(&self, ops: Vec<StoreOp>) -> Result<Vec<Stat>, TopicError> {
        let role = self.role();
        if !role.active {
            return Err(TopicError::NotController);
        }
        let mut fenced = Vec::with_capacity(ops.len() + 1);
        fenced.push(StoreOp::Check {
            path: ControllerEpochZNode::path().to_owned(),
            version: role.epoch_zk_version,
        });
        fenced.extend(ops);
        match self.store.multi(fenced).await {
            Ok(mut stats) => {
                if !stats.is_empty() {
                    stats.remove(0);
                }
                Ok(stats)
            }
            Err(MetadataError::BadVersion { path, .. }) if path == ControllerEpochZNode::path() => {
                self.set_role(|r| r.active = false);
                log::warn!(
                    "broker {}: /controller_epoch moved past epoch {}; another controller was \
                     elected, this one stops",
                    self.broker_id,
                    role.controller_epoch
                );
                Err(TopicError::ControllerMoved {
                    epoch: role.controller_epoch,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Reads `/brokers/ids` into the cache and keeps one channel per other
    /// live broker. Returns the ids that joined and left.
    async fn load_brokers(&self) -> Result<BrokerChanges, TopicError> {
        let mut live = BTreeMap::new();
        for child in self.store.children(BrokerIdsZNode::PATH).await? {
            let Ok(id) = child.parse::<i32>() else {
                continue;
            };
            let Some((bytes, stat)) = self.store.get(&BrokerIdZNode::path(id)).await? else {
                continue;
            };
            let info = BrokerIdZNode::decode(id, &bytes)?;
            let Some((host, port)) = plaintext_endpoint(&info) else {
                log::warn!("broker {id} registered no PLAINTEXT endpoint; ignored");
                continue;
            };
            live.insert(
                id,
                (
                    BrokerEndpoint {
                        id,
                        host,
                        port,
                        rack: info.rack.clone(),
                    },
                    stat.creation_zxid,
                ),
            );
        }
        let before: Vec<i32> = self.live_brokers();
        // A broker that registered again (a new session, a new epoch)
        // before this controller saw it go counts as joined: it needs the
        // whole state again, stamped with its new epoch (KIP-380's bounced
        // brokers).
        let known_epochs = self.cache.read(|m| m.broker_epochs.clone());
        let bounced: Vec<i32> = live
            .iter()
            .filter(|(id, (_, epoch))| {
                **id != self.broker_id
                    && before.contains(id)
                    && known_epochs.get(id).is_some_and(|known| known != epoch)
            })
            .map(|(id, _)| *id)
            .collect();
        let mut joined: Vec<i32> = live
            .keys()
            .copied()
            .filter(|id| !before.contains(id))
            .collect();
        for id in &bounced {
            log::info!("broker {id} registered again with a new broker epoch");
        }
        joined.extend(bounced.iter().copied());
        let left: Vec<i32> = before
            .iter()
            .copied()
            .filter(|id| !live.contains_key(id))
            .collect();
        self.cache.update(|m| {
            m.brokers = live.values().map(|(b, _)| (b.id, b.clone())).collect();
        });
        self.update_shutting_down(|ids| {
            ids.retain(|id| live.contains_key(id) && !joined.contains(id))
        });
        let mut channels = match self.channels.lock() {
            Ok(channels) => channels,
            Err(poisoned) => poisoned.into_inner(),
        };
        channels.retain(|id, _| live.contains_key(id) && !bounced.contains(id));
        for (id, (endpoint, epoch)) in &live {
            if *id == self.broker_id || channels.contains_key(id) {
                continue;
            }
            let address = format!("{}:{}", endpoint.host, endpoint.port);
            let channel = ControllerChannel::start(*id, address, self.broker_id);
            channels.insert(*id, channel);
            self.set_broker_epoch(*id, *epoch);
        }
        Ok(BrokerChanges {
            joined,
            left,
            bounced,
        })
    }

    fn set_broker_epoch(&self, broker: i32, epoch: i64) {
        self.cache.update(|m| {
            m.broker_epochs.insert(broker, epoch);
        });
    }

    fn remote_brokers(&self) -> Vec<i32> {
        self.live_brokers()
            .into_iter()
            .filter(|&id| id != self.broker_id)
            .collect()
    }

    fn channel(&self, broker: i32) -> Option<Addr<ControllerChannel>> {
        match self.channels.lock() {
            Ok(channels) => channels.get(&broker).map(|c| c.addr.clone()),
            Err(poisoned) => poisoned.into_inner().get(&broker).map(|c| c.addr.clone()),
        }
    }

    /// Sends `requests` to `broker` in order (queued now, answered later;
    /// failures are logged: the broker re-learns everything when it comes
    /// back or a new controller is elected).
    fn deliver(&self, broker: i32, requests: Vec<ControlRequest>) {
        let Some(channel) = self.channel(broker) else {
            return;
        };
        // Each `send` is queued at once, so per-broker order holds.
        let answers: Vec<_> = requests
            .into_iter()
            .map(|request| channel.send(Deliver(request)))
            .collect();
        actix::spawn(async move {
            for answer in answers {
                match answer.await {
                    Ok(Ok(answer)) if answer.error_code == 0 => {}
                    Ok(Ok(answer)) => {
                        log::warn!(
                            "broker {broker} refused a control request: error {}",
                            answer.error_code
                        )
                    }
                    Ok(Err(e)) => log::warn!("{e}"),
                    Err(_) => {}
                }
            }
        });
    }

    /// LeaderAndIsr for the partitions of `topics` that `broker` holds a
    /// replica of, then UpdateMetadata with all of `topics`.
    fn send_topics_to(&self, broker: i32, topics: &[TopicMetadata]) {
        let mut requests = Vec::new();
        if let Some(request) = self.leader_and_isr_request(broker, topics) {
            requests.push(ControlRequest::LeaderAndIsr(request));
        }
        requests.push(ControlRequest::UpdateMetadata(
            self.update_metadata_request(broker, topics),
        ));
        self.deliver(broker, requests);
    }

    /// Tells every other broker about `topics` (after a creation, a new
    /// partition, a leader change).
    fn propagate(&self, topics: &[TopicMetadata]) {
        if !self.is_active() {
            return;
        }
        for broker in self.remote_brokers() {
            self.send_topics_to(broker, topics);
        }
    }

    fn broker_epoch_of(&self, broker: i32) -> i64 {
        self.cache
            .read(|m| m.broker_epochs.get(&broker).copied())
            .unwrap_or(-1)
    }

    fn leader_and_isr_request(
        &self,
        broker: i32,
        topics: &[TopicMetadata],
    ) -> Option<LeaderAndIsrRequest> {
        let epoch = self.controller_epoch();
        let mut leaders = std::collections::BTreeSet::new();
        let topic_states: Vec<LeaderAndIsrTopicState> = topics
            .iter()
            .filter_map(|topic| {
                let partitions: Vec<LeaderAndIsrPartitionState> = topic
                    .partitions
                    .iter()
                    .filter(|(_, p)| p.replicas.contains(&broker))
                    .map(|(&index, p)| {
                        leaders.insert(p.leader);
                        LeaderAndIsrPartitionState::default()
                            .with_partition_index(index)
                            .with_controller_epoch(epoch)
                            .with_leader(BrokerId(p.leader))
                            .with_leader_epoch(p.leader_epoch)
                            .with_isr(p.isr.iter().map(|&b| BrokerId(b)).collect())
                            .with_partition_epoch(p.zk_version)
                            .with_replicas(p.replicas.iter().map(|&b| BrokerId(b)).collect())
                    })
                    .collect();
                (!partitions.is_empty()).then(|| {
                    LeaderAndIsrTopicState::default()
                        .with_topic_name(TopicName(StrBytes::from_string(topic.name.clone())))
                        .with_topic_id(uuid::Uuid::from_bytes(topic.topic_id))
                        .with_partition_states(partitions)
                })
            })
            .collect();
        if topic_states.is_empty() {
            return None;
        }
        let live_leaders = self.cache.read(|m| {
            leaders
                .iter()
                .filter_map(|id| m.brokers.get(id))
                .map(|b| {
                    LeaderAndIsrLiveLeader::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host_name(StrBytes::from_string(b.host.clone()))
                        .with_port(b.port as i32)
                })
                .collect()
        });
        Some(
            LeaderAndIsrRequest::default()
                .with_controller_id(BrokerId(self.broker_id))
                .with_controller_epoch(epoch)
                .with_broker_epoch(self.broker_epoch_of(broker))
                .with_topic_states(topic_states)
                .with_live_leaders(live_leaders),
        )
    }

    fn update_metadata_request(
        &self,
        broker: i32,
        topics: &[TopicMetadata],
    ) -> UpdateMetadataRequest {
        let epoch = self.controller_epoch();
        let live_brokers = self.cache.read(|m| {
            m.brokers
                .values()
                .map(|b| {
                    UpdateMetadataBroker::default()
                        .with_id(BrokerId(b.id))
                        .with_endpoints(vec![UpdateMetadataEndpoint::default()
                            .with_host(StrBytes::from_string(b.host.clone()))
                            .with_port(b.port as i32)
                            .with_listener(StrBytes::from_static_str("PLAINTEXT"))
                            .with_security_protocol(0)])
                        .with_rack(b.rack.clone().map(StrBytes::from_string))
                })
                .collect()
        });
        let topic_states = topics
            .iter()
            .map(|topic| {
                UpdateMetadataTopicState::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic.name.clone())))
                    .with_topic_id(uuid::Uuid::from_bytes(topic.topic_id))
                    .with_partition_states(
                        topic
                            .partitions
                            .iter()
                            .map(|(&index, p)| {
                                UpdateMetadataPartitionState::default()
                                    .with_partition_index(index)
                                    .with_controller_epoch(epoch)
                                    .with_leader(BrokerId(p.leader))
                                    .with_leader_epoch(p.leader_epoch)
                                    .with_isr(p.isr.iter().map(|&b| BrokerId(b)).collect())
                                    .with_zk_version(p.zk_version)
                                    .with_replicas(
                                        p.replicas.iter().map(|&b| BrokerId(b)).collect(),
                                    )
                            })
                            .collect(),
                    )
            })
            .collect();
        UpdateMetadataRequest::default()
            .with_controller_id(BrokerId(self.broker_id))
            .with_controller_epoch(epoch)
            .with_broker_epoch(self.broker_epoch_of(broker))
            .with_topic_states(topic_states)
            .with_live_brokers(live_brokers)
    }

    /// StopReplica for `topics`, stamped for `broker`.
    fn stop_replica_request(
        &self,
        broker: i32,
        topics: Vec<StopReplicaTopicState>,
    ) -> StopReplicaRequest {
        StopReplicaRequest::default()
            .with_controller_id(BrokerId(self.broker_id))
            .with_controller_epoch(self.controller_epoch())
            .with_broker_epoch(self.broker_epoch_of(broker))
            .with_topic_states(topics)
    }

    /// Tells the other brokers a topic is gone: StopReplica (deleting the
    /// logs) to the live brokers holding its replicas, then UpdateMetadata
    /// marking its partitions. Answers the brokers whose replicas are
    /// deleted (they answered StopReplica without an error), as Kafka's
    /// TopicDeletionManager waits for them; a broker that does not answer
    /// in time stays pending.
    async fn propagate_deletion(&self, topic: &TopicMetadata) -> std::collections::BTreeSet<i32> {
        let mut confirmations = Vec::new();
        if !self.is_active() {
            return std::collections::BTreeSet::new();
        }
        let mut deleted = topic.clone();
        for p in deleted.partitions.values_mut() {
            p.leader = LEADER_DURING_DELETE;
        }
        for broker in self.remote_brokers() {
            let held: Vec<StopReplicaPartitionState> = topic
                .partitions
                .iter()
                .filter(|(_, p)| p.replicas.contains(&broker))
                .map(|(&index, p)| {
                    StopReplicaPartitionState::default()
                        .with_partition_index(index)
                        .with_leader_epoch(p.leader_epoch)
                        .with_delete_partition(true)
                })
                .collect();
            if let (false, Some(channel)) = (held.is_empty(), self.channel(broker)) {
                let request = ControlRequest::StopReplica(self.stop_replica_request(
                    broker,
                    vec![StopReplicaTopicState::default()
                        .with_topic_name(TopicName(StrBytes::from_string(topic.name.clone())))
                        .with_partition_states(held)],
                ));
                confirmations.push(async move { (broker, channel.send(Deliver(request)).await) });
            }
            self.deliver(
                broker,
                vec![ControlRequest::UpdateMetadata(
                    self.update_metadata_request(broker, std::slice::from_ref(&deleted)),
                )],
            );
        }
        let answers = tokio::time::timeout(
            DELETION_CONFIRMATION_TIMEOUT,
            futures_util::future::join_all(confirmations),
        )
        .await
        .unwrap_or_default();
        answers
            .into_iter()
            .filter_map(|(broker, answer)| match answer {
                Ok(Ok(answer)) if answer.error_code == 0 && answer.partition_errors == 0 => {
                    Some(broker)
                }
                Ok(Ok(answer)) => {
                    log::warn!(
                        "broker {broker} did not delete topic {}'s replicas (error {}, {} \
                         partition error(s))",
                        topic.name,
                        answer.error_code,
                        answer.partition_errors
                    );
                    None
                }
                Ok(Err(e)) => {
                    log::warn!("deleting topic {}'s replicas: {e}", topic.name);
                    None
                }
                Err(_) => None,
            })
            .collect()
    }

    /// [`Shared::reelect`] for every partition whose leader or an ISR
    /// member is not in `live`; applies the results here and answers the
    /// topics that changed (not yet sent to the other brokers).
    async fn reelect_all(&self, live: &[i32]) -> Result<Vec<TopicMetadata>, TopicError> {
        let topics: Vec<TopicMetadata> = self.cache.read(|m| m.topics.values().cloned().collect());
        let mut changed = Vec::new();
        for mut topic in topics {
            let unclean = self.unclean_allowed(&topic.configs);
            let mut moved = Vec::new();
            for (&index, p) in topic.partitions.iter_mut() {
                let affected = !live.contains(&p.leader) || p.isr.iter().any(|b| !live.contains(b));
                if !affected {
                    continue;
                }
                let tp = TopicPartition::new(topic.name.clone(), index);
                let Some((state, version)) = self.reelect(&tp, &p.replicas, live, unclean).await?
                else {
                    continue;
                };
                let updated = partition_metadata(&state, &p.replicas, version);
                if updated != *p {
                    *p = updated;
                    moved.push(index);
                }
            }
            if !moved.is_empty() {
                self.cache
                    .update(|m| m.topics.insert(topic.name.clone(), topic.clone()));
                self.apply_local(&topic, &moved, &BTreeMap::new()).await?;
                changed.push(topic);
            }
        }
        Ok(changed)
    }

    /// `/brokers/ids` changed: partitions whose leader left get a live ISR
    /// member as leader (none: offline, leader -1, until one returns, as
    /// Kafka does without unclean election), brokers that left leave the
    /// ISRs, offline partitions whose ISR member is back get it as leader
    /// (`Shared::elect`); the replicas of what changed get LeaderAndIsr,
    /// every broker UpdateMetadata, and brokers that joined everything.
    async fn brokers_changed(&self, _change: BrokersChanged) -> Result<(), TopicError> {
        if !self.is_active() {
            return Ok(());
        }
        let BrokerChanges {
            joined,
            left,
            bounced,
        } = self.load_brokers().await?;
        if joined.is_empty() && left.is_empty() {
            return Ok(());
        }
        for id in &left {
            log::info!("broker {id} left the cluster");
        }
        for id in &joined {
            log::info!("broker {id} joined the cluster");
        }
        let live = self.live_brokers();
        let mut changed: BTreeMap<String, TopicMetadata> = BTreeMap::new();
        // KIP-380: a bounced broker is first failed over as a dead one (its
        // old incarnation may have lost records it led), then taken back.
        if !bounced.is_empty() {
            let without: Vec<i32> = live
                .iter()
                .copied()
                .filter(|b| !bounced.contains(b))
                .collect();
            for topic in self.reelect_all(&without).await? {
                changed.insert(topic.name.clone(), topic);
            }
        }
        for topic in self.reelect_all(&live).await? {
            changed.insert(topic.name.clone(), topic);
        }
        let changed: Vec<TopicMetadata> = changed.into_values().collect();
        // Joined brokers get everything; the others the new broker list
        // and what changed.
        let everything: Vec<TopicMetadata> =
            self.cache.read(|m| m.topics.values().cloned().collect());
        for broker in self.remote_brokers() {
            if joined.contains(&broker) {
                self.send_topics_to(broker, &everything);
            } else {
                self.send_topics_to(broker, &changed);
            }
        }
        if !joined.is_empty() {
            // Kafka's TopicDeletionManager on broker start-up: deletions
            // that waited for a replica on a returning broker go on.
            self.finish_pending_deletions().await?;
        }
        Ok(())
    }

    /// `/isr_change_notification` changed: leaders changed ISRs. Read the
    /// states they name into the cache, tell every broker (UpdateMetadata,
    /// as Kafka's `IsrChangeNotification` handler does) and delete the
    /// notifications.
    async fn isr_changes_notified(&self, change: IsrChangesNotified) -> Result<(), TopicError> {
        if !self.is_active() || change.names.is_empty() {
            return Ok(());
        }
        let mut named = std::collections::BTreeSet::new();
        for name in &change.names {
            let path = IsrChangeNotificationZNode::path(name);
            if let Some((bytes, _)) = self.store.get(&path).await? {
                match IsrChangeNotificationZNode::decode(name, &bytes) {
                    Ok(tps) => named.extend(tps),
                    Err(e) => log::warn!("ignoring {path}: {e}"),
                }
            }
            match self.store.delete(&path, None).await {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut changed: BTreeMap<String, TopicMetadata> = BTreeMap::new();
        for tp in named {
            let Some(mut topic) = changed
                .remove(&tp.topic)
                .or_else(|| self.cache.topic(&tp.topic))
            else {
                continue;
            };
            let Some(p) = topic.partitions.get_mut(&tp.partition) else {
                continue;
            };
            let Some((bytes, stat)) = self.store.get(&TopicPartitionStateZNode::path(&tp)).await?
            else {
                continue;
            };
            let state = TopicPartitionStateZNode::decode(&tp, &bytes)?;
            *p = partition_metadata(&state, &p.replicas, stat.version);
            changed.insert(tp.topic.clone(), topic);
        }
        let changed: Vec<TopicMetadata> = changed.into_values().collect();
        self.cache.update(|m| {
            for topic in &changed {
                m.topics.insert(topic.name.clone(), topic.clone());
            }
        });
        for broker in self.remote_brokers() {
            self.deliver(
                broker,
                vec![ControlRequest::UpdateMetadata(
                    self.update_metadata_request(broker, &changed),
                )],
            );
        }
        Ok(())
    }

    /// A control request from a controller: fenced by epoch (Kafka's
    /// STALE_CONTROLLER_EPOCH and KIP-380's STALE_BROKER_EPOCH). An active
    /// controller steps down for a newer epoch only once
    /// `/controller_epoch` confirms it: a forged or confused request must
    /// not leave `/controller` held by a broker that no longer acts on it.
    async fn fence(
        &self,
        controller_id: i32,
        controller_epoch: i32,
        broker_epoch: i64,
    ) -> Result<(), i16> {
        use kafka_protocol::error::ResponseError as E;
        let role = self.role();
        if controller_epoch < role.controller_epoch {
            log::warn!(
                "ignoring a control request from controller {controller_id} with epoch {controller_epoch} \
                 (newest seen: {})",
                role.controller_epoch
            );
            return Err(E::StaleControllerEpoch.code());
        }
        if broker_epoch != -1 && broker_epoch < role.broker_epoch {
            return Err(E::StaleBrokerEpoch.code());
        }
        if role.active {
            // Without ZooKeeper there is no other broker to be controller.
            if controller_epoch <= role.controller_epoch || self.config.zookeeper_connect.is_none()
            {
                // No other controller of this epoch or older can exist
                // while this broker holds it: forged or stale.
                log::warn!(
                    "ignoring a control request from broker {controller_id}: this broker is the controller"
                );
                return Err(E::StaleControllerEpoch.code());
            }
            let stored = match self.store.get(ControllerEpochZNode::path()).await {
                Ok(Some((bytes, _))) => ControllerEpochZNode::decode(&bytes).ok(),
                _ => None,
            };
            if stored.is_none_or(|stored| stored < controller_epoch) {
                log::warn!(
                    "ignoring a control request from broker {controller_id} with controller epoch \
                     {controller_epoch}: /controller_epoch says {stored:?}, and this broker is the \
                     controller"
                );
                return Err(E::StaleControllerEpoch.code());
            }
            // A newer controller was elected: this broker's claim went
            // with a session it has not yet seen expire (a pause longer
            // than the session timeout). Step down now; the session
            // handler registers again.
            log::warn!(
                "broker {controller_id} is the controller with epoch {controller_epoch}: \
                 this broker (epoch {}) steps down",
                role.controller_epoch
            );
            self.set_role(|r| r.active = false);
        }
        self.set_role(|r| r.controller_epoch = r.controller_epoch.max(controller_epoch));
        self.cache.update(|m| m.controller_id = controller_id);
        Ok(())
    }

    async fn apply_leader_and_isr(
        &self,
        request: ApplyLeaderAndIsr,
    ) -> Result<LeaderAndIsrResponse, TopicError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(LeaderAndIsrResponse::default().with_error_code(code));
        }
        let addresses: BTreeMap<i32, String> = request
            .live_leaders
            .iter()
            .map(|l| (l.broker_id.0, format!("{}:{}", l.host_name, l.port)))
            .collect();
        let mut topics = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            let (configs, log_config) = match self.cache.topic(&name) {
                Some(known) => (known.configs, known.log_config),
                None => {
                    let configs = self.topic_configs(&name).await?;
                    let log_config = self.log_config_for(&configs)?;
                    (configs, log_config)
                }
            };
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
                log_config,
            };
            let codes = self.apply_local(&metadata, &indexes, &addresses).await?;
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
        request: ApplyUpdateMetadata,
    ) -> Result<UpdateMetadataResponse, TopicError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(UpdateMetadataResponse::default().with_error_code(code));
        }
        let brokers: BTreeMap<i32, BrokerEndpoint> = request
            .live_brokers
            .iter()
            .filter_map(|b| {
                let endpoint = b.endpoints.first()?;
                Some((
                    b.id.0,
                    BrokerEndpoint {
                        id: b.id.0,
                        host: endpoint.host.to_string(),
                        port: u16::try_from(endpoint.port).ok()?,
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                    },
                ))
            })
            .collect();
        self.cache.update(|m| m.brokers = brokers);
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
            let (configs, log_config) = match &known {
                Some(t) => (t.configs.clone(), t.log_config.clone()),
                None => {
                    let configs = self.topic_configs(&name).await?;
                    let log_config = self.log_config_for(&configs)?;
                    (configs, log_config)
                }
            };
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
                log_config,
            };
            self.cache.update(|m| m.topics.insert(name, metadata));
        }
        Ok(UpdateMetadataResponse::default())
    }

    async fn apply_stop_replica(
        &self,
        request: ApplyStopReplica,
    ) -> Result<StopReplicaResponse, TopicError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(StopReplicaResponse::default().with_error_code(code));
        }
        let mut errors = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            for p in topic.partition_states {
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                self.stop_leading(&tp);
                let code = if p.delete_partition && !self.delete_log(&tp).await? {
                    kafka_protocol::error::ResponseError::KafkaStorageError.code()
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

    /// Standby: `/controller` is empty; run for it.
    async fn try_elect(&self, registration: Registration) -> Result<bool, TopicError> {
        let role = self.role();
        if role.active || role.registering {
            return Ok(false);
        }
        match registration.elect(self.store.as_ref()).await? {
            Some((epoch, epoch_zk_version)) => {
                log::info!(
                    "broker {} is the controller (epoch {epoch})",
                    self.broker_id
                );
                self.activate(epoch, epoch_zk_version).await?;
                Ok(true)
            }
            None => {
                let holder = self.controller_holder().await?;
                self.cache.update(|m| m.controller_id = holder);
                Ok(false)
            }
        }
    }
}

/// The first PLAINTEXT endpoint of a registration, as `(host, port)`.
fn plaintext_endpoint(info: &BrokerInfo) -> Option<(String, u16)> {
    info.endpoints.iter().find_map(|endpoint| {
        let rest = endpoint.strip_prefix("PLAINTEXT://")?;
        let (host, port) = rest.rsplit_once(':')?;
        Some((
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port.parse().ok()?,
        ))
    })
}

controller_request!(
    /// `/brokers/topics/<topic>` changed.
    AssignmentChanged {
        topic: String,
    } -> (), assignment_changed
);

controller_request!(
    /// The children of `/config/changes`, read after a change.
    ConfigChanged {
        names: Vec<String>,
    } -> (), config_changed
);

controller_request!(
    /// The children of `/brokers/ids`, read after a change.
    /// (The handler reads the registrations again, with their epochs.)
    BrokersChanged {} -> (), brokers_changed
);

/// A LeaderAndIsr request from the controller (this broker's or another's).
#[derive(Debug)]
pub struct ApplyLeaderAndIsr(pub LeaderAndIsrRequest);

impl Message for ApplyLeaderAndIsr {
    type Result = Result<LeaderAndIsrResponse, TopicError>;
}

/// An UpdateMetadata request from the controller.
#[derive(Debug)]
pub struct ApplyUpdateMetadata(pub UpdateMetadataRequest);

impl Message for ApplyUpdateMetadata {
    type Result = Result<UpdateMetadataResponse, TopicError>;
}

/// A StopReplica request from the controller.
#[derive(Debug)]
pub struct ApplyStopReplica(pub StopReplicaRequest);

impl Message for ApplyStopReplica {
    type Result = Result<StopReplicaResponse, TopicError>;
}

macro_rules! control_handler {
    ($message:ident -> $response:ty, $method:ident) => {
        impl Handler<$message> for Controller {
            type Result = AtomicResponse<Self, Result<$response, TopicError>>;

            fn handle(&mut self, msg: $message, _ctx: &mut Context<Self>) -> Self::Result {
                let shared = self.shared.clone();
                AtomicResponse::new(Box::pin(
                    async move { shared.$method(msg).await }.into_actor(self),
                ))
            }
        }
    };
}

control_handler!(ApplyLeaderAndIsr -> LeaderAndIsrResponse, apply_leader_and_isr);
control_handler!(ApplyUpdateMetadata -> UpdateMetadataResponse, apply_update_metadata);
control_handler!(ApplyStopReplica -> StopReplicaResponse, apply_stop_replica);

/// Standby: the `/controller` claim went away; run for controller.
#[derive(Debug, Message)]
#[rtype(result = "()")]
struct TryElect;

impl Handler<TryElect> for Controller {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: TryElect, _ctx: &mut Context<Self>) -> Self::Result {
        let shared = self.shared.clone();
        let registration = self.registration.clone();
        AtomicResponse::new(Box::pin(
            async move { shared.try_elect(registration).await }
                .into_actor(self)
                .map(|result, actor, ctx| match result {
                    Ok(true) => actor.follow_active(ctx),
                    Ok(false) => {}
                    Err(e) => log::error!("the controller election failed: {e}"),
                }),
        ))
    }
}

mod leadership;
pub use leadership::{ControlledShutdown, ElectLeaders, ElectionType, RebalanceLeaders};
