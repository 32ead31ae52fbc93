//! OffsetCommit (key 8), v0-8: a group member (or, with generation -1, a
//! consumer outside any group) commits offsets; they are written to
//! `__consumer_offsets` before the answer. Without ZooKeeper mode v0 commits
//! also go to the log; with it they go to ZooKeeper (`zookeeper_offsets`).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::{ask_group, authorize_group, BrokerContext};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::consumer_group::CommitOffsets;
use crate::group::records::OffsetAndMetadata;
use crate::topic_partition::TopicPartition;

/// READ on the group (else GROUP_AUTHORIZATION_FAILED on every
/// partition) and on each topic (else TOPIC_AUTHORIZATION_FAILED), as in
/// Kafka's `handleOffsetCommitRequest`.
pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetCommitRequest,
    now_ms: i64,
) -> OffsetCommitResponse {
    let group_denied =
        authorize_group(ctx, session, AclOperation::Read, &request.group_id.0).is_err();
    let mut offsets = Vec::new();
    let mut unknown = Vec::new();
    let mut denied = Vec::new();
    for topic in &request.topics {
        let topic_denied =
            !ctx.authorize(session, AclOperation::Read, ResourceType::Topic, &topic.name.0);
        for p in &topic.partitions {
            let tp = TopicPartition::new(topic.name.0.to_string(), p.partition_index);
            if group_denied || topic_denied {
                denied.push(tp);
                continue;
            }
            // Kafka's `metadataCache.contains(tp)`: the partition must exist,
            // not only its topic.
            let known = ctx.partition(&tp).is_some()
                || ctx
                    .metadata
                    .topic(&tp.topic)
                    .is_some_and(|t| t.partitions.contains_key(&tp.partition));
            if !known {
                unknown.push(tp);
                continue;
            }
            offsets.push((
                tp,
                OffsetAndMetadata {
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p
                        .committed_metadata
                        .as_ref()
                        .map(|m| m.to_string())
                        .unwrap_or_default(),
                    commit_timestamp_ms: if p.commit_timestamp > 0 {
                        p.commit_timestamp
                    } else {
                        now_ms
                    },
                },
            ));
        }
    }
    if group_denied {
        let code = ResponseError::GroupAuthorizationFailed.code();
        return response(denied.into_iter().map(|tp| (tp, code)).collect());
    }
    let tps: Vec<TopicPartition> = offsets.iter().map(|(tp, _)| tp.clone()).collect();
    let command = CommitOffsets {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        generation_id: request.generation_id_or_member_epoch,
        offsets,
    };
    // Kafka's `handleCommitOffsets`: a commit outside any generation (-1)
    // starts the group if needed; one that names a generation of a group
    // that does not exist is ILLEGAL_GENERATION.
    let standalone = request.generation_id_or_member_epoch < 0;
    let mut codes: BTreeMap<TopicPartition, i16> =
        match ask_group(ctx, &request.group_id.0, command, standalone).await {
            Ok(Some(results)) => results.into_iter().collect(),
            Ok(None) => {
                let code = if standalone {
                    // Created on demand: only a failure to start it.
                    ResponseError::CoordinatorNotAvailable.code()
                } else {
                    ResponseError::IllegalGeneration.code()
                };
                tps.into_iter().map(|tp| (tp, code)).collect()
            }
            Err(e) => tps.into_iter().map(|tp| (tp, e.code())).collect(),
        };
    for tp in unknown {
        codes.insert(tp, ResponseError::UnknownTopicOrPartition.code());
    }
    for tp in denied {
        codes.insert(tp, ResponseError::TopicAuthorizationFailed.code());
    }
    response(codes)
}

fn response(codes: BTreeMap<TopicPartition, i16>) -> OffsetCommitResponse {
    let mut topics: BTreeMap<String, Vec<OffsetCommitResponsePartition>> = BTreeMap::new();
    for (tp, code) in codes {
        topics.entry(tp.topic).or_default().push(
            OffsetCommitResponsePartition::default()
                .with_partition_index(tp.partition)
                .with_error_code(code),
        );
    }
    OffsetCommitResponse::default().with_topics(
        topics
            .into_iter()
            .map(|(name, partitions)| {
                OffsetCommitResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}
