//! The Kafka APIs, one file per API. `handle` takes a decoded request and
//! produces the encoded response by asking the actors that own the data:
//! partition actors for records, the controller for topics, the metadata
//! cache for cluster metadata.
//!
//! Handlers never touch files or the metadata store directly, and never
//! panic on client input: a bad request gets Kafka's error code.

pub mod api_versions;
pub mod configs;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_groups;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod produce;
pub mod sync_group;

use std::sync::Arc;

use actix::Addr;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Encodable, HeaderVersion};

use crate::actors::consumer_group::{GroupCommand, GroupReply};
use crate::actors::controller::Controller;
use crate::actors::group_coordinator::{ForGroup, GroupCoordinator};
use crate::actors::log::{LogActor, LogActorError};
use crate::actors::partition::{PartitionHandle, PartitionRegistry};
use crate::cluster::MetadataCache;
use crate::config::BrokerConfig;
use crate::protocol::{encode_response, ProtocolError, Request, RequestFrame, ResponseFrame};
use crate::storage::batch::BatchError;
use crate::storage::{FileRegion, LogError};
use crate::topic_partition::TopicPartition;

/// Everything a request handler may reach.
pub struct BrokerContext {
    pub config: BrokerConfig,
    pub broker_id: i32,
    pub log: Addr<LogActor>,
    pub controller: Addr<Controller>,
    pub groups: Addr<GroupCoordinator>,
    pub partitions: PartitionRegistry,
    pub metadata: MetadataCache,
    pub clock: crate::clock::SharedClock,
}

impl BrokerContext {
    pub fn partition(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        self.partitions.get(tp)
    }
}

/// Send `command` to the group's actor through the coordinator. `Ok(None)`:
/// the group does not exist (and `create` was false).
pub async fn ask_group(
    ctx: &BrokerContext,
    group_id: &str,
    command: GroupCommand,
    create: bool,
) -> Result<Option<GroupReply>, i16> {
    if group_id.is_empty() {
        return Err(ResponseError::InvalidGroupId.code());
    }
    ctx.groups
        .send(ForGroup {
            group_id: group_id.to_string(),
            command,
            create,
        })
        .await
        .unwrap_or(Err(ResponseError::CoordinatorNotAvailable.code()))
}

/// Answer one request. `Ok(None)` means no response is due (produce with
/// acks=0).
pub async fn handle(
    ctx: &Arc<BrokerContext>,
    frame: RequestFrame,
) -> Result<Option<ResponseFrame>, ProtocolError> {
    let api = frame.api;
    let version = frame.version();
    let correlation_id = frame.correlation_id();
    let client_id = frame
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let respond = |response: &dyn ErasedResponse, regions: Vec<FileRegion>| {
        response.encode_frame(api, version, correlation_id, regions)
    };
    match frame.body {
        Request::ApiVersions(_) => respond(&api_versions::handle(version), Vec::new()).map(Some),
        Request::Metadata(request) => {
            respond(&metadata::handle(ctx, *request, version).await, Vec::new()).map(Some)
        }
        Request::Produce(request) => match produce::handle(ctx, *request, version).await {
            Some(response) => respond(&response, Vec::new()).map(Some),
            None => Ok(None),
        },
        Request::Fetch(request) => {
            let (response, regions) = fetch::handle(ctx, *request, version).await;
            respond(&response, regions).map(Some)
        }
        Request::ListOffsets(request) => respond(
            &list_offsets::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::CreateTopics(request) => respond(
            &create_topics::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::DeleteTopics(request) => respond(
            &delete_topics::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::CreatePartitions(request) => {
            respond(&create_partitions::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::DescribeConfigs(request) => {
            respond(&configs::describe(ctx, *request, version), Vec::new()).map(Some)
        }
        Request::AlterConfigs(request) => {
            respond(&configs::alter(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::IncrementalAlterConfigs(request) => {
            respond(&configs::incremental_alter(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::DeleteRecords(request) => {
            respond(&delete_records::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::FindCoordinator(request) => respond(
            &find_coordinator::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::JoinGroup(request) => respond(
            &join_group::handle(ctx, *request, version, &client_id).await,
            Vec::new(),
        )
        .map(Some),
        Request::SyncGroup(request) => {
            respond(&sync_group::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::Heartbeat(request) => {
            respond(&heartbeat::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::LeaveGroup(request) => respond(
            &leave_group::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::OffsetCommit(request) => {
            let now = ctx.clock.now_ms();
            respond(&offset_commit::handle(ctx, *request, now).await, Vec::new()).map(Some)
        }
        Request::OffsetFetch(request) => respond(
            &offset_fetch::handle(ctx, *request, version).await,
            Vec::new(),
        )
        .map(Some),
        Request::OffsetDelete(request) => {
            respond(&offset_delete::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::ListGroups(request) => {
            respond(&list_groups::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::DescribeGroups(request) => {
            respond(&describe_groups::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::DeleteGroups(request) => {
            respond(&delete_groups::handle(ctx, *request).await, Vec::new()).map(Some)
        }
        Request::DescribeCluster(request) => {
            respond(&describe_cluster::handle(ctx, *request), Vec::new()).map(Some)
        }
    }
}

/// Lets `handle` encode any response type through one closure.
trait ErasedResponse {
    fn encode_frame(
        &self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        regions: Vec<FileRegion>,
    ) -> Result<ResponseFrame, ProtocolError>;
}

impl<R: Encodable + HeaderVersion> ErasedResponse for R {
    fn encode_frame(
        &self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        regions: Vec<FileRegion>,
    ) -> Result<ResponseFrame, ProtocolError> {
        encode_response(api, version, correlation_id, self, regions)
    }
}

/// The Kafka error code for a log actor error.
pub fn error_code(error: &LogActorError) -> i16 {
    match error {
        LogActorError::UnknownPartition(_) => ResponseError::UnknownTopicOrPartition.code(),
        LogActorError::PartitionOffline { .. } => ResponseError::KafkaStorageError.code(),
        LogActorError::PartitionExists(_) => ResponseError::UnknownServerError.code(),
        LogActorError::Log(e) => log_error_code(e),
        LogActorError::ShardGone(_) | LogActorError::Stopped => {
            ResponseError::KafkaStorageError.code()
        }
    }
}

fn log_error_code(error: &LogError) -> i16 {
    match error {
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange.code(),
        LogError::InvalidBatch(BatchError::TooLarge { .. }) => {
            ResponseError::MessageTooLarge.code()
        }
        LogError::InvalidBatch(BatchError::UnsupportedLegacyCompression { .. }) => {
            ResponseError::UnsupportedCompressionType.code()
        }
        LogError::InvalidBatch(_) => ResponseError::CorruptMessage.code(),
        LogError::NonMonotonicOffset { .. } => ResponseError::InvalidRequest.code(),
        LogError::Io { .. } | LogError::Corrupt { .. } | LogError::Checkpoint { .. } => {
            ResponseError::KafkaStorageError.code()
        }
    }
}
