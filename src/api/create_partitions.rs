//! CreatePartitions (key 37), v0-3: raise a topic's partition count.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use kafka_protocol::error::ResponseError;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::controller::{CreatePartitions, ControllerError};

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        if !ctx.authorize(session, AclOperation::Alter, ResourceType::Topic, &topic.name.0) {
            results.push(
                CreatePartitionsTopicResult::default()
                    .with_name(topic.name)
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code()),
            );
            continue;
        }
        let assignments = topic.assignments.map(|list| {
            list.into_iter()
                .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                .collect()
        });
        let outcome = ctx
            .controller
            .send(CreatePartitions {
                name: topic.name.0.to_string(),
                count: topic.count,
                assignments,
                validate_only: request.validate_only,
            })
            .await
            .unwrap_or(Err(ControllerError::Stopped));
        let mut result = CreatePartitionsTopicResult::default().with_name(topic.name);
        if let Err(e) = outcome {
            result = result
                .with_error_code(e.code())
                .with_error_message(Some(StrBytes::from_string(e.to_string())));
        }
        results.push(result);
    }
    CreatePartitionsResponse::default().with_results(results)
}
