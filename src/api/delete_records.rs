//! DeleteRecords (key 21), v0-2: raise a partition's log start offset; -1
//! means its high watermark. Whole segments below it are deleted; each
//! partition is answered once every live replica has dropped the records
//! (the low watermark), or REQUEST_TIMED_OUT after the request's
//! `timeout_ms`, as Kafka's DelayedDeleteRecords.

use futures_util::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::partition::DeleteRecordsBefore;
use crate::topic_partition::TopicPartition;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let timeout_ms = request.timeout_ms;
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let denied = !ctx.authorize(session, AclOperation::Delete, ResourceType::Topic, &name);
        let partitions = topic.partitions.into_iter().map(|p| {
            let tp = TopicPartition::new(name.clone(), p.partition_index);
            async move {
                let result = DeleteRecordsPartitionResult::default()
                    .with_partition_index(p.partition_index)
                    .with_low_watermark(-1);
                if denied {
                    return result.with_error_code(ResponseError::TopicAuthorizationFailed.code());
                }
                let Some(handle) = ctx.partition(&tp) else {
                    return result.with_error_code(ctx.missing_partition(&tp));
                };
                match handle
                    .addr
                    .send(DeleteRecordsBefore {
                        offset: p.offset,
                        timeout_ms: i64::from(timeout_ms),
                    })
                    .await
                {
                    Ok(Ok(low_watermark)) => result.with_low_watermark(low_watermark),
                    Ok(Err(e)) => result.with_error_code(e.code()),
                    Err(_) => result.with_error_code(ResponseError::NotLeaderOrFollower.code()),
                }
            }
        });
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(join_all(partitions).await),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}
