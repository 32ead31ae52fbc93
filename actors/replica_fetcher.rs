//! A replica fetcher (Kafka's `ReplicaFetcherThread`): one actor per
//! (leader broker, fetcher id), `num.replica.fetchers` of them per leader,
//! each copying the partitions it was given from that leader into their
//! follower partition actors.
//!
//! For each partition it first finds where its log diverges from the
//! leader's (OffsetForLeaderEpoch with its latest leader epoch, KIP-279,
//! round after round until both name the same epoch) and truncates there,
//! never blindly to its high watermark; then it fetches in a loop with
//! Kafka's Fetch and `replica_id` set, honouring `replica.fetch.max.bytes`,
//! `replica.fetch.response.max.bytes`, `replica.fetch.wait.max.ms`,
//! `replica.fetch.min.bytes` and `replica.fetch.backoff.ms`, and appends
//! what it gets through the partition actor (which persists through the
//! shared log actor).
//!
//! It never decides who leads: partitions come and go with the controller's
//! LeaderAndIsr (`ReplicaFetchers::follow`/`unfollow`), and an answer from
//! the leader saying it no longer leads only pauses the partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use crate::net::client::BrokerClient;
use crate::storage::batch::LOG_OVERHEAD;
use crate::storage::leader_epoch::{UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use crate::topic_partition::TopicPartition;

use super::log::LogOffsets;
use super::partition::{
    AppendAsFollower, EndOffsetForLeaderEpoch, LocalLogOffsets, PartitionHandle, TruncateReplica,
};
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

/// The Fetch version followers speak (Kafka 3.x's last before topic ids).
pub const REPLICA_FETCH_VERSION: i16 = 12;
pub const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
/// ListOffsets v4 carries `current_leader_epoch`.
pub const LIST_OFFSETS_VERSION: i16 = 4;
/// Rounds of OffsetForLeaderEpoch before a partition gives up and retries
/// later (each round moves to an older epoch, so this is plenty).
const TRUNCATION_ROUNDS: usize = 16;

/// The replica fetch settings, from the broker config.
#[derive(Debug, Clone)]
pub struct ReplicaFetcherConfig {
    pub broker_id: i32,
    pub num_fetchers: usize,
    pub fetch_max_bytes: i32,
    pub response_max_bytes: i32,
    pub wait_max_ms: i32,
    pub min_bytes: i32,
    pub backoff: Duration,
}

impl ReplicaFetcherConfig {
    pub fn from_broker(config: &crate::config::BrokerConfig) -> ReplicaFetcherConfig {
        ReplicaFetcherConfig {
            broker_id: config.broker_id,
            num_fetchers: config.num_replica_fetchers.max(1),
            fetch_max_bytes: clamp_i32(config.replica_fetch_max_bytes),
            response_max_bytes: clamp_i32(config.replica_fetch_response_max_bytes),
            wait_max_ms: clamp_i32(config.replica_fetch_wait_max_ms),
            min_bytes: clamp_i32(config.replica_fetch_min_bytes),
            backoff: Duration::from_millis(config.replica_fetch_backoff_ms),
        }
    }
}

fn clamp_i32(value: u64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchState {
    /// Find the divergence point with the leader first.
    Truncating,
    Fetching,
}

struct Followed {
    handle: PartitionHandle,
    leader_epoch: i32,
    fetch_offset: i64,
    /// This replica's own log start, sent with each fetch: the leader's
    /// DeleteRecords waits for it (the low watermark).
    log_start_offset: i64,
    state: FetchState,
    /// Not before this instant (after an error).
    paused_until: Option<Instant>,
}

pub struct ReplicaFetcher {
    leader: i32,
    fetcher_id: usize,
    /// The leader's `host:port`.
    address: String,
    config: ReplicaFetcherConfig,
    /// Taken by the round in flight.
    client: Option<BrokerClient>,
    partitions: BTreeMap<TopicPartition, Followed>,
    round: Option<RoundInFlight>,
    link: SupervisorLink,
}

/// The round in flight: its future, and the leader epoch each of its
/// partitions was taken in.
struct RoundInFlight {
    future: SpawnHandle,
    epochs: Vec<(TopicPartition, i32)>,
}

/// What one round works on: a snapshot of the partitions' positions.
struct RoundWork {
    truncate: Vec<(TopicPartition, PartitionHandle, i32)>,
    fetch: Vec<FetchWork>,
}

/// One partition to fetch: where, in which leader epoch, from which offset,
/// and where this replica's log starts.
struct FetchWork {
    tp: TopicPartition,
    handle: PartitionHandle,
    leader_epoch: i32,
    offset: i64,
    log_start_offset: i64,
}

/// What came of a round, per partition.
enum Outcome {
    /// The next offset to fetch, and the local log start when it is known.
    FetchFrom(i64, Option<i64>),
    /// Pause, then go on as before.
    Backoff,
}

impl ReplicaFetcher {
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        if self.round.is_some() || self.partitions.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut work = RoundWork {
            truncate: Vec::new(),
            fetch: Vec::new(),
        };
        let mut next_wake: Option<Instant> = None;
        for (tp, followed) in &self.partitions {
            if let Some(until) = followed.paused_until.filter(|until| *until > now) {
                next_wake = Some(next_wake.map_or(until, |w| w.min(until)));
                continue;
            }
            match followed.state {
                FetchState::Truncating => {
                    work.truncate
                        .push((tp.clone(), followed.handle.clone(), followed.leader_epoch))
                }
                FetchState::Fetching => work.fetch.push(FetchWork {
                    tp: tp.clone(),
                    handle: followed.handle.clone(),
                    leader_epoch: followed.leader_epoch,
                    offset: followed.fetch_offset,
                    log_start_offset: followed.log_start_offset,
                }),
            }
        }
        if work.truncate.is_empty() && work.fetch.is_empty() {
            if let Some(wake) = next_wake {
                ctx.run_later(wake.saturating_duration_since(now), |actor, ctx| {
                    actor.schedule(ctx)
                });
            }
            return;
        }
        let Some(mut client) = self.client.take() else {
            return;
        };
        let epochs = work
            .truncate
            .iter()
            .map(|(tp, _, epoch)| (tp.clone(), *epoch))
            .chain(work.fetch.iter().map(|f| (f.tp.clone(), f.leader_epoch)))
            .collect();
        let config = self.config.clone();
        let future = ctx.spawn(
            async move {
                let outcomes = run_round(&mut client, &config, work).await;
                (client, outcomes)
            }
            .into_actor(self)
            .map(|(mut client, outcomes), actor, ctx| {
                // The leader may have moved (a restart on a new port) while
                // the round was out.
                client.set_address(actor.address.clone());
                actor.client = Some(client);
                actor.round = None;
                actor.apply(outcomes);
                actor.schedule(ctx);
            }),
        );
        self.round = Some(RoundInFlight { future, epochs });
    }

    /// Gives up the round in flight when nothing it brings back can be
    /// used: each of its partitions has a new leader epoch or is no longer
    /// followed here. Such a round may be waiting on a dead connection (a
    /// leader killed while cut off: its FIN never came, and the follower
    /// learns of it only from a retransmission or its exchange timeout,
    /// measured up to 14 s after the leader's restart); a new connection
    /// serves the new epochs at once.
    fn abandon_stale_round(&mut self, ctx: &mut Context<Self>) {
        let Some(round) = &self.round else {
            return;
        };
        let stale = round.epochs.iter().all(|(tp, epoch)| {
            self.partitions
                .get(tp)
                .is_none_or(|followed| followed.leader_epoch != *epoch)
        });
        if !stale {
            return;
        }
        if let Some(round) = self.round.take() {
            ctx.cancel_future(round.future);
        }
        log::info!(
            "replica fetcher {} for leader {}: every partition of the round in flight moved on; abandoning it on a new connection",
            self.fetcher_id,
            self.leader
        );
        self.client = Some(new_client(
            &self.config,
            self.address.clone(),
            self.fetcher_id,
        ));
    }

    fn apply(&mut self, outcomes: Vec<(TopicPartition, i32, Outcome)>) {
        fail::fail_point!("fetcher.apply");
        let backoff_until = Instant::now() + self.config.backoff;
        for (tp, leader_epoch, outcome) in outcomes {
            let Some(followed) = self.partitions.get_mut(&tp) else {
                continue;
            };
            // A new LeaderAndIsr came meanwhile: its state wins.
            if followed.leader_epoch != leader_epoch {
                continue;
            }
            match outcome {
                Outcome::FetchFrom(offset, log_start_offset) => {
                    followed.fetch_offset = offset;
                    if let Some(start) = log_start_offset {
                        followed.log_start_offset = start;
                    }
                    followed.state = FetchState::Fetching;
                    followed.paused_until = None;
                }
                Outcome::Backoff => followed.paused_until = Some(backoff_until),
            }
        }
    }
}

impl Actor for ReplicaFetcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        log::info!(
            "replica fetcher {} for leader {} started",
            self.fetcher_id,
            self.leader
        );
        self.schedule(ctx);
    }
}

impl actix::Supervised for ReplicaFetcher {
    fn restarting(&mut self, ctx: &mut Context<Self>) {
        if let Some(cause) = self.link.escalated() {
            log::error!(
                "replica fetcher {} for leader {} keeps failing ({cause}); it fetches on",
                self.fetcher_id,
                self.leader
            );
        }
        // A round lost in the panic gave no client back: make a new one,
        // and find every divergence point again.
        if self.client.is_none() {
            self.client = Some(new_client(
                &self.config,
                self.address.clone(),
                self.fetcher_id,
            ));
        }
        self.round = None;
        for followed in self.partitions.values_mut() {
            followed.state = FetchState::Truncating;
        }
        self.schedule(ctx);
    }
}

fn new_client(config: &ReplicaFetcherConfig, address: String, fetcher_id: usize) -> BrokerClient {
    BrokerClient::new(
        address,
        format!("replica-fetcher-{}-{fetcher_id}", config.broker_id),
        // A parked fetch answers within wait_max_ms; leave room for it.
        Duration::from_millis(config.wait_max_ms.max(0) as u64) + Duration::from_secs(30),
        (config.response_max_bytes.max(0) as usize).saturating_add(1 << 20),
    )
}

/// Follow `tp` (a new one, or a new leader epoch of one followed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AddPartition {
    pub tp: TopicPartition,
    pub leader_epoch: i32,
    pub handle: PartitionHandle,
    /// The follower's log as the assignment left it.
    pub offsets: LogOffsets,
    /// The leader's `host:port` now.
    pub address: String,
}

impl Handler<AddPartition> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, msg: AddPartition, ctx: &mut Context<Self>) {
        if let Some(client) = self.client.as_mut() {
            client.set_address(msg.address.clone());
        }
        self.address = msg.address;
        self.partitions.insert(
            msg.tp,
            Followed {
                handle: msg.handle,
                leader_epoch: msg.leader_epoch,
                fetch_offset: msg.offsets.log_end_offset,
                log_start_offset: msg.offsets.log_start_offset,
                state: FetchState::Truncating,
                paused_until: None,
            },
        );
        self.abandon_stale_round(ctx);
        self.schedule(ctx);
    }
}

/// Stop following `tp`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemovePartition {
    pub tp: TopicPartition,
}

impl Handler<RemovePartition> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, msg: RemovePartition, ctx: &mut Context<Self>) {
        self.partitions.remove(&msg.tp);
        self.abandon_stale_round(ctx);
    }
}

/// Stop for good (shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopFetcher;

impl Handler<StopFetcher> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, _msg: StopFetcher, ctx: &mut Context<Self>) {
        self.partitions.clear();
        self.link.stop();
        ctx.stop();
    }
}

async fn run_round(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    work: RoundWork,
) -> Vec<(TopicPartition, i32, Outcome)> {
    let mut outcomes = Vec::new();
    if !work.truncate.is_empty() {
        outcomes.extend(truncate_all(client, config, work.truncate).await);
    }
    if !work.fetch.is_empty() {
        outcomes.extend(fetch(client, config, work.fetch).await);
    }
    outcomes
}

/// Every truncating partition's first question in one OffsetForLeaderEpoch
/// request, as Kafka's `fetchEpochEndOffsets` asks it: after a leader dies
/// its successor gains a third of the partitions at once, and one round
/// trip each would delay the first acks=all acknowledgement by as many.
async fn truncate_all(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    work: Vec<(TopicPartition, PartitionHandle, i32)>,
) -> Vec<(TopicPartition, i32, Outcome)> {
    let mut outcomes = Vec::with_capacity(work.len());
    let mut asking = Vec::with_capacity(work.len());
    for (tp, handle, leader_epoch) in work {
        match ask(&handle, LocalLogOffsets).await {
            Ok(local) => asking.push((tp, handle, leader_epoch, local)),
            Err(reason) => {
                log::warn!("replica {tp}: finding the divergence point failed: {reason}");
                outcomes.push((tp, leader_epoch, Outcome::Backoff));
            }
        }
    }
    let questions: Vec<EpochQuestion> = asking
        .iter()
        .filter(|(_, _, _, local)| local.latest_leader_epoch != UNDEFINED_EPOCH)
        .map(|(tp, _, leader_epoch, local)| EpochQuestion {
            tp: tp.clone(),
            current_leader_epoch: *leader_epoch,
            epoch: local.latest_leader_epoch,
        })
        .collect();
    let mut answers = match leader_end_offsets(client, config, &questions).await {
        Ok(answers) => answers,
        Err(reason) => {
            // The whole request failed: each partition asks on its own.
            log::debug!("replica fetcher: OffsetForLeaderEpoch for the round failed: {reason}");
            HashMap::new()
        }
    };
    for (tp, handle, leader_epoch, local) in asking {
        let first = answers.remove(&tp);
        let outcome = match truncate(client, config, &tp, &handle, leader_epoch, local, first).await
        {
            Ok(offset) => Outcome::FetchFrom(offset, None),
            Err(reason) => {
                log::warn!("replica {tp}: finding the divergence point failed: {reason}");
                Outcome::Backoff
            }
        };
        outcomes.push((tp, leader_epoch, outcome));
    }
    outcomes
}

/// KIP-279: ask the leader where our latest epoch ends, step back to an
/// older epoch while the two disagree, then cut the log there. Answers the
/// offset to fetch from.
/// `first` is the leader's answer for the latest local epoch when the
/// round's batched request brought one.
async fn truncate(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    tp: &TopicPartition,
    handle: &PartitionHandle,
    leader_epoch: i32,
    local: LogOffsets,
    mut first: Option<Result<(i32, i64), FollowerError>>,
) -> Result<i64, FollowerError> {
    let mut epoch = local.latest_leader_epoch;
    let mut cut = None;
    for _ in 0..TRUNCATION_ROUNDS {
        if epoch == UNDEFINED_EPOCH {
            // No epochs known here (an old or empty log): Kafka's fallback.
            cut = Some(local.high_watermark);
            break;
        }
        let (leader_end_epoch, leader_end_offset) = match first.take() {
            Some(answer) => answer?,
            None => leader_end_offset(client, config, tp, leader_epoch, epoch).await?,
        };
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET {
            cut = Some(local.high_watermark);
            break;
        }
        if leader_end_epoch == UNDEFINED_EPOCH {
            cut = Some(leader_end_offset.min(local.log_end_offset));
            break;
        }
        let (local_epoch, local_end) = ask(
            handle,
            EndOffsetForLeaderEpoch {
                leader_epoch: leader_end_epoch,
                current_leader_epoch: -1,
                as_leader: false,
            },
        )
        .await?;
        if local_epoch == UNDEFINED_EPOCH {
            cut = Some(leader_end_offset.min(local.log_end_offset));
            break;
        }
        if local_epoch != leader_end_epoch {
            epoch = local_epoch;
            continue;
        }
        cut = Some(leader_end_offset.min(local_end));
        break;
    }
    let Some(cut) = cut else {
        return Err(FollowerError::NoCommonEpoch(TRUNCATION_ROUNDS));
    };
    let truncated = ask(
        handle,
        TruncateReplica {
            offset: cut,
            start_over: false,
            leader_epoch,
        },
    )
    .await?;
    if truncated.log_end_offset < local.log_end_offset {
        log::info!(
            "replica {tp}: truncated from {} to {} to match the leader (leader epoch {leader_epoch})",
            local.log_end_offset,
            truncated.log_end_offset
        );
    }
    Ok(truncated.log_end_offset)
}

/// Why a follower step failed; the partition backs off and tries again.
#[derive(Debug, thiserror::Error)]
enum FollowerError {
    #[error(transparent)]
    Log(#[from] super::log::LogActorError),
    #[error("the partition actor stopped")]
    PartitionGone,
    #[error("no common leader epoch after {0} rounds")]
    NoCommonEpoch(usize),
    #[error(transparent)]
    Leader(#[from] crate::net::client::ClientError),
    #[error("the leader did not answer for the partition")]
    NoAnswer,
    #[error("the leader answered error code {0}")]
    LeaderError(i16),
}

async fn ask<M, T>(handle: &PartitionHandle, msg: M) -> Result<T, FollowerError>
where
    M: Message<Result = Result<T, super::log::LogActorError>> + Send + 'static,
    T: Send + 'static,
    super::partition::PartitionActor: Handler<M>,
{
    match handle.addr.send(msg).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(FollowerError::PartitionGone),
    }
}

/// One partition's question in a batched OffsetForLeaderEpoch.
struct EpochQuestion {
    tp: TopicPartition,
    current_leader_epoch: i32,
    epoch: i32,
}

/// The leader's (epoch, end offset) for each question, or its error for
/// that partition; a partition it left out is missing from the map.
async fn leader_end_offsets(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    questions: &[EpochQuestion],
) -> Result<HashMap<TopicPartition, Result<(i32, i64), FollowerError>>, FollowerError> {
    if questions.is_empty() {
        return Ok(HashMap::new());
    }
    let mut topics: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
    for question in questions {
        topics.entry(&question.tp.topic).or_default().push(
            OffsetForLeaderPartition::default()
                .with_partition(question.tp.partition)
                .with_current_leader_epoch(question.current_leader_epoch)
                .with_leader_epoch(question.epoch),
        );
    }
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(config.broker_id))
        .with_topics(
            topics
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(topic_name(name))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let response: OffsetForLeaderEpochResponse = client
        .call(
            ApiKey::OffsetForLeaderEpoch,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            &request,
        )
        .await?;
    let mut answers = HashMap::new();
    for topic in response.topics {
        for p in topic.partitions {
            let answer = match p.error_code {
                0 => Ok((p.leader_epoch, p.end_offset)),
                code => Err(FollowerError::LeaderError(code)),
            };
            answers.insert(
                TopicPartition::new(topic.topic.0.to_string(), p.partition),
                answer,
            );
        }
    }
    Ok(answers)
}

async fn leader_end_offset(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    tp: &TopicPartition,
    current_leader_epoch: i32,
    epoch: i32,
) -> Result<(i32, i64), FollowerError> {
    let question = EpochQuestion {
        tp: tp.clone(),
        current_leader_epoch,
        epoch,
    };
    leader_end_offsets(client, config, std::slice::from_ref(&question))
        .await?
        .remove(tp)
        .unwrap_or(Err(FollowerError::NoAnswer))
}

/// The leader answered OFFSET_OUT_OF_RANGE (Kafka's
/// `fetchOffsetAndTruncate`): a log that runs past the leader's end (after
/// an unclean election) is cut to that end; one that ends before the
/// leader's start (retention or DeleteRecords moved it) starts over there.
/// Answers the offset to fetch from.
async fn out_of_range(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    tp: &TopicPartition,
    handle: &PartitionHandle,
    leader_epoch: i32,
) -> Result<i64, FollowerError> {
    let local = ask(handle, LocalLogOffsets).await?;
    let leader_end = leader_offset(client, config, tp, leader_epoch, LATEST_OFFSET).await?;
    if leader_end < local.log_end_offset {
        log::warn!(
            "replica {tp}: the log ends at {} past the leader's {leader_end}; truncating to it",
            local.log_end_offset
        );
        let cut = ask(
            handle,
            TruncateReplica {
                offset: leader_end,
                start_over: false,
                leader_epoch,
            },
        )
        .await?;
        return Ok(cut.log_end_offset);
    }
    let leader_start = leader_offset(client, config, tp, leader_epoch, EARLIEST_OFFSET).await?;
    if leader_start > local.log_end_offset {
        let fresh = ask(
            handle,
            TruncateReplica {
                offset: leader_start,
                start_over: true,
                leader_epoch,
            },
        )
        .await?;
        return Ok(fresh.log_end_offset);
    }
    Ok(local.log_end_offset.max(leader_start))
}

/// ListOffsets' `timestamp` for the log end (as a replica asks it: the
/// log end offset, not the high watermark) and for the log start.
const LATEST_OFFSET: i64 = -1;
const EARLIEST_OFFSET: i64 = -2;

/// The leader's log end (`LATEST_OFFSET`) or log start (`EARLIEST_OFFSET`),
/// asked as a replica.
async fn leader_offset(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    tp: &TopicPartition,
    current_leader_epoch: i32,
    timestamp: i64,
) -> Result<i64, FollowerError> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(config.broker_id))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(&tp.topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(tp.partition)
                .with_current_leader_epoch(current_leader_epoch)
                .with_timestamp(timestamp)])]);
    let response: ListOffsetsResponse = client
        .call(ApiKey::ListOffsets, LIST_OFFSETS_VERSION, &request)
        .await?;
    let answer = partition_answer(
        response.topics.iter().flat_map(|t| t.partitions.iter()),
        |p| p.partition_index == tp.partition,
        |p| p.error_code,
    )?;
    Ok(answer.offset)
}

/// The leader's answer for our one partition, or its error code.
fn partition_answer<'a, P>(
    mut answers: impl Iterator<Item = &'a P>,
    ours: impl Fn(&P) -> bool,
    error_code: impl Fn(&P) -> i16,
) -> Result<&'a P, FollowerError> {
    let answer = answers.find(|p| ours(p)).ok_or(FollowerError::NoAnswer)?;
    match error_code(answer) {
        0 => Ok(answer),
        code => Err(FollowerError::LeaderError(code)),
    }
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

async fn fetch(
    client: &mut BrokerClient,
    config: &ReplicaFetcherConfig,
    partitions: Vec<FetchWork>,
) -> Vec<(TopicPartition, i32, Outcome)> {
    let mut topics: BTreeMap<String, Vec<FetchPartition>> = BTreeMap::new();
    for work in &partitions {
        topics.entry(work.tp.topic.clone()).or_default().push(
            FetchPartition::default()
                .with_partition(work.tp.partition)
                .with_current_leader_epoch(work.leader_epoch)
                .with_fetch_offset(work.offset)
                .with_last_fetched_epoch(-1)
                .with_log_start_offset(work.log_start_offset)
                .with_partition_max_bytes(config.fetch_max_bytes),
        );
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(config.broker_id))
        .with_max_wait_ms(config.wait_max_ms)
        .with_min_bytes(config.min_bytes)
        .with_max_bytes(config.response_max_bytes)
        .with_session_epoch(-1)
        .with_topics(
            topics
                .into_iter()
                .map(|(name, partitions)| {
                    FetchTopic::default()
                        .with_topic(topic_name(&name))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let response: FetchResponse = match client
        .call(ApiKey::Fetch, REPLICA_FETCH_VERSION, &request)
        .await
    {
        Ok(response) => response,
        Err(e) => {
            log::warn!("replica fetch failed: {e}");
            return partitions
                .into_iter()
                .map(|work| (work.tp, work.leader_epoch, Outcome::Backoff))
                .collect();
        }
    };
    let mut answers: HashMap<TopicPartition, _> = HashMap::new();
    for topic in response.responses {
        for p in topic.partitions {
            answers.insert(
                TopicPartition::new(topic.topic.0.to_string(), p.partition_index),
                p,
            );
        }
    }
    let mut outcomes = Vec::with_capacity(partitions.len());
    for FetchWork {
        tp,
        handle,
        leader_epoch,
        offset,
        ..
    } in partitions
    {
        let Some(answer) = answers.remove(&tp) else {
            outcomes.push((tp, leader_epoch, Outcome::Backoff));
            continue;
        };
        let outcome = match answer.error_code {
            0 => {
                let records = whole_entries(answer.records.unwrap_or_default());
                let appended = ask(
                    &handle,
                    AppendAsFollower {
                        records,
                        leader_epoch,
                        leader_high_watermark: answer.high_watermark,
                        leader_log_start_offset: answer.log_start_offset,
                    },
                )
                .await;
                match appended {
                    Ok(offsets) => {
                        Outcome::FetchFrom(offsets.log_end_offset, Some(offsets.log_start_offset))
                    }
                    Err(e) => {
                        log::warn!("replica {tp}: appending at {offset} failed: {e}");
                        Outcome::Backoff
                    }
                }
            }
            code if code == ResponseError::OffsetOutOfRange.code() => {
                match out_of_range(client, config, &tp, &handle, leader_epoch).await {
                    Ok(next) => Outcome::FetchFrom(next, None),
                    Err(e) => {
                        log::warn!(
                            "replica {tp}: handling OFFSET_OUT_OF_RANGE at {offset} failed: {e}"
                        );
                        Outcome::Backoff
                    }
                }
            }
            code => {
                log::debug!("replica {tp}: the leader answered error {code}");
                Outcome::Backoff
            }
        };
        outcomes.push((tp, leader_epoch, outcome));
    }
    outcomes
}

/// The complete entries of a fetched record set: a leader cuts the last
/// one short when the fetch's byte limit falls inside it.
fn whole_entries(records: Bytes) -> Bytes {
    let mut position = 0;
    while position + LOG_OVERHEAD <= records.len() {
        let declared = i32::from_be_bytes([
            records[position + 8],
            records[position + 9],
            records[position + 10],
            records[position + 11],
        ]);
        let Ok(declared) = usize::try_from(declared) else {
            break;
        };
        let end = position + LOG_OVERHEAD + declared;
        if end > records.len() {
            break;
        }
        position = end;
    }
    records.slice(..position)
}

/// The fetchers of this broker, by leader: which partitions each follows.
/// The controller calls it when LeaderAndIsr makes this broker a follower
/// or takes it off one.
#[derive(Clone)]
pub struct ReplicaFetchers {
    config: ReplicaFetcherConfig,
    inner: Arc<Mutex<FetcherTable>>,
}

#[derive(Default)]
struct FetcherTable {
    fetchers: HashMap<(i32, usize), Addr<ReplicaFetcher>>,
    following: HashMap<TopicPartition, (i32, usize)>,
}

impl ReplicaFetchers {
    pub fn new(config: ReplicaFetcherConfig) -> ReplicaFetchers {
        ReplicaFetchers {
            config,
            inner: Arc::new(Mutex::new(FetcherTable::default())),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, FetcherTable> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Copy `tp` from `leader` at `address` in `leader_epoch`.
    pub fn follow(
        &self,
        tp: &TopicPartition,
        leader: i32,
        address: String,
        leader_epoch: i32,
        handle: PartitionHandle,
        offsets: LogOffsets,
    ) {
        let fetcher_id = fetcher_for(tp, self.config.num_fetchers);
        let key = (leader, fetcher_id);
        let mut table = self.table();
        if let Some(previous) = table.following.insert(tp.clone(), key) {
            if previous != key {
                if let Some(fetcher) = table.fetchers.get(&previous) {
                    fetcher.do_send(RemovePartition { tp: tp.clone() });
                }
            }
        }
        let fetcher = table
            .fetchers
            .entry(key)
            .or_insert_with(|| self.start_fetcher(leader, fetcher_id, address.clone()))
            .clone();
        drop(table);
        fetcher.do_send(AddPartition {
            tp: tp.clone(),
            leader_epoch,
            handle,
            offsets,
            address,
        });
    }

    /// Stop copying `tp` (this broker leads it now, it is offline, or gone).
    pub fn unfollow(&self, tp: &TopicPartition) {
        let mut table = self.table();
        if let Some(key) = table.following.remove(tp) {
            if let Some(fetcher) = table.fetchers.get(&key) {
                fetcher.do_send(RemovePartition { tp: tp.clone() });
            }
        }
    }

    /// Which leader `tp` is copied from, if any (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn leader_of(&self, tp: &TopicPartition) -> Option<i32> {
        self.table().following.get(tp).map(|(leader, _)| *leader)
    }

    /// Stop every fetcher (shutdown).
    pub fn stop_all(&self) {
        let mut table = self.table();
        table.following.clear();
        for (_, fetcher) in table.fetchers.drain() {
            fetcher.do_send(StopFetcher);
        }
    }

    fn start_fetcher(
        &self,
        leader: i32,
        fetcher_id: usize,
        address: String,
    ) -> Addr<ReplicaFetcher> {
        let link = SupervisorLink::default();
        let spec = ChildSpec::new(
            format!("replica fetcher {fetcher_id} for leader {leader}"),
            Escalation::Degrade,
        );
        let actor = ReplicaFetcher {
            leader,
            fetcher_id,
            client: Some(new_client(&self.config, address.clone(), fetcher_id)),
            address,
            config: self.config.clone(),
            partitions: BTreeMap::new(),
            round: None,
            link: link.clone(),
        };
        supervise(None, spec, link, move |_| actor)
    }
}

/// Kafka's `getFetcherId`: partitions spread over the fetchers by hash.
fn fetcher_for(tp: &TopicPartition, fetchers: usize) -> usize {
    let hash = crate::group::java_string_hash(&tp.topic)
        .wrapping_mul(31)
        .wrapping_add(tp.partition);
    (hash.unsigned_abs() as usize) % fetchers.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_short_last_entry_is_left_for_the_next_fetch() {
        let mut entry = vec![0u8; 8];
        entry.extend_from_slice(&20i32.to_be_bytes());
        entry.extend_from_slice(&[7u8; 20]);
        let mut records = entry.clone();
        records.extend_from_slice(&entry[..15]);
        let kept = whole_entries(Bytes::from(records));
        assert_eq!(kept.len(), entry.len());
        assert_eq!(whole_entries(Bytes::from(vec![0u8; 5])).len(), 0);
    }
}
