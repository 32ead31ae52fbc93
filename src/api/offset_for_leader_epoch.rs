//! OffsetForLeaderEpoch (key 23), v0-4 (KIP-101, KIP-279): where a leader
//! epoch ends in the leader's log. Followers ask it to find where their log
//! diverges from the leader's before fetching; clients ask it after a
//! leader change to detect truncation (KIP-320). Only the leader answers;
//! `current_leader_epoch` (v2+) is checked as Fetch checks it.

use futures_util::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::partition::EndOffsetForLeaderEpoch;
use crate::storage::leader_epoch::{UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use crate::topic_partition::TopicPartition;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetForLeaderEpochRequest,
    version: i16,
) -> OffsetForLeaderEpochResponse {
    // A follower (v3+ `replica_id`) needs CLUSTER_ACTION, a consumer
    // DESCRIBE on the topic, as in Kafka.
    let follower = version >= 3 && request.replica_id.0 >= 0;
    let follower_allowed =
        follower && ctx.authorize_cluster(session, AclOperation::ClusterAction);
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic.0.to_string();
        let denied = if follower {
            !follower_allowed
        } else {
            !ctx.authorize(session, AclOperation::Describe, ResourceType::Topic, &name)
        };
        let partitions = topic.partitions.into_iter().map(|p| {
            let tp = TopicPartition::new(name.clone(), p.partition);
            async move {
                let answer = EpochEndOffset::default()
                    .with_partition(p.partition)
                    .with_leader_epoch(UNDEFINED_EPOCH)
                    .with_end_offset(UNDEFINED_EPOCH_OFFSET);
                if denied {
                    return answer.with_error_code(ResponseError::TopicAuthorizationFailed.code());
                }
                let Some(handle) = ctx.partition(&tp) else {
                    return answer.with_error_code(ctx.missing_partition(&tp));
                };
                let current_leader_epoch = if version >= 2 {
                    p.current_leader_epoch
                } else {
                    -1
                };
                match handle
                    .addr
                    .send(EndOffsetForLeaderEpoch {
                        leader_epoch: p.leader_epoch,
                        current_leader_epoch,
                        as_leader: true,
                    })
                    .await
                {
                    Ok(Ok(found)) => answer
                        .with_leader_epoch(found.leader_epoch)
                        .with_end_offset(found.end_offset),
                    Ok(Err(e)) => answer.with_error_code(e.code()),
                    Err(_) => answer.with_error_code(ResponseError::NotLeaderOrFollower.code()),
                }
            }
        });
        topics.push(
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(join_all(partitions).await),
        );
    }
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
