//! OffsetCommit v0 and OffsetFetch v0 in ZooKeeper mode: as in Kafka 0.8.2
//! (and every Kafka broker on ZooKeeper since), they read and write the
//! legacy consumer's znodes, `/consumers/<group>/offsets/<topic>/<partition>`
//! holding the offset as decimal text, not `__consumer_offsets`. Without
//! ZooKeeper, v0 goes to the log like every other version.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{authorize_group, BrokerContext};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::consumer_group::OFFSET_METADATA_MAX_BYTES;
use crate::metadata::store::{CreateMode, MetadataError};
use crate::metadata::znodes::ConsumerOffset;
use crate::topic_partition::TopicPartition;

fn known(ctx: &BrokerContext, tp: &TopicPartition) -> bool {
    ctx.metadata
        .topic(&tp.topic)
        .is_some_and(|t| t.partitions.contains_key(&tp.partition))
}

/// Kafka's `setOrCreateConsumerOffset`.
async fn write(ctx: &BrokerContext, path: &str, offset: i64) -> Result<(), MetadataError> {
    let data = ConsumerOffset::encode(offset);
    match ctx.store.set(path, data.clone(), None).await {
        Ok(_) => Ok(()),
        Err(MetadataError::NoNode(_)) => {
            match ctx
                .store
                .create_recursive(path, data.clone(), CreateMode::Persistent)
                .await
            {
                Ok(()) => Ok(()),
                // Created meanwhile by another commit: set it.
                Err(MetadataError::NodeExists(_)) => {
                    ctx.store.set(path, data, None).await.map(|_| ())
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// READ on the group and the topic, as a v1+ commit.
pub async fn commit(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let group = request.group_id.0.to_string();
    let group_denied = authorize_group(ctx, session, AclOperation::Read, &group).is_err();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let topic_denied =
            !ctx.authorize(session, AclOperation::Read, ResourceType::Topic, &topic.name.0);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let tp = TopicPartition::new(topic.name.0.to_string(), p.partition_index);
            let too_large = p
                .committed_metadata
                .as_ref()
                .is_some_and(|m| m.len() > OFFSET_METADATA_MAX_BYTES);
            let code = if group_denied {
                ResponseError::GroupAuthorizationFailed.code()
            } else if topic_denied {
                ResponseError::TopicAuthorizationFailed.code()
            } else if !known(ctx, &tp) {
                ResponseError::UnknownTopicOrPartition.code()
            } else if too_large {
                ResponseError::OffsetMetadataTooLarge.code()
            } else {
                let path = ConsumerOffset::path(&group, &tp.topic, tp.partition);
                match write(ctx, &path, p.committed_offset).await {
                    Ok(()) => 0,
                    Err(MetadataError::InvalidPath(_)) => ResponseError::InvalidGroupId.code(),
                    Err(e) => {
                        log::warn!("OffsetCommit v0 of {group} for {tp} to ZooKeeper: {e}");
                        ResponseError::UnknownServerError.code()
                    }
                }
            };
            partitions.push(
                OffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code),
            );
        }
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// DESCRIBE on the group and the topic, as a v1+ fetch (v0 has no
/// top-level error: the code goes on every partition).
pub async fn fetch(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let group = request.group_id.0.to_string();
    let group_denied = authorize_group(ctx, session, AclOperation::Describe, &group).is_err();
    let mut topics = Vec::new();
    for topic in request.topics.unwrap_or_default() {
        let topic_denied =
            !ctx.authorize(session, AclOperation::Describe, ResourceType::Topic, &topic.name.0);
        let mut partitions = Vec::with_capacity(topic.partition_indexes.len());
        for &index in &topic.partition_indexes {
            let tp = TopicPartition::new(topic.name.0.to_string(), index);
            // Kafka's UNKNOWN_PARTITION: offset -1, no error.
            let mut answer = OffsetFetchResponsePartition::default()
                .with_partition_index(index)
                .with_committed_offset(-1)
                .with_metadata(Some(StrBytes::default()));
            if group_denied {
                answer = answer.with_error_code(ResponseError::GroupAuthorizationFailed.code());
            } else if topic_denied {
                answer = answer.with_error_code(ResponseError::TopicAuthorizationFailed.code());
            } else if known(ctx, &tp) {
                let path = ConsumerOffset::path(&group, &tp.topic, tp.partition);
                match ctx.store.get(&path).await {
                    Ok(Some((bytes, _))) => {
                        match ConsumerOffset::decode(&group, &tp.topic, tp.partition, &bytes) {
                            Ok(offset) => answer = answer.with_committed_offset(offset),
                            Err(e) => {
                                log::warn!("{e}");
                                answer = answer
                                    .with_error_code(ResponseError::UnknownServerError.code());
                            }
                        }
                    }
                    Ok(None) | Err(MetadataError::InvalidPath(_)) => {}
                    Err(e) => {
                        log::warn!("OffsetFetch v0 of {group} for {tp} from ZooKeeper: {e}");
                        answer = answer.with_error_code(ResponseError::UnknownServerError.code());
                    }
                }
            }
            partitions.push(answer);
        }
        topics.push(
            OffsetFetchResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    OffsetFetchResponse::default().with_topics(topics)
}
