//! The extension API: how code outside ferrolog adds an actor to a broker.
//! An `Extension` builds one actix actor; `Broker::builder(config)
//! .with_extension(e)` starts it under the common supervisor, on the
//! broker's actor pool, once the broker is up. Through its
//! `ExtensionContext` the actor can:
//!
//! - read committed records (below the high watermark) of any partition,
//!   or have them pushed to it in order by a `RecordSubscription`, which
//!   resumes from the position the extension commits;
//! - produce records through a client's own path (`ProducePath`): the same
//!   validation (`max.message.bytes`, CRC, internal topics refused), acks=all
//!   with `min.insync.replicas`, into partitions this broker leads;
//! - subscribe to broker events (`EventBus`);
//! - commit and read its positions, stored as the committed offsets of the
//!   consumer group `ferrolog.extension.<name>` in `__consumer_offsets`.
//!
//! It never hands an extension a file, an internal actor address, or a way
//! around the high watermark.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use crate::actors::consumer_group::{CommitOffsets, FetchOffsets};
use crate::actors::controller::{ControllerError, CreateTopic, TopicRequester};
use crate::actors::event_bus::EventBus;
use crate::actors::group_coordinator::{FindGroupCoordinator, ForGroup, GroupCoordinator};
use crate::actors::partition::{
    GetReplicaState, GetState, PartitionHandle, PartitionRegistry, ProduceError, ProducePath,
    ReadRecords, RequiredAcks,
};
use crate::actors::pool::ActorPool;
/// An extension's handle on its own supervision (`ExtensionContext::supervision`).
pub use crate::actors::supervisor::SupervisorLink;
use crate::actors::supervisor::{supervise, ChildSpec, Escalation};
use crate::clock::SharedClock;
use crate::cluster::BrokerEndpoint;
use crate::cluster::MetadataCache;
use crate::group::records::OffsetAndMetadata;
use crate::net::coordinator_client::{CoordinatorClient, CoordinatorClientError};
use crate::security::Session;
use crate::storage::records::{decode_entries, encode_batch};
use crate::topic_partition::TopicPartition;

/// An actor a broker runs beside its own. Implement it, build the broker
/// with `Broker::builder(config).with_extension(my_extension)`.
pub trait Extension: Send + 'static {
    /// The actor. Its `Supervised::restarting` runs after a panic or an
    /// error stop: rebuild from the broker (read the committed position
    /// again), never from what the failed run left in memory.
    type Actor: Actor<Context = Context<Self::Actor>> + actix::Supervised;

    /// Names the extension in logs and in its position group.
    fn name(&self) -> String;

    /// Build the actor, once, when the broker has started.
    fn create(self, broker: ExtensionContext) -> Self::Actor;
}

/// Starts an extension; how the builder keeps extensions of any type.
pub(crate) type ExtensionStarter =
    Box<dyn FnOnce(ExtensionContext, &ActorPool) -> SupervisorLink + Send>;

pub(crate) fn starter<E: Extension>(extension: E) -> ExtensionStarter {
    Box::new(move |mut context: ExtensionContext, pool: &ActorPool| {
        let name = extension.name();
        context.name = name.clone();
        context.session = extension_session(&name);
        let link = context.link.clone();
        let arbiter = pool.pick(&name);
        let spec = ChildSpec::new(format!("extension {name}"), Escalation::Degrade);
        supervise(Some(&arbiter), spec, link.clone(), move |_| {
            extension.create(context)
        });
        link
    })
}

/// Why an extension's request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionError {
    /// No such partition on this broker.
    #[error("unknown topic or partition {0}")]
    UnknownPartition(TopicPartition),
    /// The broker answered with this Kafka error code.
    #[error("{what} failed with Kafka error {code}: {message}")]
    Kafka {
        /// The operation (`produce`, `create topic`, ...).
        what: &'static str,
        /// Kafka's error code.
        code: i16,
        /// What the broker said.
        message: String,
    },
    /// Records that could not be encoded or decoded.
    #[error("records could not be encoded or decoded: {0}")]
    Records(String),
    /// The broker is stopping.
    #[error("the broker is shutting down")]
    Stopped,
}

impl ExtensionError {
    /// The Kafka error code a client would have seen.
    pub fn code(&self) -> i16 {
        match self {
            ExtensionError::UnknownPartition(_) => ResponseError::UnknownTopicOrPartition.code(),
            ExtensionError::Kafka { code, .. } => *code,
            ExtensionError::Records(_) => ResponseError::CorruptMessage.code(),
            ExtensionError::Stopped => ResponseError::KafkaStorageError.code(),
        }
    }
}

/// How long an extension's produce waits for the ISR: the Java producer's
/// `request.timeout.ms` default.
const EXTENSION_PRODUCE_TIMEOUT: Duration = Duration::from_secs(30);

/// A record an extension produces: key, value (None: a tombstone), headers.
pub use crate::storage::records::NewRecord as ProducedRecord;

/// A committed record as an extension reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedRecord {
    /// Its offset in the partition.
    pub offset: i64,
    /// Its timestamp (CreateTime or LogAppendTime, as the topic says).
    pub timestamp: i64,
    /// Its key, if any.
    pub key: Option<Bytes>,
    /// Its value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Its headers, in order.
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// A partition's bounds as a consumer sees them: committed records lie in
/// `log_start_offset..high_watermark`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// The offset after the last committed record.
    pub high_watermark: i64,
    /// The first offset still in the log.
    pub log_start_offset: i64,
}

/// One read: the records from the asked offset on (none yet: empty), and
/// where the next read starts.
#[derive(Debug, Clone)]
pub struct CommittedRead {
    /// The records read, in offset order.
    pub records: Vec<CommittedRecord>,
    /// Where the next read starts.
    pub next_offset: i64,
    /// The partition's high watermark when read.
    pub high_watermark: i64,
    /// The partition's log start offset when read.
    pub log_start_offset: i64,
}

/// This broker's leadership of a partition (`ExtensionContext::leadership`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leadership {
    /// The leader epoch: `produce_in_epoch` and `read_leader_log` fence on it.
    pub leader_epoch: i32,
    /// The leader's log end offset.
    pub log_end_offset: i64,
}

/// What an extension may reach. Cheap to clone.
#[derive(Clone)]
pub struct ExtensionContext {
    name: String,
    /// Who the extension is to the authorizer: `User:<name>` from
    /// 127.0.0.1; grant it ACLs (or `super.users`) as a client.
    session: Session,
    /// The client's append path: an extension's produce takes the same
    /// checks and acks as a client's.
    produce_path: ProducePath,
    partitions: PartitionRegistry,
    metadata: MetadataCache,
    topics: Recipient<CreateTopic>,
    positions: PositionStore,
    events: EventBus,
    clock: SharedClock,
    link: SupervisorLink,
}

/// Where an extension's positions are kept: the group coordinator, under
/// the group `ferrolog.extension.<name>`; this broker's, or over the wire
/// the broker that coordinates the group (as a consumer commits).
#[derive(Clone)]
pub(crate) struct PositionStore {
    broker_id: i32,
    fetch: Recipient<ForGroup<FetchOffsets>>,
    commit: Recipient<ForGroup<CommitOffsets>>,
    find_coordinator: Recipient<FindGroupCoordinator>,
    remote: Arc<CoordinatorClient>,
}

impl PositionStore {
    pub(crate) fn of(
        groups: &Addr<GroupCoordinator>,
        broker_id: i32,
        security: Arc<crate::net::inter_broker::InterBrokerSecurity>,
    ) -> Self {
        PositionStore {
            broker_id,
            fetch: groups.clone().recipient(),
            commit: groups.clone().recipient(),
            find_coordinator: groups.clone().recipient(),
            remote: Arc::new(CoordinatorClient::new(
                format!("ferrolog-extensions-{broker_id}"),
                security,
            )),
        }
    }
}

/// Where a group request was answered: by this broker's coordinator, or
/// not, because `At` coordinates the group.
enum GroupAnswer<T> {
    Here(Option<T>),
    At(BrokerEndpoint),
}

fn remote_error(what: &'static str, e: CoordinatorClientError) -> ExtensionError {
    ExtensionError::Kafka {
        what,
        code: e.code(),
        message: e.to_string(),
    }
}

/// An extension's principal, `User:<extension name>`, from the loopback.
fn extension_session(name: &str) -> Session {
    Session {
        principal: crate::security::KafkaPrincipal::user(name),
        host: std::net::Ipv4Addr::LOCALHOST.to_string(),
    }
}

/// Bound on one read: what a consumer's default `max.partition.fetch.bytes` is.
const READ_MAX_BYTES: u64 = 1 << 20;

impl ExtensionContext {
    pub(crate) fn new(
        produce_path: ProducePath,
        metadata: MetadataCache,
        topics: Recipient<CreateTopic>,
        positions: PositionStore,
        events: EventBus,
        clock: SharedClock,
    ) -> Self {
        ExtensionContext {
            name: String::new(),
            session: extension_session(""),
            partitions: produce_path.partitions.clone(),
            produce_path,
            metadata,
            topics,
            positions,
            events,
            clock,
            link: SupervisorLink::default(),
        }
    }

    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The broker's event bus.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// This extension's supervision record: `stop()` before a deliberate
    /// `ctx.stop()`, so the supervisor does not restart it.
    pub fn supervision(&self) -> &SupervisorLink {
        &self.link
    }

    /// The broker's clock, in milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// How many partitions `topic` has, if it exists.
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        self.metadata
            .topic(topic)
            .map(|t| t.partitions.len() as i32)
    }

    /// Every topic, internal ones included.
    pub fn topics(&self) -> Vec<String> {
        self.metadata.read(|m| m.topics.keys().cloned().collect())
    }

    /// Create `topic` unless it exists (broker defaults where -1).
    pub async fn ensure_topic(
        &self,
        topic: &str,
        partitions: i32,
        configs: Vec<(String, String)>,
    ) -> Result<(), ExtensionError> {
        if self.metadata.topic(topic).is_some() {
            return Ok(());
        }
        self.create_topic(CreateTopic {
            name: topic.to_string(),
            num_partitions: partitions,
            replication_factor: -1,
            assignments: Default::default(),
            configs,
            validate_only: false,
            requester: TopicRequester::Broker,
        })
        .await
    }

    async fn create_topic(&self, create: CreateTopic) -> Result<(), ExtensionError> {
        match self.topics.send(create).await {
            Ok(Ok(_)) | Ok(Err(ControllerError::AlreadyExists(_))) => Ok(()),
            Ok(Err(e)) => Err(ExtensionError::Kafka {
                what: "create topic",
                code: e.code(),
                message: e.to_string(),
            }),
            Err(_) => Err(ExtensionError::Stopped),
        }
    }

    /// Create `topic` unless it exists, with `like`'s partitions on the same
    /// replicas in the same order (Kafka Streams' co-partitioning): each
    /// partition's preferred leader is the same broker in both, so an
    /// extension copying partition p of `like` into p of `topic` finds both
    /// led by one broker (after a failover, once preferred leaders are
    /// elected again).
    pub async fn ensure_copartitioned_topic(
        &self,
        topic: &str,
        like: &str,
        configs: Vec<(String, String)>,
    ) -> Result<(), ExtensionError> {
        if self.metadata.topic(topic).is_some() {
            return Ok(());
        }
        let assignments = self
            .metadata
            .topic(like)
            .ok_or_else(|| ExtensionError::UnknownPartition(TopicPartition::new(like, 0)))?
            .partitions
            .iter()
            .map(|(partition, state)| (*partition, state.replicas.clone()))
            .collect();
        self.create_topic(CreateTopic {
            name: topic.to_string(),
            num_partitions: -1,
            replication_factor: -1,
            assignments,
            configs,
            validate_only: false,
            requester: TopicRequester::Broker,
        })
        .await
    }

    /// Append `records` to `tp` as one batch through a client's path
    /// (`ProducePath`): acks=all with `min.insync.replicas`, internal topics
    /// refused; answers the first offset once every ISR member has it. Only
    /// the partition's leader takes it (NOT_LEADER_OR_FOLLOWER elsewhere).
    pub async fn produce(
        &self,
        tp: &TopicPartition,
        records: &[ProducedRecord],
    ) -> Result<i64, ExtensionError> {
        self.append(tp, records, -1).await
    }

    /// As `produce`, refused (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER)
    /// unless this broker still leads `tp` in `leader_epoch`, the epoch of
    /// a `leadership` or `read_leader_log` that told the extension what the
    /// log holds: an append decided on that knowledge lands only while it
    /// is still true.
    pub async fn produce_in_epoch(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
        records: &[ProducedRecord],
    ) -> Result<i64, ExtensionError> {
        self.append(tp, records, leader_epoch).await
    }

    async fn append(
        &self,
        tp: &TopicPartition,
        records: &[ProducedRecord],
        current_leader_epoch: i32,
    ) -> Result<i64, ExtensionError> {
        let batch = encode_batch(records, self.clock.now_ms())
            .map_err(|e| ExtensionError::Records(e.to_string()))?;
        let appended = self
            .produce_path
            .append_in_epoch(
                &self.session,
                tp.clone(),
                Some(batch),
                RequiredAcks::ALL,
                EXTENSION_PRODUCE_TIMEOUT,
                current_leader_epoch,
            )
            .await;
        match appended {
            Ok(produced) => Ok(produced.info.first_offset),
            Err(ProduceError::NotServed { code, .. })
                if code == ResponseError::UnknownTopicOrPartition.code() =>
            {
                Err(ExtensionError::UnknownPartition(tp.clone()))
            }
            Err(e) => Err(ExtensionError::Kafka {
                what: "produce",
                code: e.code(),
                message: e.to_string(),
            }),
        }
    }

    /// `tp`'s replica on this broker.
    fn local_partition(&self, tp: &TopicPartition) -> Result<PartitionHandle, ExtensionError> {
        self.partitions
            .get(tp)
            .ok_or_else(|| ExtensionError::UnknownPartition(tp.clone()))
    }

    /// `tp`'s high watermark and log start offset.
    pub async fn offsets(&self, tp: &TopicPartition) -> Result<PartitionOffsets, ExtensionError> {
        let handle = self.local_partition(tp)?;
        let state = handle
            .addr
            .send(GetState)
            .await
            .map_err(|_| ExtensionError::Stopped)?;
        Ok(PartitionOffsets {
            high_watermark: state.high_watermark,
            log_start_offset: state.log_start_offset,
        })
    }

    /// Committed records of `tp` from `offset` (at most about 1 MiB).
    pub async fn read_committed(
        &self,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<CommittedRead, ExtensionError> {
        self.read(tp, ReadRecords::committed(offset, READ_MAX_BYTES))
            .await
    }

    /// This broker's leadership of `tp`: the leader epoch to fence on and
    /// the log end; NOT_LEADER_OR_FOLLOWER if another broker leads it.
    pub async fn leadership(&self, tp: &TopicPartition) -> Result<Leadership, ExtensionError> {
        let handle = self.local_partition(tp)?;
        let state = handle
            .addr
            .send(GetReplicaState)
            .await
            .map_err(|_| ExtensionError::Stopped)?;
        if !state.leads {
            return Err(ExtensionError::Kafka {
                what: "leadership",
                code: ResponseError::NotLeaderOrFollower.code(),
                message: format!("broker {} leads {tp}", state.leader),
            });
        }
        Ok(Leadership {
            leader_epoch: state.leader_epoch,
            log_end_offset: state.offsets.log_end_offset,
        })
    }

    /// The leader's records of `tp` from `offset` to its log end, the
    /// not-yet-committed ones too, while this broker leads `tp` in
    /// `leader_epoch` (FENCED_LEADER_EPOCH after a move). A leader never
    /// truncates its own log, so what this shows stays in the log for the
    /// whole epoch; `high_watermark` says how much is committed yet.
    pub async fn read_leader_log(
        &self,
        tp: &TopicPartition,
        offset: i64,
        leader_epoch: i32,
    ) -> Result<CommittedRead, ExtensionError> {
        let request = ReadRecords {
            current_leader_epoch: leader_epoch,
            to_log_end: true,
            ..ReadRecords::committed(offset, READ_MAX_BYTES)
        };
        self.read(tp, request).await
    }

    async fn read(
        &self,
        tp: &TopicPartition,
        request: ReadRecords,
    ) -> Result<CommittedRead, ExtensionError> {
        let offset = request.offset;
        let to_log_end = request.to_log_end;
        let handle = self.local_partition(tp)?;
        let read = handle
            .addr
            .send(request)
            .await
            .map_err(|_| ExtensionError::Stopped)?
            .map_err(|e| ExtensionError::Kafka {
                what: "read",
                code: e.code(),
                message: e.to_string(),
            })?;
        let bytes = match read.read.region {
            // Off the actor threads: this is a file read.
            Some(region) => tokio::task::spawn_blocking(move || region.read_to_vec())
                .await
                .map_err(|_| ExtensionError::Stopped)?
                .map_err(|e| ExtensionError::Records(e.to_string()))?,
            None => Vec::new(),
        };
        let (records, last) =
            decode_entries(&bytes).map_err(|e| ExtensionError::Records(e.to_string()))?;
        let end = if to_log_end {
            read.state.log_end_offset
        } else {
            read.state.high_watermark
        };
        let records: Vec<CommittedRecord> = records
            .into_iter()
            .filter(|r| r.offset >= offset && r.offset < end)
            .map(|r| CommittedRecord {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            })
            .collect();
        Ok(CommittedRead {
            next_offset: last.map_or(offset, |l| (l + 1).max(offset)),
            records,
            high_watermark: read.state.high_watermark,
            log_start_offset: read.state.log_start_offset,
        })
    }

    fn position_group(&self) -> String {
        format!("ferrolog.extension.{}", self.name)
    }

    /// The position this extension last committed for `tp`.
    pub async fn committed_position(
        &self,
        tp: &TopicPartition,
    ) -> Result<Option<i64>, ExtensionError> {
        let reply = match self
            .ask_group(
                &self.positions.fetch,
                FetchOffsets {
                    partitions: Some(vec![tp.clone()]),
                },
                false,
            )
            .await?
        {
            GroupAnswer::Here(reply) => reply,
            GroupAnswer::At(coordinator) => {
                return self
                    .positions
                    .remote
                    .fetch_offset(&coordinator, &self.position_group(), tp)
                    .await
                    .map_err(|e| remote_error("position", e));
            }
        };
        Ok(reply.and_then(|offsets| {
            offsets
                .into_iter()
                .find(|(t, _)| t == tp)
                .and_then(|(_, o)| o.map(|o| o.offset))
        }))
    }

    /// Commit `offset` (the next record to process) for `tp`.
    pub async fn commit_position(
        &self,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<(), ExtensionError> {
        let committed = OffsetAndMetadata {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: self.clock.now_ms(),
        };
        let reply = match self
            .ask_group(
                &self.positions.commit,
                CommitOffsets {
                    member_id: String::new(),
                    group_instance_id: None,
                    generation_id: -1,
                    offsets: vec![(tp.clone(), committed)],
                },
                true,
            )
            .await?
        {
            GroupAnswer::Here(reply) => reply,
            GroupAnswer::At(coordinator) => {
                return self
                    .positions
                    .remote
                    .commit_offset(&coordinator, &self.position_group(), tp, offset)
                    .await
                    .map_err(|e| remote_error("commit position", e));
            }
        };
        match reply {
            Some(codes) => match codes.into_iter().find(|(_, c)| *c != 0) {
                None => Ok(()),
                Some((_, code)) => Err(ExtensionError::Kafka {
                    what: "commit position",
                    code,
                    message: String::new(),
                }),
            },
            None => Err(ExtensionError::Kafka {
                what: "commit position",
                code: ResponseError::CoordinatorNotAvailable.code(),
                message: String::new(),
            }),
        }
    }

    async fn ask_group<M, T>(
        &self,
        group: &Recipient<ForGroup<M>>,
        request: M,
        create: bool,
    ) -> Result<GroupAnswer<T>, ExtensionError>
    where
        M: Message<Result = Result<T, ResponseError>> + Send + 'static,
        T: Send + 'static,
    {
        let ask = ForGroup {
            group_id: self.position_group(),
            request,
            create,
        };
        match group.send(ask).await {
            Ok(Ok(reply)) => Ok(GroupAnswer::Here(reply)),
            Ok(Err(e)) => {
                // As a client would: find the coordinator, which creates
                // and loads `__consumer_offsets` on first use, and ask it
                // when it is another broker; otherwise retry later.
                let found = self
                    .positions
                    .find_coordinator
                    .send(FindGroupCoordinator {
                        group_id: self.position_group(),
                    })
                    .await;
                if let (ResponseError::NotCoordinator, Ok(Ok(coordinator))) = (&e, found) {
                    if coordinator.id != self.positions.broker_id {
                        return Ok(GroupAnswer::At(coordinator));
                    }
                }
                Err(ExtensionError::Kafka {
                    what: "position",
                    code: e.code(),
                    message: String::new(),
                })
            }
            Err(_) => Err(ExtensionError::Stopped),
        }
    }

    /// Push `topic`'s committed records to `recipient`, partition by
    /// partition in offset order, from the committed position (or the log
    /// start). After the recipient answers `Ok` for a delivery the position
    /// moves past it and is committed; an error or a restart of the
    /// recipient redelivers from the committed position. Delivery is at
    /// least once; an extension that needs exactly once checks what it
    /// already wrote (see `examples/stream_tap.rs`).
    pub fn subscribe_records(
        &self,
        topic: &str,
        recipient: Recipient<CommittedRecords>,
    ) -> Result<RecordSubscription, ExtensionError> {
        self.subscribe(topic, recipient, Positions::Committed)
    }

    /// As `subscribe_records`, for an extension that keeps its own
    /// positions (where its output says it got to, as `examples/stream_tap.rs`
    /// does; Kafka Connect's sink tasks may too): `positions` is asked where
    /// to start whenever delivery of a partition starts, again after a
    /// failed delivery, and nothing is committed. Needs no group
    /// coordinator, so it runs on every broker of a cluster alike.
    pub fn subscribe_records_from_own_positions(
        &self,
        topic: &str,
        recipient: Recipient<CommittedRecords>,
        positions: Recipient<StartPosition>,
    ) -> Result<RecordSubscription, ExtensionError> {
        self.subscribe(topic, recipient, Positions::Own(positions))
    }

    fn subscribe(
        &self,
        topic: &str,
        recipient: Recipient<CommittedRecords>,
        positions: Positions,
    ) -> Result<RecordSubscription, ExtensionError> {
        let count = self
            .partition_count(topic)
            .ok_or_else(|| ExtensionError::UnknownPartition(TopicPartition::new(topic, 0)))?;
        let mut tasks = Vec::new();
        for partition in 0..count {
            let tp = TopicPartition::new(topic, partition);
            let context = self.clone();
            let recipient = recipient.clone();
            let positions = positions.clone();
            tasks.push(actix_rt::spawn(async move {
                context.deliver_forever(tp, recipient, positions).await
            }));
        }
        Ok(RecordSubscription { tasks })
    }

    /// Where delivery of `tp` starts: the committed or the extension's own
    /// position, else the log start.
    async fn start_position(
        &self,
        tp: &TopicPartition,
        positions: &Positions,
    ) -> Result<i64, ExtensionError> {
        let position = match positions {
            Positions::Committed => self.committed_position(tp).await?,
            Positions::Own(own) => own
                .send(StartPosition { tp: tp.clone() })
                .await
                .map_err(|_| ExtensionError::Stopped)??,
        };
        match position {
            Some(offset) => Ok(offset),
            None => Ok(self.offsets(tp).await?.log_start_offset),
        }
    }

    async fn deliver_forever(
        &self,
        tp: TopicPartition,
        recipient: Recipient<CommittedRecords>,
        positions: Positions,
    ) {
        let retry = Duration::from_millis(200);
        loop {
            if !recipient.connected() {
                return;
            }
            let start = match self.start_position(&tp, &positions).await {
                Ok(start) => start,
                Err(_) => {
                    tokio::time::sleep(retry).await;
                    continue;
                }
            };
            // Runs until a delivery fails; then start over from the commit.
            let commit = matches!(positions, Positions::Committed);
            if let Err(e) = self.deliver_from(&tp, start, &recipient, commit).await {
                log::debug!(
                    "extension {}: delivery of {tp} starts again from its position: {e}",
                    self.name
                );
                tokio::time::sleep(retry).await;
            }
        }
    }

    async fn deliver_from(
        &self,
        tp: &TopicPartition,
        mut position: i64,
        recipient: &Recipient<CommittedRecords>,
        commit: bool,
    ) -> Result<(), ExtensionError> {
        let mut high_watermark = self
            .partitions
            .get(tp)
            .ok_or_else(|| ExtensionError::UnknownPartition(tp.clone()))?
            .high_watermark;
        loop {
            let read = self.read_committed(tp, position).await?;
            if read.records.is_empty() {
                if read.next_offset > position {
                    position = read.next_offset;
                    continue;
                }
                // Wait for new committed records (or re-check now and then).
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), high_watermark.changed()).await;
                continue;
            }
            let next = read.next_offset;
            let delivery = CommittedRecords {
                tp: tp.clone(),
                records: read.records,
            };
            match recipient.send(delivery).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(ExtensionError::Stopped),
            }
            if commit {
                self.commit_position(tp, next).await?;
            }
            position = next;
        }
    }
}

/// Where a subscription's positions come from.
#[derive(Clone)]
enum Positions {
    /// Committed for the extension in `__consumer_offsets`.
    Committed,
    /// The extension's own (`subscribe_records_from_own_positions`).
    Own(Recipient<StartPosition>),
}

/// Asked of an extension that keeps its own positions: the offset of
/// `tp` to deliver from (`None`: the log start). An error: ask again later.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<i64>, ExtensionError>")]
pub struct StartPosition {
    /// The source partition whose delivery starts.
    pub tp: TopicPartition,
}

/// Committed records pushed to a subscribed extension, in offset order.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ExtensionError>")]
pub struct CommittedRecords {
    /// The partition they come from.
    pub tp: TopicPartition,
    /// The records, in offset order.
    pub records: Vec<CommittedRecord>,
}

/// The tasks delivering a subscription; dropping it does not stop them,
/// `cancel` does (they also end when the recipient is gone for good).
pub struct RecordSubscription {
    tasks: Vec<actix_rt::task::JoinHandle<()>>,
}

impl RecordSubscription {
    /// Stop delivering.
    pub fn cancel(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
