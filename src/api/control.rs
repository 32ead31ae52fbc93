//! LeaderAndIsr (key 4, v5), StopReplica (key 5, v3) and UpdateMetadata
//! (key 6, v7): what the active controller tells every broker, Kafka's
//! ZooKeeper-era inter-broker APIs. Each goes to this broker's controller
//! actor, which fences it by controller and broker epoch and applies it;
//! this module only turns a failure into the response's error code.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse,
    UpdateMetadataRequest, UpdateMetadataResponse,
};

use super::BrokerContext;
use crate::actors::controller::{
    ApplyLeaderAndIsr, ApplyStopReplica, ApplyUpdateMetadata, TopicError,
};

fn failed(error: TopicError) -> i16 {
    log::warn!("a control request failed: {error}");
    match error {
        TopicError::Stopped => ResponseError::NotController.code(),
        other => other.code(),
    }
}

pub async fn leader_and_isr(
    ctx: &BrokerContext,
    request: LeaderAndIsrRequest,
) -> LeaderAndIsrResponse {
    match ctx.controller.send(ApplyLeaderAndIsr(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => LeaderAndIsrResponse::default().with_error_code(failed(e)),
        Err(_) => LeaderAndIsrResponse::default().with_error_code(failed(TopicError::Stopped)),
    }
}

pub async fn update_metadata(
    ctx: &BrokerContext,
    request: UpdateMetadataRequest,
) -> UpdateMetadataResponse {
    match ctx.controller.send(ApplyUpdateMetadata(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => UpdateMetadataResponse::default().with_error_code(failed(e)),
        Err(_) => UpdateMetadataResponse::default().with_error_code(failed(TopicError::Stopped)),
    }
}

pub async fn stop_replica(ctx: &BrokerContext, request: StopReplicaRequest) -> StopReplicaResponse {
    match ctx.controller.send(ApplyStopReplica(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => StopReplicaResponse::default().with_error_code(failed(e)),
        Err(_) => StopReplicaResponse::default().with_error_code(failed(TopicError::Stopped)),
    }
}
