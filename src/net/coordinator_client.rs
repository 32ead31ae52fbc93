//! A broker's client for a group's committed offsets at the group's
//! coordinator on another broker: what a Kafka consumer does with
//! OffsetFetch and OffsetCommit once FindCoordinator named a broker. An
//! extension's positions (`ExtensionContext::committed_position`,
//! `commit_position`) go through it when its group's coordinator is not
//! the extension's own broker, so `subscribe_records` works on every
//! broker of a cluster.
//!
//! One request at a time per client, over one connection that follows the
//! coordinator when it moves. Nothing is retried here: a coordinator that
//! moved answers NOT_COORDINATOR, which the caller sees and acts on, as a
//! consumer would.

use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::client::{BrokerClient, ClientError};
use crate::cluster::BrokerEndpoint;
use crate::topic_partition::TopicPartition;

/// OffsetFetch v7 and OffsetCommit v8: the newest before KIP-848's member
/// epochs and multi-group fetches, which every ZooKeeper-era broker speaks.
const OFFSET_FETCH_VERSION: i16 = 7;
const OFFSET_COMMIT_VERSION: i16 = 8;
const IO_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RESPONSE_BYTES: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum CoordinatorClientError {
    /// The coordinator could not be reached or did not answer.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The coordinator answered with this Kafka error code.
    #[error("the group coordinator answered Kafka error {0}")]
    Kafka(i16),
    /// The answer leaves the asked partition out.
    #[error("the group coordinator's answer does not name {0}")]
    Missing(TopicPartition),
}

impl CoordinatorClientError {
    /// The code a consumer acts on: an unreachable coordinator is
    /// COORDINATOR_NOT_AVAILABLE (find it again), as the Java consumer
    /// marks it after a disconnection.
    pub fn code(&self) -> i16 {
        match self {
            CoordinatorClientError::Client(_) => ResponseError::CoordinatorNotAvailable.code(),
            CoordinatorClientError::Kafka(code) => *code,
            CoordinatorClientError::Missing(_) => ResponseError::UnknownServerError.code(),
        }
    }
}

pub struct CoordinatorClient {
    client_id: String,
    /// How brokers reach each other.
    security: std::sync::Arc<super::inter_broker::InterBrokerSecurity>,
    connection: tokio::sync::Mutex<Option<BrokerClient>>,
}

impl CoordinatorClient {
    pub fn new(
        client_id: String,
        security: std::sync::Arc<super::inter_broker::InterBrokerSecurity>,
    ) -> CoordinatorClient {
        CoordinatorClient {
            client_id,
            security,
            connection: tokio::sync::Mutex::new(None),
        }
    }

    /// `group`'s committed offset for `tp` at `coordinator`; `None` when
    /// nothing is committed.
    pub async fn fetch_offset(
        &self,
        coordinator: &BrokerEndpoint,
        group: &str,
        tp: &TopicPartition,
    ) -> Result<Option<i64>, CoordinatorClientError> {
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(topic_name(tp))
                .with_partition_indexes(vec![tp.partition])]));
        let response: OffsetFetchResponse = self
            .call(coordinator, ApiKey::OffsetFetch, OFFSET_FETCH_VERSION, &request)
            .await?;
        if response.error_code != 0 {
            return Err(CoordinatorClientError::Kafka(response.error_code));
        }
        let partition = response
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == tp.topic)
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == tp.partition)
            .ok_or_else(|| CoordinatorClientError::Missing(tp.clone()))?;
        if partition.error_code != 0 {
            return Err(CoordinatorClientError::Kafka(partition.error_code));
        }
        Ok((partition.committed_offset >= 0).then_some(partition.committed_offset))
    }

    /// Commit `offset` for `tp` as `group` at `coordinator`, outside any
    /// generation (a standalone commit: generation -1, no member), as a
    /// consumer with manual assignment commits.
    pub async fn commit_offset(
        &self,
        coordinator: &BrokerEndpoint,
        group: &str,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<(), CoordinatorClientError> {
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(topic_name(tp))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(tp.partition)
                    .with_committed_offset(offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(StrBytes::from_static_str("")))])]);
        let response: OffsetCommitResponse = self
            .call(coordinator, ApiKey::OffsetCommit, OFFSET_COMMIT_VERSION, &request)
            .await?;
        let code = response
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == tp.topic)
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == tp.partition)
            .map(|p| p.error_code)
            .ok_or_else(|| CoordinatorClientError::Missing(tp.clone()))?;
        match code {
            0 => Ok(()),
            code => Err(CoordinatorClientError::Kafka(code)),
        }
    }

    async fn call<Req, Resp>(
        &self,
        coordinator: &BrokerEndpoint,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, CoordinatorClientError>
    where
        Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
        Resp: kafka_protocol::protocol::Decodable,
    {
        let address = format!("{}:{}", coordinator.host, coordinator.port);
        let mut connection = self.connection.lock().await;
        let client = match connection.as_mut() {
            Some(client) => {
                client.set_address(address);
                client
            }
            None => connection.insert(BrokerClient::new(
                address,
                self.client_id.clone(),
                IO_TIMEOUT,
                MAX_RESPONSE_BYTES,
                self.security.clone(),
            )),
        };
        Ok(client.call(api, version, request).await?)
    }
}

fn topic_name(tp: &TopicPartition) -> TopicName {
    TopicName(StrBytes::from_string(tp.topic.clone()))
}
