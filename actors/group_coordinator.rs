//! The group coordinator actor: owns the registry of consumer groups this
//! broker coordinates and starts one `ConsumerGroup` actor per group on
//! demand. A group belongs to the leader of `__consumer_offsets` partition
//! `abs(hash(group_id)) % offsets.topic.num.partitions`; for the partitions
//! this broker leads, the coordinator loads every group from the log at
//! start (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile) and creates the
//! topic on first use, as Kafka does.
//!
//! It never runs the group state machine itself and never touches files.

use std::collections::{BTreeMap, HashMap};

use actix::prelude::*;
use kafka_protocol::error::ResponseError;

use crate::clock::SharedClock;
use crate::cluster::{BrokerEndpoint, MetadataCache};
use crate::group::records::OffsetAndMetadata;
use crate::group::state::{Group, GroupConfig, GroupSnapshot};
use crate::group::{partition_for, OFFSETS_TOPIC};
use crate::topic_partition::TopicPartition;

use super::consumer_group::{
    read_groups, ConsumerGroup, DescribeGroup, FetchOffsets, GroupLoadError, GroupRuntime,
    OffsetRetention, TopicDeleted,
};
use super::controller::{ControllerError, CreateTopic, TopicRequester};
use super::event_bus::{BrokerEvent, EventBus, EventKind};
use super::partition::PartitionRegistry;
use super::pool::ActorPool;
use super::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};

/// How the coordinator runs; from the broker config.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub group: GroupConfig,
    pub offsets_topic_partitions: i32,
    pub offsets_topic_replication_factor: i16,
    pub offsets_topic_segment_bytes: u64,
    pub offsets_retention_ms: i64,
    pub offsets_retention_check_interval_ms: u64,
}

impl CoordinatorConfig {
    pub fn from_broker(config: &crate::config::BrokerConfig) -> Self {
        CoordinatorConfig {
            group: GroupConfig {
                initial_rebalance_delay_ms: config.group_initial_rebalance_delay_ms as i64,
                min_session_timeout_ms: config.group_min_session_timeout_ms as i64,
                max_session_timeout_ms: config.group_max_session_timeout_ms as i64,
                max_size: config.group_max_size as usize,
            },
            offsets_topic_partitions: config.offsets_topic_num_partitions,
            offsets_topic_segment_bytes: config.offsets_topic_segment_bytes,
            // A single broker on the embedded store cannot hold more than one
            // replica (Kafka's default of 3 would leave every group waiting
            // forever): capped here, with a warning at start-up.
            offsets_topic_replication_factor: if config.zookeeper_connect.is_none() {
                config.offsets_topic_replication_factor.min(1)
            } else {
                config.offsets_topic_replication_factor
            },
            offsets_retention_ms: config.offsets_retention_minutes as i64 * 60_000,
            offsets_retention_check_interval_ms: config.offsets_retention_check_interval_ms,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    Loading,
    Loaded,
}

pub struct GroupCoordinator {
    config: CoordinatorConfig,
    broker_id: i32,
    topics: Recipient<CreateTopic>,
    partitions: PartitionRegistry,
    metadata: MetadataCache,
    clock: SharedClock,
    groups: HashMap<String, Addr<ConsumerGroup>>,
    loads: HashMap<i32, Load>,
    pool: ActorPool,
    events: EventBus,
    link: SupervisorLink,
    /// Subscribed to the event bus (once: the mailbox outlives restarts).
    subscribed: bool,
}

/// The actors and threads the coordinator works with.
#[derive(Clone)]
pub struct CoordinatorDeps {
    /// Where `__consumer_offsets` is created: the controller.
    pub topics: Recipient<CreateTopic>,
    pub partitions: PartitionRegistry,
    pub metadata: MetadataCache,
    pub clock: SharedClock,
    pub pool: ActorPool,
    pub events: EventBus,
}

impl GroupCoordinator {
    /// Start the coordinator under supervision; past its restart budget the
    /// broker shuts down (`fatal`).
    pub fn start(
        config: CoordinatorConfig,
        broker_id: i32,
        deps: CoordinatorDeps,
        fatal: BrokerFatal,
    ) -> Addr<GroupCoordinator> {
        let link = SupervisorLink::default();
        let coordinator = GroupCoordinator {
            config,
            broker_id,
            topics: deps.topics,
            partitions: deps.partitions,
            metadata: deps.metadata,
            clock: deps.clock,
            groups: HashMap::new(),
            loads: HashMap::new(),
            pool: deps.pool,
            events: deps.events,
            link: link.clone(),
            subscribed: false,
        };
        supervise(
            None,
            // Every group request of the broker passes through it.
            ChildSpec::new("the group coordinator", Escalation::ShutdownBroker(fatal))
                .with_mailbox(4096),
            link,
            move |_| coordinator,
        )
    }

    fn offsets_partition(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.config.offsets_topic_partitions)
    }

    /// Load every `__consumer_offsets` partition led here that is not loaded.
    fn load_led_partitions(&mut self, ctx: &mut Context<Self>) {
        let Some(topic) = self.metadata.topic(OFFSETS_TOPIC) else {
            return;
        };
        for (&partition, meta) in &topic.partitions {
            if meta.leader != self.broker_id || self.loads.contains_key(&partition) {
                continue;
            }
            self.loads.insert(partition, Load::Loading);
            let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
            let handle = self.partitions.get(&tp);
            let started = std::time::Instant::now();
            let load = async move {
                let handle = handle.ok_or(GroupLoadError::NotLeader(tp))?;
                read_groups(&handle).await
            };
            ctx.spawn(
                load.into_actor(self)
                    .map(move |result, actor, _ctx| match result {
                        Ok((groups, scanned)) => {
                            let count = groups.len();
                            for (group_id, loaded) in groups {
                                actor.start_group(
                                    group_id,
                                    partition,
                                    loaded.snapshot,
                                    loaded.offsets,
                                );
                            }
                            let level = if count > 0 { log::Level::Info } else { log::Level::Debug };
                            log::log!(
                                level,
                                "loaded {count} group(s) from {OFFSETS_TOPIC}-{partition}: {} records, {} bytes in {} ms",
                                scanned.records,
                                scanned.bytes,
                                started.elapsed().as_millis()
                            );
                            actor.loads.insert(partition, Load::Loaded);
                        }
                        Err(e) => {
                            log::error!("loading {OFFSETS_TOPIC}-{partition} failed: {e}");
                            actor.loads.remove(&partition);
                        }
                    }),
            );
        }
    }

    fn start_group(
        &mut self,
        group_id: String,
        partition: i32,
        snapshot: Option<GroupSnapshot>,
        offsets: HashMap<TopicPartition, OffsetAndMetadata>,
    ) -> Option<Addr<ConsumerGroup>> {
        let log = self
            .partitions
            .get(&TopicPartition::new(OFFSETS_TOPIC, partition))?;
        let now = self.clock.now_ms();
        let group = match snapshot {
            Some(snapshot) => {
                Group::restore(group_id.clone(), self.config.group.clone(), snapshot, now)
            }
            None => Group::new(group_id.clone(), self.config.group.clone()),
        };
        let runtime = GroupRuntime {
            config: self.config.group.clone(),
            clock: self.clock.clone(),
            retention: OffsetRetention {
                retention_ms: self.config.offsets_retention_ms,
                check_interval_ms: self.config.offsets_retention_check_interval_ms,
            },
            events: self.events.clone(),
        };
        let arbiter = self.pool.pick(&group_id);
        let addr = ConsumerGroup::start(group, log, offsets, runtime, Some(&arbiter));
        self.groups.insert(group_id, addr.clone());
        Some(addr)
    }

    /// Where `group_id`'s requests go, or the error the client must see.
    fn route(&mut self, group_id: &str) -> Result<i32, ResponseError> {
        let partition = self.offsets_partition(group_id);
        let leads = self
            .metadata
            .topic(OFFSETS_TOPIC)
            .and_then(|t| {
                t.partitions
                    .get(&partition)
                    .map(|p| p.leader == self.broker_id)
            })
            .unwrap_or(false);
        if !leads {
            return Err(ResponseError::NotCoordinator);
        }
        match self.loads.get(&partition) {
            Some(Load::Loaded) => Ok(partition),
            _ => Err(ResponseError::CoordinatorLoadInProgress),
        }
    }
}

impl actix::Supervised for GroupCoordinator {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        if let Some(cause) = self.link.escalated() {
            log::error!("the group coordinator keeps failing ({cause}); the broker shuts down");
        }
        // The groups live in their own actors and survive this one; forget
        // those that stopped and any load that was cut short (`started`
        // loads it again).
        self.groups.retain(|_, addr| addr.connected());
        self.loads.retain(|_, load| *load == Load::Loaded);
    }
}

impl Actor for GroupCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if !self.subscribed {
            // Deleted topics lose their committed offsets in every group.
            self.events.subscribe(
                ctx.address().recipient(),
                &[
                    EventKind::TopicDeleted,
                    EventKind::LeadershipGained,
                    EventKind::LeadershipLost,
                ],
            );
            self.subscribed = true;
        }
        self.load_led_partitions(ctx);
    }
}

/// How `__consumer_offsets` is created, wherever its creation starts
/// (FindCoordinator, or a Metadata request naming it): with its own
/// partition count and replication factor, compacted (the latest commit of
/// each group and partition stays, and no retention by time or size).
pub fn offsets_topic(config: &CoordinatorConfig) -> CreateTopic {
    CreateTopic {
        name: OFFSETS_TOPIC.to_string(),
        num_partitions: config.offsets_topic_partitions,
        replication_factor: config.offsets_topic_replication_factor,
        assignments: BTreeMap::new(),
        configs: vec![
            ("cleanup.policy".into(), "compact".into()),
            (
                "segment.bytes".into(),
                config.offsets_topic_segment_bytes.to_string(),
            ),
        ],
        validate_only: false,
        requester: TopicRequester::Broker,
    }
}

/// FindCoordinator for a group: creates `__consumer_offsets` on first use.
#[derive(Debug)]
pub struct FindGroupCoordinator {
    pub group_id: String,
}

impl Message for FindGroupCoordinator {
    type Result = Result<BrokerEndpoint, ResponseError>;
}

impl Handler<FindGroupCoordinator> for GroupCoordinator {
    type Result = ResponseActFuture<Self, Result<BrokerEndpoint, ResponseError>>;

    fn handle(&mut self, msg: FindGroupCoordinator, _ctx: &mut Context<Self>) -> Self::Result {
        let partition = self.offsets_partition(&msg.group_id);
        let exists = self.metadata.topic(OFFSETS_TOPIC).is_some();
        let create = (!exists).then(|| self.topics.send(offsets_topic(&self.config)));
        Box::pin(
            async move {
                if let Some(create) = create {
                    match create.await {
                        Ok(Ok(_)) | Ok(Err(ControllerError::AlreadyExists(_))) => {}
                        Ok(Err(e)) => {
                            log::warn!("cannot create {OFFSETS_TOPIC}: {e}");
                            return Err(ResponseError::CoordinatorNotAvailable);
                        }
                        Err(_) => return Err(ResponseError::CoordinatorNotAvailable),
                    }
                }
                Ok(())
            }
            .into_actor(self)
            .map(move |created, actor, ctx| {
                created?;
                actor.load_led_partitions(ctx);
                actor.metadata.read(|m| {
                    let leader = m
                        .topics
                        .get(OFFSETS_TOPIC)
                        .and_then(|t| t.partitions.get(&partition))
                        .map(|p| p.leader)
                        .ok_or(ResponseError::CoordinatorNotAvailable)?;
                    m.brokers
                        .get(&leader)
                        .cloned()
                        .ok_or(ResponseError::CoordinatorNotAvailable)
                })
            }),
        )
    }
}

/// A request `M` (one of the group actor's messages) for one group.
/// `create`: start the group if it does not exist (JoinGroup,
/// OffsetCommit); otherwise a missing group answers `Ok(None)`. `Err` is
/// the group-level error the client sees (NOT_COORDINATOR,
/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, or the group's
/// own).
#[derive(Debug)]
pub struct ForGroup<M> {
    pub group_id: String,
    pub request: M,
    pub create: bool,
}

impl<M, T> Message for ForGroup<M>
where
    M: Message<Result = Result<T, ResponseError>>,
    T: 'static,
{
    type Result = Result<Option<T>, ResponseError>;
}

impl<M, T> Handler<ForGroup<M>> for GroupCoordinator
where
    M: Message<Result = Result<T, ResponseError>> + Send + 'static,
    T: Send + 'static,
    ConsumerGroup: Handler<M>,
{
    type Result = ResponseFuture<Result<Option<T>, ResponseError>>;

    fn handle(&mut self, msg: ForGroup<M>, ctx: &mut Context<Self>) -> Self::Result {
        fail::fail_point!("coordinator.for_group");
        let partition = match self.route(&msg.group_id) {
            Ok(partition) => partition,
            Err(e) => {
                if e == ResponseError::CoordinatorLoadInProgress {
                    // Led here but not loaded (leadership arrived from the
                    // controller): load now; the client retries.
                    self.load_led_partitions(ctx);
                }
                return Box::pin(async move { Err(e) });
            }
        };
        let existing = self
            .groups
            .get(&msg.group_id)
            .filter(|a| a.connected())
            .cloned();
        let addr = match existing {
            Some(addr) => addr,
            None if msg.create => {
                match self.start_group(msg.group_id.clone(), partition, None, HashMap::new()) {
                    Some(addr) => addr,
                    None => return Box::pin(async { Err(ResponseError::CoordinatorNotAvailable) }),
                }
            }
            None => {
                self.groups.remove(&msg.group_id);
                return Box::pin(async { Ok(None) });
            }
        };
        // Enqueued now, in the order this coordinator handles requests, so
        // a group sees one client's requests in the order they were sent.
        let request = addr.send(msg.request);
        Box::pin(async move {
            match request.await {
                Ok(answer) => answer.map(Some),
                // The group actor failed under this request: retriable.
                Err(_) => Err(ResponseError::CoordinatorNotAvailable),
            }
        })
    }
}

impl Handler<BrokerEvent> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, event: BrokerEvent, ctx: &mut Context<Self>) {
        match event {
            BrokerEvent::TopicDeleted { topic, .. } => {
                for group in self.groups.values() {
                    group.do_send(TopicDeleted {
                        topic: topic.clone(),
                    });
                }
            }
            // Coordinating follows the leadership of `__consumer_offsets`
            // partitions: load their groups when it arrives...
            BrokerEvent::LeadershipGained { tp, .. } if tp.topic == OFFSETS_TOPIC => {
                self.load_led_partitions(ctx);
            }
            // ...and forget them when it goes (NOT_COORDINATOR from then on;
            // the new leader loads them from the log).
            BrokerEvent::LeadershipLost { tp } if tp.topic == OFFSETS_TOPIC => {
                let partition = tp.partition;
                self.loads.remove(&partition);
                let moved: Vec<String> = self
                    .groups
                    .keys()
                    .filter(|g| self.offsets_partition(g) == partition)
                    .cloned()
                    .collect();
                for group in moved {
                    self.groups.remove(&group);
                }
                log::info!("no longer coordinating the groups of {tp}");
            }
            _ => {}
        }
    }
}

/// Every group coordinated here, with its protocol type and state name.
#[derive(Debug)]
pub struct ListGroups;

impl Message for ListGroups {
    type Result = Vec<(String, String, String)>;
}

impl GroupCoordinator {
    /// Sends `message()` to every live group here and keeps what `keep`
    /// makes of each answer (a group that does not answer is left out),
    /// sorted.
    fn ask_every_group<M, T>(
        &mut self,
        message: impl Fn() -> M,
        keep: impl Fn(String, M::Result) -> Option<T> + Copy + 'static,
    ) -> ResponseFuture<Vec<T>>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        ConsumerGroup: Handler<M>,
        T: Ord + 'static,
    {
        self.groups.retain(|_, addr| addr.connected());
        let asks: Vec<_> = self
            .groups
            .iter()
            .map(|(id, addr)| {
                let id = id.clone();
                let ask = addr.send(message());
                async move { ask.await.ok().and_then(|answer| keep(id, answer)) }
            })
            .collect();
        Box::pin(async move {
            let mut kept: Vec<T> = futures_util::future::join_all(asks)
                .await
                .into_iter()
                .flatten()
                .collect();
            kept.sort();
            kept
        })
    }
}

impl Handler<ListGroups> for GroupCoordinator {
    type Result = ResponseFuture<Vec<(String, String, String)>>;

    fn handle(&mut self, _msg: ListGroups, _ctx: &mut Context<Self>) -> Self::Result {
        self.ask_every_group(
            || DescribeGroup,
            |id, described| {
                let d = described.ok()?;
                let state = d.state.name().to_string();
                (state != "Dead").then_some((id, d.protocol_type, state))
            },
        )
    }
}

/// Every group coordinated here with its committed offsets (the metrics'
/// group count and consumer lag).
#[derive(Debug)]
pub struct CommittedOffsets;

/// A group and the offsets it committed, by partition.
pub type GroupOffsets = (String, Vec<(TopicPartition, i64)>);

impl Message for CommittedOffsets {
    type Result = Vec<GroupOffsets>;
}

impl Handler<CommittedOffsets> for GroupCoordinator {
    type Result = ResponseFuture<Vec<GroupOffsets>>;

    fn handle(&mut self, _msg: CommittedOffsets, _ctx: &mut Context<Self>) -> Self::Result {
        // Loading, moved away or stopped groups are not this broker's now.
        self.ask_every_group(
            || FetchOffsets { partitions: None },
            |id, offsets| {
                let offsets = offsets
                    .ok()?
                    .into_iter()
                    .filter_map(|(tp, o)| o.map(|o| (tp, o.offset)))
                    .collect();
                Some((id, offsets))
            },
        )
    }
}
