//! DeleteTopics (key 20), v0-6: by name (v6 may also name topics by id;
//! ids are matched against the ids Metadata hands out).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::controller::{DeleteTopic, ControllerError};

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DeleteTopicsRequest,
    version: i16,
) -> DeleteTopicsResponse {
    let mut names: Vec<Option<String>> = request
        .topic_names
        .iter()
        .map(|n| Some(n.0.to_string()))
        .collect();
    if version >= 6 {
        let snapshot = ctx.metadata.snapshot();
        for topic in &request.topics {
            let by_name = topic.name.as_ref().map(|n| n.0.to_string());
            let by_id = snapshot
                .topics
                .values()
                .find(|t| uuid::Uuid::from_bytes(t.topic_id) == topic.topic_id)
                .map(|t| t.name.clone());
            names.push(by_name.or(by_id));
        }
    }
    let mut results = Vec::with_capacity(names.len());
    for name in names {
        let Some(name) = name else {
            results.push(
                DeletableTopicResult::default()
                    .with_error_code(ResponseError::UnknownTopicId.code()),
            );
            continue;
        };
        if !ctx.authorize(session, AclOperation::Delete, ResourceType::Topic, &name) {
            results.push(
                DeletableTopicResult::default()
                    .with_name(Some(TopicName(StrBytes::from_string(name))))
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code()),
            );
            continue;
        }
        let topic_id = ctx.metadata.topic(&name).map(|t| t.topic_id);
        let outcome = ctx
            .controller
            .send(DeleteTopic { name: name.clone() })
            .await
            .unwrap_or(Err(ControllerError::Stopped));
        let mut result =
            DeletableTopicResult::default().with_name(Some(TopicName(StrBytes::from_string(name))));
        if let Some(id) = topic_id {
            result = result.with_topic_id(uuid::Uuid::from_bytes(id));
        }
        if let Err(e) = outcome {
            result = result
                .with_error_code(e.code())
                .with_error_message(Some(StrBytes::from_string(e.to_string())));
        }
        results.push(result);
    }
    DeleteTopicsResponse::default().with_responses(results)
}
