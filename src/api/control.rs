//! LeaderAndIsr (key 4, v5), StopReplica (key 5, v3) and UpdateMetadata
//! (key 6, v7): what the active controller tells every broker, Kafka's
//! ZooKeeper-era inter-broker APIs. Each goes to this broker's replica
//! manager (`actors/replica_manager.rs`), which fences it by controller and
//! broker epoch and applies it; this module only turns a failure into the
//! response's error code.
//! ControlledShutdown (key 7, v0-3) goes the other way: a stopping broker
//! asks the active controller to move its leaderships away.
//! All four need CLUSTER_ACTION on the cluster, as in Kafka: anyone else
//! gets CLUSTER_AUTHORIZATION_FAILED and nothing is applied.

use kafka_protocol::messages::controlled_shutdown_response::RemainingPartition;
use kafka_protocol::messages::{
    ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsrRequest,
    LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse, TopicName,
    UpdateMetadataRequest, UpdateMetadataResponse,
};
use kafka_protocol::protocol::StrBytes;

use kafka_protocol::error::ResponseError;

use super::BrokerContext;
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::controller::{ControlledShutdown, ControllerError};
use crate::actors::replica_manager::{ApplyLeaderAndIsr, ApplyStopReplica, ApplyUpdateMetadata};

/// CLUSTER_AUTHORIZATION_FAILED unless the session may CLUSTER_ACTION.
fn refused(ctx: &BrokerContext, session: &Session) -> Option<i16> {
    (!ctx.authorize_cluster(session, AclOperation::ClusterAction))
        .then(|| ResponseError::ClusterAuthorizationFailed.code())
}

fn failed(error: ControllerError) -> i16 {
    log::warn!("a control request failed: {error}");
    error.code()
}

pub async fn leader_and_isr(
    ctx: &BrokerContext,
    session: &Session,
    request: LeaderAndIsrRequest,
) -> LeaderAndIsrResponse {
    if let Some(code) = refused(ctx, session) {
        return LeaderAndIsrResponse::default().with_error_code(code);
    }
    match ctx.replica_manager.send(ApplyLeaderAndIsr(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => LeaderAndIsrResponse::default().with_error_code(failed(e)),
        Err(_) => LeaderAndIsrResponse::default().with_error_code(failed(ControllerError::Stopped)),
    }
}

pub async fn update_metadata(
    ctx: &BrokerContext,
    session: &Session,
    request: UpdateMetadataRequest,
) -> UpdateMetadataResponse {
    if let Some(code) = refused(ctx, session) {
        return UpdateMetadataResponse::default().with_error_code(code);
    }
    match ctx.replica_manager.send(ApplyUpdateMetadata(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => UpdateMetadataResponse::default().with_error_code(failed(e)),
        Err(_) => UpdateMetadataResponse::default().with_error_code(failed(ControllerError::Stopped)),
    }
}

pub async fn stop_replica(
    ctx: &BrokerContext,
    session: &Session,
    request: StopReplicaRequest,
) -> StopReplicaResponse {
    if let Some(code) = refused(ctx, session) {
        return StopReplicaResponse::default().with_error_code(code);
    }
    match ctx.replica_manager.send(ApplyStopReplica(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => StopReplicaResponse::default().with_error_code(failed(e)),
        Err(_) => StopReplicaResponse::default().with_error_code(failed(ControllerError::Stopped)),
    }
}

pub async fn controlled_shutdown(
    ctx: &BrokerContext,
    session: &Session,
    request: ControlledShutdownRequest,
    version: i16,
) -> ControlledShutdownResponse {
    if let Some(code) = refused(ctx, session) {
        return ControlledShutdownResponse::default().with_error_code(code);
    }
    let ask = ControlledShutdown {
        broker_id: request.broker_id.0,
        broker_epoch: if version >= 2 {
            request.broker_epoch
        } else {
            -1
        },
    };
    match ctx.controller.send(ask).await {
        Ok(Ok(remaining)) => ControlledShutdownResponse::default().with_remaining_partitions(
            remaining
                .into_iter()
                .map(|tp| {
                    RemainingPartition::default()
                        .with_topic_name(TopicName(StrBytes::from_string(tp.topic)))
                        .with_partition_index(tp.partition)
                })
                .collect(),
        ),
        Ok(Err(e)) => ControlledShutdownResponse::default().with_error_code(failed(e)),
        Err(_) => {
            ControlledShutdownResponse::default().with_error_code(failed(ControllerError::Stopped))
        }
    }
}
