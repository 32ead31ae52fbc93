//! ListOffsets (key 2), v0-7: earliest (-2), latest (-1), max timestamp (-3,
//! answered with the last offset) or the first offset at or after a
//! timestamp. v0 answers in its old `old_style_offsets` form. Only the
//! leader answers, checking `current_leader_epoch`; a replica's request
//! (`replica_id` >= 0) gets the log end for latest, a consumer's the high
//! watermark.

use futures_util::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::partition::{LeaderOffsets, OffsetForTimestamp};
use crate::topic_partition::TopicPartition;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: ListOffsetsRequest,
    version: i16,
) -> ListOffsetsResponse {
    // Kafka: a replica id >= 0 is a follower (no isolation level).
    let for_replica = request.replica_id.0 >= 0;
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let denied = !ctx.authorize(session, AclOperation::Describe, ResourceType::Topic, &name);
        let partitions = topic.partitions.into_iter().map(|p| {
            let tp = TopicPartition::new(name.clone(), p.partition_index);
            async move {
                let response = ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index)
                    .with_timestamp(-1)
                    .with_offset(-1);
                if denied {
                    return response
                        .with_error_code(ResponseError::TopicAuthorizationFailed.code());
                }
                let Some(handle) = ctx.partition(&tp) else {
                    return response.with_error_code(ctx.missing_partition(&tp));
                };
                let offsets = LeaderOffsets {
                    current_leader_epoch: p.current_leader_epoch,
                    consumer_latest: !for_replica && p.timestamp == LATEST,
                };
                let state = match handle.addr.send(offsets).await {
                    Ok(Ok(state)) => state,
                    Ok(Err(e)) => return response.with_error_code(e.code()),
                    Err(_) => {
                        return response.with_error_code(ResponseError::NotLeaderOrFollower.code())
                    }
                };
                let (offset, timestamp) = match p.timestamp {
                    // A replica (a follower handling OFFSET_OUT_OF_RANGE)
                    // is told the log end, a consumer the high watermark.
                    LATEST if for_replica => (state.log_end_offset, -1),
                    LATEST => (state.high_watermark, -1),
                    EARLIEST => (state.log_start_offset, -1),
                    // MAX_TIMESTAMP goes to the log too: the record with
                    // the largest timestamp, -1/-1 when empty (Kafka 3.x).
                    timestamp => match handle.addr.send(OffsetForTimestamp { timestamp }).await {
                        Ok(Ok(Some((offset, ts)))) => (offset, ts),
                        Ok(Ok(None)) => (-1, -1),
                        Ok(Err(e)) => return response.with_error_code(e.code()),
                        Err(_) => {
                            return response
                                .with_error_code(ResponseError::NotLeaderOrFollower.code())
                        }
                    },
                };
                if version == 0 {
                    let offsets = if offset >= 0 {
                        vec![offset]
                    } else {
                        Vec::new()
                    };
                    return response.with_old_style_offsets(offsets);
                }
                response.with_offset(offset).with_timestamp(timestamp)
            }
        });
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(join_all(partitions).await),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}
