//! The Kafka APIs, one file per API. `handle` takes a decoded request and
//! produces the encoded response by asking the actors that own the data:
//! partition actors for records, the controller for topics, the metadata
//! cache for cluster metadata.
//!
//! Handlers never touch files or the metadata store directly, and never
//! panic on client input: a bad request gets Kafka's error code.

pub mod acls;
pub mod api_versions;
pub mod authorized_operations;
pub mod client_quotas;
pub mod configs;
pub mod control;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_log_dirs;
pub mod describe_groups;
pub mod elect_leaders;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod scram_credentials;
pub mod sync_group;
pub mod throttling;
pub mod zookeeper_offsets;

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Encodable, HeaderVersion};

pub use crate::broker_context::BrokerContext;

use crate::actors::consumer_group::ConsumerGroup;
use crate::actors::group_coordinator::ForGroup;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::protocol::{encode_response, ProtocolError, Request, RequestFrame, ResponseFrame};
use crate::metrics::RequestTime;
use crate::storage::FileRegion;

/// Kafka's `isValidGroupId`: the group-membership APIs (JoinGroup,
/// SyncGroup, Heartbeat, LeaveGroup, OffsetDelete) need a non-empty group
/// id; OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept
/// "" for backwards compatibility.
pub fn require_group_id(group_id: &str) -> Result<(), ResponseError> {
    if group_id.is_empty() {
        Err(ResponseError::InvalidGroupId)
    } else {
        Ok(())
    }
}

/// GROUP_AUTHORIZATION_FAILED unless the session may do `operation` on
/// the group (checked before the group id, as in Kafka).
pub fn authorize_group(
    ctx: &BrokerContext,
    session: &Session,
    operation: AclOperation,
    group_id: &str,
) -> Result<(), ResponseError> {
    if ctx.authorize(session, operation, ResourceType::Group, group_id) {
        Ok(())
    } else {
        Err(ResponseError::GroupAuthorizationFailed)
    }
}

/// Send `request` to the group's actor through the coordinator. `Ok(None)`:
/// the group does not exist (and `create` was false); `Err`: the
/// group-level error the response carries.
pub async fn ask_group<M, T>(
    ctx: &BrokerContext,
    group_id: &str,
    request: M,
    create: bool,
) -> Result<Option<T>, ResponseError>
where
    M: actix::Message<Result = Result<T, ResponseError>> + Send + 'static,
    T: Send + 'static,
    ConsumerGroup: actix::Handler<M>,
{
    // A fresh sender is never parked: the request is enqueued at once.
    ctx.groups
        .clone()
        .send(ForGroup {
            group_id: group_id.to_string(),
            request,
            create,
        })
        .await
        .unwrap_or(Err(ResponseError::CoordinatorNotAvailable))
}

/// Where a request came from, as its handler may need it.
pub struct RequestOrigin {
    /// The client's address (DescribeGroups shows it as `client_host`).
    pub peer: std::net::SocketAddr,
    /// Who the connection authenticated as, for the authorizer.
    pub session: Arc<Session>,
    /// A produce request's place in its connection's line.
    pub produce_turn: Option<produce::ProduceTurn>,
    /// The connection's mute, set when a quota delays the client.
    pub mute: Arc<crate::quota::ChannelMute>,
    /// The listener the client connected to: Metadata, FindCoordinator
    /// and DescribeCluster answer with that listener's endpoints.
    pub listener: Arc<str>,
    /// When the request's frame was read (RequestMetrics' times start).
    pub received: std::time::Instant,
}

/// The names Kafka's RequestMetrics counts a request under: its API, and a
/// Fetch also as FetchConsumer or FetchFollower.
#[derive(Debug, Clone, Copy)]
pub struct RequestNames {
    pub api: ApiKey,
    pub fetch: Option<(i16, &'static str)>,
}

impl RequestNames {
    pub fn of(request: &RequestFrame) -> RequestNames {
        let fetch = match &request.body {
            Request::Fetch(f) if f.replica_id.0.max(f.replica_state.replica_id.0) >= 0 => {
                Some((crate::metrics::FETCH_FOLLOWER_KEY, "FetchFollower"))
            }
            Request::Fetch(_) => Some((crate::metrics::FETCH_CONSUMER_KEY, "FetchConsumer")),
            _ => None,
        };
        RequestNames {
            api: request.api,
            fetch,
        }
    }

    /// Calls `f` with each name.
    pub fn each(&self, mut f: impl FnMut(&crate::metrics::RequestName<'_>)) {
        let api = self.api;
        let name = || format!("{api:?}");
        f(&crate::metrics::RequestName {
            key: api as i16,
            name: &name,
        });
        if let Some((key, kind)) = self.fetch {
            let name = || kind.to_string();
            f(&crate::metrics::RequestName { key, name: &name });
        }
    }
}

/// Answer one request. `Ok(None)` means no response is due (produce with
/// acks=0).
pub async fn handle(
    ctx: &Arc<BrokerContext>,
    frame: RequestFrame,
    origin: RequestOrigin,
) -> Result<Option<ResponseFrame>, ProtocolError> {
    let api = frame.api;
    let session = origin.session.clone();
    let session = session.as_ref();
    let version = frame.version();
    let correlation_id = frame.correlation_id();
    let client_id = frame
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let mute = origin.mute.clone();
    let throttling = throttling::Throttling {
        ctx,
        session,
        client_id: &client_id,
        mute: &mute,
        started: std::time::Instant::now(),
    };
    // Inter-broker requests and the SASL exchange are exempt, as in Kafka.
    let exempt = matches!(
        frame.body,
        Request::LeaderAndIsr(_)
            | Request::StopReplica(_)
            | Request::UpdateMetadata(_)
            | Request::ControlledShutdown(_)
            | Request::SaslHandshake(_)
            | Request::SaslAuthenticate(_)
            | Request::ApiVersions(_)
    );
    let counted = !matches!(frame.body, Request::Produce(_) | Request::Fetch(_)) && !exempt;
    let names = RequestNames::of(&frame);
    let requests = &ctx.metrics.requests;
    let queued = throttling.started.saturating_duration_since(origin.received);
    names.each(|name| {
        requests.count(name, version);
        requests.time(name, RequestTime::RequestQueue, queued);
    });
    let answer = answer(ctx, frame.body, origin, &throttling, api, version, correlation_id).await;
    if counted {
        throttling.other();
    }
    let local = throttling.started.elapsed();
    names.each(|name| requests.time(name, RequestTime::Local, local));
    answer
}

async fn answer(
    ctx: &Arc<BrokerContext>,
    body: Request,
    origin: RequestOrigin,
    throttling: &throttling::Throttling<'_>,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<Option<ResponseFrame>, ProtocolError> {
    let (session, client_id) = (throttling.session, throttling.client_id);
    let respond = |response: &dyn ErasedResponse, regions: Vec<FileRegion>| {
        response
            .encode_frame(api, version, correlation_id, regions)
            .map(Some)
    };
    // Most APIs answer with a plain response and no file regions.
    macro_rules! reply {
        ($response:expr) => {
            respond(&$response, Vec::new())
        };
    }
    match body {
        Request::ApiVersions(_) => reply!(api_versions::handle(version)),
        Request::Metadata(r) => {
            reply!(metadata::handle(ctx, session, *r, version, &origin.listener).await)
        }
        Request::Produce(r) => {
            let request_bytes = throttling::produce_bytes(&r);
            let outcome = produce::handle(ctx, session, *r, version, origin.produce_turn).await;
            let throttle_time_ms = throttling.produce(request_bytes);
            match outcome {
            produce::ProduceOutcome::Respond(mut response) => {
                response.throttle_time_ms = throttle_time_ms;
                // A lost acknowledgement: the records are written, the client
                // never hears so and retries (tests of idempotence).
                fail::fail_point!("produce.lose_response", |_| Err(
                    ProtocolError::FailedWithoutResponse("fail point produce.lose_response".into())
                ));
                reply!(response)
            }
            produce::ProduceOutcome::NoResponse => Ok(None),
            produce::ProduceOutcome::CloseConnection(reason) => {
                Err(ProtocolError::FailedWithoutResponse(reason))
            }
            }
        }
        Request::Fetch(mut r) => {
            let follower = r.replica_id.0.max(r.replica_state.replica_id.0) >= 0;
            if !follower {
                if let Some(cap) = throttling.fetch_max_bytes() {
                    r.max_bytes = r.max_bytes.min(cap);
                }
            }
            let (response, regions) = fetch::handle(ctx, session, *r, version).await;
            // Followers are under replication quotas, not client quotas.
            let (response, regions) = if follower {
                (response, regions)
            } else {
                throttling.fetch(response, regions)
            };
            respond(&response, regions)
        }
        Request::ListOffsets(r) => reply!(list_offsets::handle(ctx, session, *r, version).await),
        Request::OffsetForLeaderEpoch(r) => {
            reply!(offset_for_leader_epoch::handle(ctx, session, *r, version).await)
        }
        Request::CreateTopics(r) => reply!(create_topics::handle(ctx, session, *r, version).await),
        Request::DeleteTopics(r) => reply!(delete_topics::handle(ctx, session, *r, version).await),
        Request::CreatePartitions(r) => reply!(create_partitions::handle(ctx, session, *r).await),
        Request::DescribeConfigs(r) => reply!(configs::describe(ctx, session, *r, version)),
        Request::AlterConfigs(r) => reply!(configs::alter(ctx, session, *r).await),
        Request::IncrementalAlterConfigs(r) => reply!(configs::incremental_alter(ctx, session, *r).await),
        Request::DeleteRecords(r) => reply!(delete_records::handle(ctx, session, *r).await),
        Request::FindCoordinator(r) => {
            reply!(find_coordinator::handle(ctx, session, *r, version, &origin.listener).await)
        }
        Request::JoinGroup(r) => {
            reply!(join_group::handle(ctx, session, *r, version, client_id, origin.peer).await)
        }
        Request::SyncGroup(r) => reply!(sync_group::handle(ctx, session, *r).await),
        Request::Heartbeat(r) => reply!(heartbeat::handle(ctx, session, *r).await),
        Request::LeaveGroup(r) => reply!(leave_group::handle(ctx, session, *r, version).await),
        // Kafka on ZooKeeper keeps v0 commits in /consumers (0.8.2's way).
        Request::OffsetCommit(r) if version == 0 && ctx.config.zookeeper_connect.is_some() => {
            reply!(zookeeper_offsets::commit(ctx, session, *r).await)
        }
        Request::OffsetCommit(r) => {
            reply!(offset_commit::handle(ctx, session, *r, ctx.clock.now_ms()).await)
        }
        Request::OffsetFetch(r) if version == 0 && ctx.config.zookeeper_connect.is_some() => {
            reply!(zookeeper_offsets::fetch(ctx, session, *r).await)
        }
        Request::OffsetFetch(r) => reply!(offset_fetch::handle(ctx, session, *r, version).await),
        Request::OffsetDelete(r) => reply!(offset_delete::handle(ctx, session, *r).await),
        Request::ListGroups(r) => reply!(list_groups::handle(ctx, session, *r).await),
        Request::DescribeGroups(r) => reply!(describe_groups::handle(ctx, session, *r).await),
        Request::DeleteGroups(r) => reply!(delete_groups::handle(ctx, session, *r).await),
        Request::DescribeCluster(r) => {
            reply!(describe_cluster::handle(ctx, session, *r, &origin.listener))
        }
        Request::DescribeLogDirs(r) => reply!(describe_log_dirs::handle(ctx, session, *r).await),
        Request::InitProducerId(r) => reply!(init_producer_id::handle(ctx, session, *r).await),
        Request::ElectLeaders(r) => reply!(elect_leaders::handle(ctx, session, *r, version).await),
        Request::LeaderAndIsr(r) => reply!(control::leader_and_isr(ctx, session, *r).await),
        Request::StopReplica(r) => reply!(control::stop_replica(ctx, session, *r).await),
        Request::UpdateMetadata(r) => reply!(control::update_metadata(ctx, session, *r).await),
        Request::ControlledShutdown(r) => {
            reply!(control::controlled_shutdown(ctx, session, *r, version).await)
        }
        Request::DescribeAcls(r) => reply!(acls::describe(ctx, session, *r)),
        Request::CreateAcls(r) => reply!(acls::create(ctx, session, *r).await),
        Request::DeleteAcls(r) => reply!(acls::delete(ctx, session, *r).await),
        Request::DescribeUserScramCredentials(r) => {
            reply!(scram_credentials::describe(ctx, session, *r).await)
        }
        Request::AlterUserScramCredentials(r) => {
            reply!(scram_credentials::alter(ctx, session, *r).await)
        }
        Request::DescribeClientQuotas(r) => reply!(client_quotas::describe(ctx, session, *r).await),
        Request::AlterClientQuotas(r) => reply!(client_quotas::alter(ctx, session, *r).await),
        // The connection runs the SASL exchange itself on SASL listeners;
        // here one is out of place (a PLAINTEXT listener, or after
        // authentication), as Kafka answers it.
        Request::SaslHandshake(_) => reply!(kafka_protocol::messages::SaslHandshakeResponse::default()
            .with_error_code(ResponseError::IllegalSaslState.code())),
        Request::SaslAuthenticate(_) => {
            reply!(kafka_protocol::messages::SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::IllegalSaslState.code())
                .with_error_message(Some(kafka_protocol::protocol::StrBytes::from_static_str(
                    "SaslAuthenticate is not expected on this connection now",
                ))))
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

