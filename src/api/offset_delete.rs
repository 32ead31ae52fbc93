//! OffsetDelete (key 47), v0: delete a group's committed offsets for
//! partitions it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::{ask_group, authorize_group, require_group_id, BrokerContext};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::consumer_group::DeleteOffsets;
use crate::topic_partition::TopicPartition;

/// DELETE on the group (else GROUP_AUTHORIZATION_FAILED), READ on each
/// topic (else TOPIC_AUTHORIZATION_FAILED), as in Kafka.
pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    if let Err(e) = authorize_group(ctx, session, AclOperation::Delete, &request.group_id.0) {
        return OffsetDeleteResponse::default().with_error_code(e.code());
    }
    let (request_partitions, denied): (Vec<TopicPartition>, Vec<TopicPartition>) = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| TopicPartition::new(t.name.0.to_string(), p.partition_index))
        })
        .partition(|tp| ctx.authorize(session, AclOperation::Read, ResourceType::Topic, &tp.topic));
    // Kafka's `metadataCache.contains(tp)` check comes first: partitions
    // that do not exist are UNKNOWN_TOPIC_OR_PARTITION.
    let (partitions, unknown): (Vec<TopicPartition>, Vec<TopicPartition>) = request_partitions
        .into_iter()
        .partition(|tp| {
            ctx.partition(tp).is_some()
                || ctx
                    .metadata
                    .topic(&tp.topic)
                    .is_some_and(|t| t.partitions.contains_key(&tp.partition))
        });
    if let Err(e) = require_group_id(&request.group_id.0) {
        return OffsetDeleteResponse::default().with_error_code(e.code());
    }
    let mut results = match ask_group(
        ctx,
        &request.group_id.0,
        DeleteOffsets { partitions },
        false,
    )
    .await
    {
        Ok(Some(results)) => results,
        Ok(None) => {
            return OffsetDeleteResponse::default()
                .with_error_code(ResponseError::GroupIdNotFound.code())
        }
        Err(e) => return OffsetDeleteResponse::default().with_error_code(e.code()),
    };
    results.extend(
        unknown
            .into_iter()
            .map(|tp| (tp, ResponseError::UnknownTopicOrPartition.code())),
    );
    results.extend(
        denied
            .into_iter()
            .map(|tp| (tp, ResponseError::TopicAuthorizationFailed.code())),
    );
    let mut topics: BTreeMap<String, Vec<OffsetDeleteResponsePartition>> = BTreeMap::new();
    for (tp, code) in results {
        topics.entry(tp.topic).or_default().push(
            OffsetDeleteResponsePartition::default()
                .with_partition_index(tp.partition)
                .with_error_code(code),
        );
    }
    OffsetDeleteResponse::default().with_topics(
        topics
            .into_iter()
            .map(|(name, partitions)| {
                OffsetDeleteResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}
