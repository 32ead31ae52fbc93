//! The controller actor: the only writer of topic metadata. It registers
//! the broker under `/brokers/ids`, becomes controller by creating
//! `/controller` (bumping `/controller_epoch`), loads every topic from the
//! metadata store at start, and serves topic creation, deletion, partition
//! addition and config changes one at a time, in Kafka's znode layout.
//! What it decides about this broker's own replicas goes to the replica
//! manager (`actors/replica_manager.rs`), fenced like a remote controller's
//! request; it never starts a partition actor or touches a log itself.
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
use crate::config::dynamic::{
    DynamicBrokerConfig, DynamicConfigError, DynamicLayers, DEFAULT_BROKER_ENTITY,
};
use crate::config::BrokerConfig;
use crate::controller::election::{initial_state, offline_partition_leader_election, Elected};
use crate::metadata::assignment::{assign_for_new_topic, assign_replicas, AssignmentError};
use crate::metadata::registration::{claim_ephemeral, ClaimError};
use crate::metadata::store::{CreateMode, MetadataError, MetadataStore, Stat, StoreOp};
use crate::metadata::znodes::{
    ensure_paths, BrokerIdZNode, BrokerInfo, ClusterIdZNode, ConfigEntityZNode, ConfigType,
    ControllerEpochZNode, ControllerZNode, DeleteTopicsTopicZNode, LeaderAndIsr, TopicAssignment,
    TopicPartitionStateZNode, TopicPartitionZNode, TopicPartitionsZNode, TopicZNode, TopicsZNode,
};
use crate::quota::ClientQuotas;
use crate::storage::LogConfig;
use crate::topic_partition::TopicPartition;

use super::event_bus::BrokerEvent;
use super::log_manager::LogManagerError;
use super::partition::{PartitionRuntime, UpdateConfig};
use super::replica_manager::{
    ApplyUpdateMetadata, BecomeLeaderOrFollower, ControllerDeposed, FollowLocalController,
    LocalControllerRole, PartitionCodes, ReplicaManager, ReplicasStopped, StopReplicas,
};
use super::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};
use kafka_protocol::error::ResponseError;

/// Why a controller operation failed (a topic's creation, change or
/// deletion, an election, a control request, the controller's own
/// registration and election); each maps to one Kafka error code
/// (`ControllerError::code`).
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("topic '{0}' already exists")]
    AlreadyExists(String),
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    #[error("unknown topic '{0}'")]
    UnknownTopic(String),
    /// The topic exists in the metadata store but this broker has not
    /// heard of it from the controller yet (it just started, or the topic
    /// was just created): Kafka's answer to an auto-creation that finds it.
    #[error("topic '{0}' exists but its leaders are not known here yet")]
    LeaderNotAvailable(String),
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
    Log(#[from] LogManagerError),
    #[error("partition: {0}")]
    Partition(#[from] crate::actors::partition::PartitionError),
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
    #[error("{0}")]
    DynamicConfig(#[from] DynamicConfigError),
    #[error("broker {broker}'s epoch {requested} is older than its registration's {current}")]
    StaleBrokerEpoch {
        broker: i32,
        requested: i64,
        current: i64,
    },
}

impl ControllerError {
    pub fn code(&self) -> i16 {
        use kafka_protocol::error::ResponseError as E;
        match self {
            ControllerError::AlreadyExists(_) => E::TopicAlreadyExists.code(),
            ControllerError::InvalidTopic(_) => E::InvalidTopicException.code(),
            ControllerError::UnknownTopic(_) => E::UnknownTopicOrPartition.code(),
            ControllerError::LeaderNotAvailable(_) => E::LeaderNotAvailable.code(),
            ControllerError::InvalidPartitions(_) => E::InvalidPartitions.code(),
            ControllerError::InvalidReplicationFactor(_) => E::InvalidReplicationFactor.code(),
            ControllerError::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment.code(),
            ControllerError::InvalidConfig(_) => E::InvalidConfig.code(),
            ControllerError::DeletionDisabled => E::TopicDeletionDisabled.code(),
            ControllerError::InvalidRequest(_) => E::InvalidRequest.code(),
            ControllerError::Log(e) => e.code(),
            ControllerError::Partition(e) => e.code(),
            ControllerError::BrokerNotAvailable(_) => E::BrokerNotAvailable.code(),
            ControllerError::PolicyViolation(_) => E::PolicyViolation.code(),
            ControllerError::DynamicConfig(e) => e.code(),
            ControllerError::StaleBrokerEpoch { .. } => E::StaleBrokerEpoch.code(),
            // The controller is elsewhere, or this broker's is stopping:
            // clients refresh their metadata and retry at the controller.
            ControllerError::ControllerElsewhere { .. }
            | ControllerError::NotController
            | ControllerError::Stopped
            | ControllerError::ControllerMoved { .. } => E::NotController.code(),
            ControllerError::Store(_) | ControllerError::DuplicateBrokerId { .. } => {
                E::UnknownServerError.code()
            }
        }
    }
}

impl From<AssignmentError> for ControllerError {
    fn from(e: AssignmentError) -> Self {
        match e {
            AssignmentError::InvalidPartitions(_) => {
                ControllerError::InvalidPartitions(e.to_string())
            }
            AssignmentError::InvalidReplicationFactor { .. } => {
                ControllerError::InvalidReplicationFactor(e.to_string())
            }
            AssignmentError::DuplicateBroker(_) => {
                ControllerError::InvalidReplicaAssignment(e.to_string())
            }
        }
    }
}

/// The shared pieces every controller operation works on.
#[derive(Clone)]
struct Shared {
    broker_id: i32,
    /// `server.properties` as the broker started with it.
    config: BrokerConfig,
    /// The config in force now, with the dynamic broker configs; keys that
    /// can change are read from here.
    dynamic: DynamicBrokerConfig,
    store: Arc<dyn MetadataStore>,
    cache: MetadataCache,
    partitions: PartitionRuntime,
    /// Kafka's ControllerContext: the role and epoch, the live brokers'
    /// epochs, controlled shutdowns and deletions in progress. One lock,
    /// held only between awaits; each role change is told to the replica
    /// manager, which fences control requests with it.
    context: Arc<std::sync::Mutex<ControllerContext>>,
    /// This broker's replicas: the controller's decisions about them go
    /// there, as a remote broker's go to its replica manager.
    replica_manager: Addr<ReplicaManager>,
    /// The active controller's channel to each other live broker.
    channels: Arc<std::sync::Mutex<HashMap<i32, ChannelHandle>>>,
    /// The newest `/config/changes` notification applied here.
    config_changes_seen: Arc<std::sync::atomic::AtomicI64>,
    /// Client quotas, reread when a notification names a user, client id
    /// or address.
    client_quotas: Arc<ClientQuotas>,
    /// How the controller's channels reach the other brokers.
    inter_broker: Arc<crate::net::inter_broker::InterBrokerSecurity>,
}

use crate::controller::context::{BrokerChanges, ControllerContext, ControllerRole as Role};

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

/// This broker's advertised endpoints: the inter-broker listener's
/// (`host`/`port`, what other brokers dial) and every listener's.
#[derive(Debug, Clone)]
pub struct AdvertisedEndpoint {
    pub host: String,
    pub port: u16,
    pub listeners: Vec<crate::cluster::ListenerEndpoint>,
}

impl Controller {
    /// Register, elect, load every topic, start partition actors for the
    /// partitions led here, then start the actor.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        dynamic: DynamicBrokerConfig,
        store: Arc<dyn MetadataStore>,
        cache: MetadataCache,
        partitions: PartitionRuntime,
        replica_manager: Addr<ReplicaManager>,
        advertised: AdvertisedEndpoint,
        client_quotas: Arc<ClientQuotas>,
        inter_broker: Arc<crate::net::inter_broker::InterBrokerSecurity>,
        fatal: BrokerFatal,
    ) -> Result<Addr<Controller>, ControllerError> {
        let config = dynamic.static_config();
        let broker_id = config.broker_id.max(0);
        ensure_paths(store.as_ref()).await?;
        let cluster_id = match store.get(ClusterIdZNode::path()).await? {
            Some((bytes, _)) => ClusterIdZNode::decode(&bytes)?,
            None => {
                let candidate = ClusterIdZNode::id_from_uuid(*uuid::Uuid::new_v4().as_bytes());
                ClusterIdZNode::create_or_get(store.as_ref(), &candidate).await?
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
                    listeners: advertised.listeners.clone(),
                },
            );
        });
        replica_manager.do_send(LocalControllerRole {
            broker_epoch,
            active_epoch: None,
        });
        let shared = Shared {
            broker_id,
            config,
            dynamic,
            store,
            cache,
            partitions,
            context: Arc::new(std::sync::Mutex::new(ControllerContext::new(
                broker_id,
                broker_epoch,
            ))),
            replica_manager,
            channels: Arc::default(),
            config_changes_seen: Arc::new(std::sync::atomic::AtomicI64::new(-1)),
            client_quotas,
            inter_broker,
        };
        // Notifications older than start-up are in the configs read below.
        for name in shared
            .store
            .children(ConfigEntityChangeNotificationZNode::PATH)
            .await?
        {
            shared.note_config_change(&name);
        }
        // Before any topic is taken up: its log config starts from them.
        shared.load_dynamic_broker_configs().await?;
        shared.client_quotas.load().await?;
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
                shared.learn_controller(holder).await;
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
        let replica_manager = controller.shared.replica_manager.clone();
        let addr = supervise(
            None,
            ChildSpec::new("the controller", Escalation::ShutdownBroker(fatal)),
            link,
            move |_| controller,
        );
        replica_manager.do_send(FollowLocalController(addr.clone().recipient()));
        Ok(addr)
    }
}

impl Actor for Controller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
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
        self.follow_children(ctx, LogDirEventNotificationZNode::PATH, |names| {
            LogDirEventsNotified { names }
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
                .context(|c| c.topics().map(|t| t.name.clone()).collect());
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
        M: Message<Result = Result<(), ControllerError>> + Send + 'static,
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
        let shared = self.shared.clone();
        ctx.spawn(
            async move {
                sessions.changed().await.ok()?;
                // The controller claim went with the old session: step
                // down before anything else, so a newer controller's
                // requests are taken rather than refused.
                shared.update_context(|c| {
                    c.resign();
                    c.role.registering = true;
                });
                log::warn!(
                    "new metadata store session: registering broker {} again",
                    registration.broker_id
                );
                let mut outcome = registration.register(store.as_ref()).await;
                for _ in 1..RECLAIM_ATTEMPTS {
                    match outcome {
                        Err(ControllerError::Store(ref e)) => {
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
            type Result = Result<$out, ControllerError>;
        }

        impl Handler<$name> for Controller {
            type Result = AtomicResponse<Self, Result<$out, ControllerError>>;

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
        /// Who asks: a CreateTopics request off the active controller is
        /// NOT_CONTROLLER, a broker's own creation is written anywhere.
        requester: TopicRequester,
    } -> TopicMetadata, create_topic
);

/// Who asks for a topic to be created. Kafka answers a CreateTopics
/// request NOT_CONTROLLER on any broker but the active controller
/// (`KafkaApis.handleCreateTopicsRequest`; the client refreshes its
/// metadata and asks the controller), while a broker's own creations
/// (auto-creation, the offsets topic, an extension's topics) are written
/// to the metadata store from any broker, as ZooKeeper-era Kafka's
/// AdminZkClient does, for the controller's watch to take up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicRequester {
    CreateTopicsRequest,
    Broker,
}

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
    /// Set the dynamic broker configs (KIP-226) of `broker` (`None`: the
    /// cluster default, `/config/brokers/<default>`) to `configs`.
    AlterBrokerConfigs {
        broker: Option<i32>,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    } -> (), alter_broker_configs
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

controller_request!(
    /// The children of `/log_dir_event_notification`, read after a change.
    LogDirEventsNotified {
        names: Vec<String>,
    } -> (), log_dir_events_notified
);

/// Delete a topic and its data.
#[derive(Debug)]
pub struct DeleteTopic {
    pub name: String,
}

impl Message for DeleteTopic {
    type Result = Result<(), ControllerError>;
}

impl Handler<DeleteTopic> for Controller {
    type Result = AtomicResponse<Self, Result<(), ControllerError>>;

    fn handle(&mut self, msg: DeleteTopic, _ctx: &mut Context<Self>) -> Self::Result {
        let shared = self.shared.clone();
        AtomicResponse::new(Box::pin(
            async move { shared.delete_topic(msg.name).await }.into_actor(self),
        ))
    }
}

// ---------------------------------------------------------------------
// The cluster: election, membership, and what the controller tells the
// other brokers (LeaderAndIsr, UpdateMetadata, StopReplica), and how a
// broker applies what it is told.
// ---------------------------------------------------------------------

use kafka_protocol::messages::stop_replica_request::StopReplicaTopicState;
use kafka_protocol::messages::{LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest};

use super::controller_channel::{ChannelHandle, ControlRequest, ControllerChannel, Deliver};
use crate::metadata::znodes::{
    BrokerIdsZNode, ConfigChangeNotification, ConfigEntityChangeNotificationZNode,
    IsrChangeNotificationZNode, LogDirEventNotificationZNode,
};

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

/// A newer controller is giving orders (the replica manager saw
/// `/controller_epoch` confirm it): this broker's claim went with a session
/// it has not yet seen expire. Step down; the session handler registers
/// again.
impl Handler<ControllerDeposed> for Controller {
    type Result = ();

    fn handle(&mut self, msg: ControllerDeposed, _ctx: &mut Context<Self>) {
        let role = self.shared.role();
        if role.active && role.controller_epoch < msg.epoch {
            log::warn!(
                "controller epoch {} is current: this broker (epoch {}) steps down",
                msg.epoch,
                role.controller_epoch
            );
            self.shared.step_down();
        }
    }
}

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

mod brokers;
mod configs;
mod elections;
mod leadership;
mod log_dirs;
mod registration;
mod requests;
mod topics;

pub use leadership::{ControlledShutdown, ElectLeaders, ElectionType, RebalanceLeaders};
use topics::partition_metadata;

#[cfg(test)]
mod tests {
    use super::ControllerError;
    use kafka_protocol::error::ResponseError;

    /// One code per error wherever it is answered (issue 22): a stopped
    /// controller is NOT_CONTROLLER for CreateTopics as for ElectLeaders
    /// or a control request, so each client retries at the controller.
    #[test]
    fn a_stopped_controller_is_not_the_controller_for_every_request() {
        assert_eq!(
            ControllerError::Stopped.code(),
            ResponseError::NotController.code()
        );
        assert_eq!(
            ControllerError::ControllerMoved { epoch: 3 }.code(),
            ResponseError::NotController.code()
        );
    }
}
