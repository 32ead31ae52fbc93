//! ElectLeaders (key 43), v0-2: preferred or unclean leader election on
//! demand (KIP-183, KIP-460), answered by the controller; other brokers
//! answer NOT_CONTROLLER and clients retry at the controller.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::controller::{ElectLeaders, ElectionType, ControllerError};
use crate::topic_partition::TopicPartition;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: ElectLeadersRequest,
    version: i16,
) -> ElectLeadersResponse {
    // v0 has no election type: preferred.
    let election = match (version, request.election_type) {
        (0, _) | (_, 0) => ElectionType::Preferred,
        (_, 1) => ElectionType::Unclean,
        // Only v1+ carry a type, and a top-level error code.
        (_, other) => {
            log::debug!("ElectLeaders with election type {other}");
            return ElectLeadersResponse::default()
                .with_error_code(ResponseError::InvalidRequest.code());
        }
    };
    let requested = request.topic_partitions.clone();
    let partitions = request.topic_partitions.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                let name = t.topic.0.to_string();
                t.partitions
                    .into_iter()
                    .map(move |p| TopicPartition::new(name.clone(), p))
            })
            .collect::<Vec<_>>()
    });
    // ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED everywhere.
    let answers = if ctx.authorize_cluster(session, AclOperation::Alter) {
        ctx.controller
            .send(ElectLeaders {
                election,
                partitions,
            })
            .await
            .unwrap_or(Err(ControllerError::Stopped))
            .map_err(|e| e.code())
    } else {
        Err(ResponseError::ClusterAuthorizationFailed.code())
    };
    let answers = match answers {
        Ok(answers) => answers,
        Err(code) => {
            if version >= 1 {
                return ElectLeadersResponse::default().with_error_code(code);
            }
            // v0 has no top-level error: put it on every partition asked.
            requested
                .unwrap_or_default()
                .into_iter()
                .flat_map(|t| {
                    let name = t.topic.0.to_string();
                    t.partitions
                        .into_iter()
                        .map(move |p| (TopicPartition::new(name.clone(), p), code))
                })
                .collect()
        }
    };
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for (tp, code) in answers {
        by_topic.entry(tp.topic).or_default().push(
            PartitionResult::default()
                .with_partition_id(tp.partition)
                .with_error_code(code),
        );
    }
    ElectLeadersResponse::default().with_replica_election_results(
        by_topic
            .into_iter()
            .map(|(topic, results)| {
                ReplicaElectionResult::default()
                    .with_topic(TopicName(StrBytes::from_string(topic)))
                    .with_partition_result(results)
            })
            .collect(),
    )
}
