//! InitProducerId (key 22), v0-4: a new producer id, epoch 0, for an
//! idempotent producer (from the blocks `producer_ids` claims). A
//! transactional id asks for the transaction coordinator, which does not
//! exist yet: UNSUPPORTED_VERSION, so transactional clients fail at once
//! with an error instead of retrying.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let refused = |error: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(error.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if request
        .transactional_id
        .as_ref()
        .is_some_and(|id| !id.is_empty())
    {
        log::info!(
            "InitProducerId for transactional id {:?} refused: transactions are not supported yet",
            request.transactional_id
        );
        return refused(ResponseError::UnsupportedVersion);
    }
    // An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or
    // WRITE on some topic (KIP-679, Kafka 3.x).
    let idempotent_allowed = ctx.authorize_cluster(session, AclOperation::IdempotentWrite)
        || ctx.authorizer.as_ref().is_none_or(|a| {
            a.authorize_by_resource_type(session, AclOperation::Write, ResourceType::Topic)
        });
    if !idempotent_allowed {
        return refused(ResponseError::ClusterAuthorizationFailed);
    }
    match ctx.producer_ids.generate().await {
        Ok(id) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(e) => {
            log::warn!("InitProducerId: no producer id: {e}");
            refused(ResponseError::CoordinatorNotAvailable)
        }
    }
}
