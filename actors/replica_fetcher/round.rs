//! One round of a replica fetcher against its leader: the divergence
//! point of each truncating partition (OffsetForLeaderEpoch, KIP-279),
//! then one Fetch for the rest, appended through the partition actors.
//! Each partition comes back with an [`Outcome`] the actor applies; the
//! actor's state never crosses into these futures.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

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

use crate::net::client::BrokerClient;
use crate::storage::batch::LOG_OVERHEAD;
use crate::storage::leader_epoch::{EpochEndOffset, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use crate::topic_partition::TopicPartition;

use super::super::log_manager::LogOffsets;
use super::super::partition::{
    AppendAsFollower, EndOffsetForLeaderEpoch, LocalLogOffsets, PartitionHandle, TruncateReplica,
};
use super::{
    FetchWork, ReplicaFetcherConfig, RoundWork, LIST_OFFSETS_VERSION,
    OFFSET_FOR_LEADER_EPOCH_VERSION, REPLICA_FETCH_VERSION,
};

/// Rounds of OffsetForLeaderEpoch before a partition gives up and retries
/// later (each round moves to an older epoch, so this is plenty).
const TRUNCATION_ROUNDS: usize = 16;

/// What came of a round, per partition.
pub(super) enum Outcome {
    /// The next offset to fetch, and the local log start when it is known.
    FetchFrom(i64, Option<i64>),
    /// Pause for `replica.fetch.backoff.ms`, then go on as before.
    Backoff,
    /// The leader does not know yet that it leads at our epoch: the
    /// controller's LeaderAndIsr reached this follower first. Retry after
    /// [`LEADER_CATCH_UP_BACKOFF`]. Kafka waits the full backoff here too;
    /// during a controlled shutdown or preferred election that second
    /// held every acks=all produce the new leader had.
    RetrySoon,
}

/// How long a follower waits when its leader has not applied the
/// LeaderAndIsr naming it yet (at most `replica.fetch.backoff.ms`).
pub(super) const LEADER_CATCH_UP_BACKOFF: Duration = Duration::from_millis(50);

impl Outcome {
    /// What to do after the leader answered `code` for a partition.
    fn after_leader_error(code: i16) -> Outcome {
        if code == ResponseError::NotLeaderOrFollower.code()
            || code == ResponseError::UnknownLeaderEpoch.code()
        {
            Outcome::RetrySoon
        } else {
            Outcome::Backoff
        }
    }

    fn after(error: &FollowerError) -> Outcome {
        match error {
            FollowerError::LeaderError(code) => Outcome::after_leader_error(*code),
            _ => Outcome::Backoff,
        }
    }
}

pub(super) async fn run_round(
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
                Outcome::after(&reason)
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
    mut first: Option<Result<EpochEndOffset, FollowerError>>,
) -> Result<i64, FollowerError> {
    let mut epoch = local.latest_leader_epoch;
    let mut cut = None;
    for _ in 0..TRUNCATION_ROUNDS {
        if epoch == UNDEFINED_EPOCH {
            // No epochs known here (an old or empty log): Kafka's fallback.
            cut = Some(local.high_watermark);
            break;
        }
        let EpochEndOffset {
            leader_epoch: leader_end_epoch,
            end_offset: leader_end_offset,
        } = match first.take() {
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
        let EpochEndOffset {
            leader_epoch: local_epoch,
            end_offset: local_end,
        } = ask(
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
    let truncated = cut_log(handle, cut, false, leader_epoch).await?;
    if truncated < local.log_end_offset {
        log::info!(
            "replica {tp}: truncated from {} to {truncated} to match the leader (leader epoch {leader_epoch})",
            local.log_end_offset
        );
    }
    Ok(truncated)
}

/// Why a follower step failed; the partition backs off and tries again.
#[derive(Debug, thiserror::Error)]
enum FollowerError {
    #[error(transparent)]
    Partition(#[from] super::super::partition::PartitionError),
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
    M: actix::Message<Result = Result<T, super::super::partition::PartitionError>> + Send + 'static,
    T: Send + 'static,
    super::super::partition::PartitionActor: actix::Handler<M>,
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
) -> Result<HashMap<TopicPartition, Result<EpochEndOffset, FollowerError>>, FollowerError> {
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
                0 => Ok(EpochEndOffset::new(p.leader_epoch, p.end_offset)),
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
) -> Result<EpochEndOffset, FollowerError> {
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
        return cut_log(handle, leader_end, false, leader_epoch).await;
    }
    let leader_start = leader_offset(client, config, tp, leader_epoch, EARLIEST_OFFSET).await?;
    if leader_start > local.log_end_offset {
        return cut_log(handle, leader_start, true, leader_epoch).await;
    }
    Ok(local.log_end_offset.max(leader_start))
}

/// Cuts the follower's log at `offset` (`start_over`: empty it and start
/// there, past the leader's log start) and answers its new log end.
async fn cut_log(
    handle: &PartitionHandle,
    offset: i64,
    start_over: bool,
    leader_epoch: i32,
) -> Result<i64, FollowerError> {
    let cut = ask(
        handle,
        TruncateReplica {
            offset,
            start_over,
            leader_epoch,
        },
    )
    .await?;
    Ok(cut.log_end_offset)
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
                        // Kafka's FetcherLagStats: the leader's high
                        // watermark less where the next fetch starts.
                        let lag = (answer.high_watermark - offsets.log_end_offset).max(0);
                        config.lag.set(&tp, lag);
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
                Outcome::after_leader_error(code)
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
