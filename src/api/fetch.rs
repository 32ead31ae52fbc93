//! Fetch (key 1), v0-12. Reads every requested partition from its partition
//! actor, within the request's `max_bytes` and each partition's
//! `partition_max_bytes`, always returning the whole batch holding the fetch
//! offset of the first partition with data. When fewer than `min_bytes` are
//! ready the fetch parks on the partitions' high-watermark feeds until data
//! arrives or `max_wait_ms` passes (long poll); it is woken by the feeds
//! only, never by a timer.
//!
//! A fetch with `replica_id` set comes from a follower: it reads up to the
//! log end offset instead (`ReplicaFetch`, which also tells the leader the
//! follower's position) and parks on the log-end feeds.
//!
//! A consumer's Fetch v11+ may be served by a follower, up to its own high
//! watermark (KIP-392). With `replica.selector.class` rack-aware, a leader
//! answers a consumer whose `rack_id` names another rack holding an in-sync
//! follower with that follower as `preferred_read_replica` and no records.
//!
//! A consumer needs READ on each topic; a follower CLUSTER_ACTION on the
//! cluster. A partition denied answers TOPIC_AUTHORIZATION_FAILED and is
//! not read (Kafka's `KafkaApis.handleFetchRequest`).
//!
//! Record bytes are never copied: each partition's `records` is a
//! placeholder the encoder splices a file region into (`protocol::splice`).

use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{join_all, select_all};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};
use tokio::time::Instant;

use super::BrokerContext;
use crate::actors::partition::{PartitionHandle, PartitionRead, ReadRecords, ReplicaFetch};
use crate::config::ReplicaSelector;
use crate::protocol::splice::placeholder;
use crate::replication::preferred_read_replica;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::storage::FileRegion;
use crate::topic_partition::TopicPartition;

/// The longest a fetch may park, whatever the client asks.
const MAX_WAIT_MS_CAP: i32 = 30_000;

struct Wanted {
    topic_index: usize,
    tp: TopicPartition,
    offset: i64,
    max_bytes: u64,
    current_leader_epoch: i32,
    /// A follower's own log start offset (v5+; -1 otherwise).
    log_start_offset: i64,
    handle: Option<PartitionHandle>,
    /// The principal may not read it: TOPIC_AUTHORIZATION_FAILED.
    denied: bool,
}

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: FetchRequest,
    version: i16,
) -> (FetchResponse, Vec<FileRegion>) {
    let max_wait = Duration::from_millis(request.max_wait_ms.clamp(0, MAX_WAIT_MS_CAP) as u64);
    let deadline = Instant::now() + max_wait;
    let min_bytes = request.min_bytes.max(0) as u64;
    // Kafka's `min(request max_bytes, fetch.max.bytes)`; v0-2 have no
    // response limit of their own, so the broker's bounds them too.
    let broker_max_bytes = ctx.config.fetch_max_bytes.max(1);
    let response_max_bytes = if version >= 3 {
        (request.max_bytes.max(0) as u64).min(broker_max_bytes)
    } else {
        broker_max_bytes
    };
    // Kafka's `replica_id` (v15 moved it into `replica_state`).
    let replica_id = request.replica_id.0.max(request.replica_state.replica_id.0);
    let replica = (replica_id >= 0).then_some(replica_id);
    let follower_allowed =
        replica.is_some() && ctx.authorize_cluster(session, AclOperation::ClusterAction);
    let mut wanted = Vec::new();
    let mut topic_names = Vec::new();
    for (topic_index, topic) in request.topics.iter().enumerate() {
        topic_names.push(topic.topic.clone());
        let denied = match replica {
            Some(_) => !follower_allowed,
            None => !ctx.authorize(session, AclOperation::Read, ResourceType::Topic, &topic.topic.0),
        };
        for partition in &topic.partitions {
            let tp = TopicPartition::new(topic.topic.0.to_string(), partition.partition);
            wanted.push(Wanted {
                topic_index,
                denied,
                handle: if denied { None } else { ctx.partition(&tp) },
                tp,
                offset: partition.fetch_offset,
                max_bytes: partition.partition_max_bytes.max(0) as u64,
                log_start_offset: if version >= 5 {
                    partition.log_start_offset
                } else {
                    -1
                },
                current_leader_epoch: if version >= 9 {
                    partition.current_leader_epoch
                } else {
                    -1
                },
            });
        }
    }
    let consumer = (replica.is_none() && version >= 11).then(|| ConsumerFetch {
        rack: (ctx.config.replica_selector == ReplicaSelector::RackAware)
            .then(|| request.rack_id.to_string())
            .filter(|rack| !rack.is_empty()),
    });
    let mut feeds: Vec<_> = wanted
        .iter()
        .filter_map(|w| {
            w.handle.as_ref().map(|h| match replica {
                Some(_) => h.log_end_offset.clone(),
                None => h.high_watermark.clone(),
            })
        })
        .collect();
    loop {
        // Subscribe before reading: a high watermark that moves after this
        // point wakes the wait below, so it never needs to poll.
        for feed in &mut feeds {
            feed.mark_unchanged();
        }
        let (partitions, regions, bytes) =
            read_all(ctx, &wanted, response_max_bytes, replica, consumer.as_ref()).await;
        let answer_now = partitions
            .iter()
            .any(|p| p.error_code != 0 || p.preferred_read_replica.0 >= 0);
        if bytes >= min_bytes || answer_now || Instant::now() >= deadline {
            let mut responses: Vec<FetchableTopicResponse> = topic_names
                .iter()
                .map(|name| FetchableTopicResponse::default().with_topic(name.clone()))
                .collect();
            for (w, partition) in wanted.iter().zip(partitions) {
                count_fetch(ctx, w, &partition, replica.is_some());
                responses[w.topic_index].partitions.push(partition);
            }
            let response = FetchResponse::default().with_responses(responses);
            return (response, regions);
        }
        if feeds.is_empty() {
            tokio::time::sleep_until(deadline).await;
            continue;
        }
        let changed = select_all(feeds.iter_mut().map(|f| Box::pin(f.changed())));
        let gone = match tokio::time::timeout_at(deadline, changed).await {
            Ok((Err(_), index, _)) => Some(index),
            _ => None,
        };
        if let Some(index) = gone {
            // That partition is gone (deleted): stop waiting on its feed.
            feeds.remove(index);
        }
    }
}

/// Kafka's BrokerTopicMetrics for one partition of a fetch answered:
/// TotalFetchRequests for each partition read (an unauthorized one is
/// not read), FailedFetchRequests for a read that failed other than by
/// a partition moving or an offset out of range (Kafka's list), and the
/// record bytes out, to a consumer or to a follower.
fn count_fetch(ctx: &BrokerContext, w: &Wanted, partition: &PartitionData, follower: bool) {
    if w.denied {
        return;
    }
    let stats = &ctx.metrics.topics;
    let topic = &w.tp.topic;
    stats.add(topic, 1, |s| &s.total_fetch_requests);
    let expected = [
        ResponseError::UnknownTopicOrPartition,
        ResponseError::NotLeaderOrFollower,
        ResponseError::UnknownLeaderEpoch,
        ResponseError::FencedLeaderEpoch,
        ResponseError::ReplicaNotAvailable,
        ResponseError::KafkaStorageError,
        ResponseError::OffsetOutOfRange,
        ResponseError::LeaderNotAvailable,
    ];
    let code = partition.error_code;
    if code != 0 && !expected.iter().any(|e| e.code() == code) {
        stats.add(topic, 1, |s| &s.failed_fetch_requests);
    }
    let bytes = partition.records.as_ref().map_or(0, |r| r.len()) as u64;
    if bytes > 0 {
        if follower {
            stats.add(topic, bytes, |s| &s.replication_bytes_out);
        } else {
            stats.add(topic, bytes, |s| &s.bytes_out);
        }
    }
}

/// A consumer's Fetch v11+ (KIP-392).
struct ConsumerFetch {
    /// Its `client.rack`, when the broker selects replicas by rack.
    rack: Option<String>,
}

/// The follower a consumer should read `read`'s partition from, if the
/// rack-aware selector prefers one over this leader.
fn preferred_replica(ctx: &BrokerContext, rack: &str, read: &PartitionRead) -> Option<i32> {
    if read.read_replicas.is_empty() {
        return None;
    }
    let followers: Vec<_> = ctx.metadata.read(|m| {
        read.read_replicas
            .iter()
            .map(|r| {
                let rack = m.brokers.get(&r.broker_id).and_then(|b| b.rack.clone());
                (r.clone(), rack)
            })
            .collect()
    });
    preferred_read_replica(rack, ctx.config.broker_rack.as_deref(), &followers)
}

/// Read every wanted partition once. Returns the per-partition responses in
/// request order, the regions in the same order, and the bytes found.
async fn read_all(
    ctx: &BrokerContext,
    wanted: &[Wanted],
    response_max_bytes: u64,
    replica: Option<i32>,
    consumer: Option<&ConsumerFetch>,
) -> (Vec<PartitionData>, Vec<FileRegion>, u64) {
    let reads = join_all(wanted.iter().map(|w| async move {
        if w.denied {
            return Err(ResponseError::TopicAuthorizationFailed.code());
        }
        let Some(handle) = &w.handle else {
            return Err(ctx.missing_partition(&w.tp));
        };
        // No partition may bring more than the whole response may carry
        // (its first batch still comes whole).
        let max_bytes = w.max_bytes.min(response_max_bytes);
        let read = match replica {
            Some(replica_id) => {
                handle
                    .addr
                    .send(ReplicaFetch {
                        replica_id,
                        offset: w.offset,
                        max_bytes,
                        current_leader_epoch: w.current_leader_epoch,
                        log_start_offset: w.log_start_offset,
                    })
                    .await
            }
            None => {
                handle
                    .addr
                    .send(ReadRecords {
                        current_leader_epoch: w.current_leader_epoch,
                        follower_may_serve: consumer.is_some(),
                        list_read_replicas: consumer.is_some_and(|c| c.rack.is_some()),
                        ..ReadRecords::committed(w.offset, max_bytes)
                    })
                    .await
            }
        };
        match read {
            Ok(Ok(read)) => Ok(read),
            Ok(Err(e)) => {
                log::debug!("fetch from {} at {} failed: {e}", w.tp, w.offset);
                Err(e.code())
            }
            Err(_) => Err(ResponseError::NotLeaderOrFollower.code()),
        }
    }))
    .await;
    let mut budget = response_max_bytes;
    let mut total = 0u64;
    let mut partitions = Vec::with_capacity(wanted.len());
    let mut regions = Vec::new();
    for (w, read) in wanted.iter().zip(reads) {
        let mut data = PartitionData::default()
            .with_partition_index(w.tp.partition)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_preferred_read_replica(BrokerId(-1))
            .with_aborted_transactions(Some(Vec::new()))
            .with_records(Some(Bytes::new()));
        match read {
            Err(code) => data = data.with_error_code(code),
            Ok(read) => {
                data = data
                    .with_high_watermark(read.state.high_watermark)
                    .with_last_stable_offset(read.state.high_watermark)
                    .with_log_start_offset(read.state.log_start_offset);
                let preferred = consumer
                    .and_then(|c| c.rack.as_deref())
                    .and_then(|rack| preferred_replica(ctx, rack, &read));
                if let Some(preferred) = preferred {
                    // Kafka answers the redirect without records.
                    log::debug!(
                        "fetch from {}: the consumer's rack prefers broker {preferred}",
                        w.tp
                    );
                    data = data.with_preferred_read_replica(BrokerId(preferred));
                } else if let Some(region) = read.read.region {
                    // The first partition with data may exceed the budget
                    // (a batch larger than max_bytes must still get out).
                    let length = if total == 0 {
                        region.length
                    } else {
                        region.length.min(budget)
                    };
                    if length > 0 {
                        let region = FileRegion { length, ..region };
                        match placeholder(length as usize) {
                            Some(stand_in) => {
                                data = data.with_records(Some(stand_in));
                                regions.push(region);
                            }
                            None => match region.read_to_vec() {
                                Ok(bytes) => data = data.with_records(Some(Bytes::from(bytes))),
                                Err(e) => {
                                    log::error!("reading {} failed: {e}", w.tp);
                                    data = data
                                        .with_error_code(ResponseError::KafkaStorageError.code());
                                }
                            },
                        }
                        total += length;
                        budget = budget.saturating_sub(length);
                    }
                }
            }
        }
        partitions.push(data);
    }
    (partitions, regions, total)
}
