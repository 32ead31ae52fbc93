//! DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1
//! (KIP-546), over `quota::entity`. As Kafka's `KafkaApis`: describing
//! needs DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS
//! (CLUSTER_AUTHORIZATION_FAILED otherwise).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::describe_client_quotas_response as described;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::quota::entity::{Match, QuotaEntity, QuotaOp};
use crate::security::acl::AclOperation;
use crate::security::Session;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub async fn describe(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let failed = |code: i16, message: String| {
        DescribeClientQuotasResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    if !ctx.authorize_cluster(session, AclOperation::DescribeConfigs) {
        return failed(
            ResponseError::ClusterAuthorizationFailed.code(),
            "Cluster authorization failed.".into(),
        );
    }
    let mut components = Vec::new();
    for component in &request.components {
        let matched = match (component.match_type, &component._match) {
            (0, Some(name)) => Match::Exact(name.to_string()),
            (0, None) => {
                return failed(
                    ResponseError::InvalidRequest.code(),
                    "Match must be set for an exact match".into(),
                )
            }
            (1, _) => Match::Default,
            (2, _) => Match::Any,
            (other, _) => {
                return failed(
                    ResponseError::InvalidRequest.code(),
                    format!("Unexpected match type: {other}"),
                )
            }
        };
        components.push((component.entity_type.to_string(), matched));
    }
    match ctx
        .client_quotas
        .configs
        .describe(&components, request.strict)
        .await
    {
        Ok(Ok(found)) => DescribeClientQuotasResponse::default().with_entries(Some(
            found
                .into_iter()
                .map(|(entity, values)| {
                    described::EntryData::default()
                        .with_entity(
                            entity
                                .wire()
                                .into_iter()
                                .map(|(entity_type, name)| {
                                    described::EntityData::default()
                                        .with_entity_type(text(entity_type))
                                        .with_entity_name(name.map(text))
                                })
                                .collect(),
                        )
                        .with_values(
                            values
                                .into_iter()
                                .map(|(key, value)| {
                                    described::ValueData::default()
                                        .with_key(StrBytes::from_string(key))
                                        .with_value(value)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )),
        Ok(Err((code, message))) => failed(code, message),
        Err(e) => {
            log::warn!("DescribeClientQuotas: {e}");
            failed(ResponseError::UnknownServerError.code(), e.to_string())
        }
    }
}

pub async fn alter(
    ctx: &BrokerContext,
    session: &Session,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let allowed = ctx.authorize_cluster(session, AclOperation::AlterConfigs);
    let mut entries = Vec::new();
    for entry in request.entries {
        let wire: Vec<(String, Option<String>)> = entry
            .entity
            .iter()
            .map(|e| {
                (
                    e.entity_type.to_string(),
                    e.entity_name.as_ref().map(|n| n.to_string()),
                )
            })
            .collect();
        let outcome = if !allowed {
            Err((
                ResponseError::ClusterAuthorizationFailed.code(),
                "Cluster authorization failed.".to_string(),
            ))
        } else {
            match QuotaEntity::from_wire(&wire) {
                Err(e) => Err(e),
                Ok(entity) => {
                    let ops: Vec<QuotaOp> = entry
                        .ops
                        .iter()
                        .map(|op| QuotaOp {
                            key: op.key.to_string(),
                            value: (!op.remove).then_some(op.value),
                        })
                        .collect();
                    let altered = ctx
                        .client_quotas
                        .configs
                        .alter(&entity, &ops, request.validate_only)
                        .await;
                    if altered.is_ok() && !request.validate_only {
                        log::info!("{} altered the client quotas of {entity:?}", session.principal);
                    }
                    altered
                }
            }
        };
        let (code, message) = match outcome {
            Ok(()) => (0, None),
            Err((code, message)) => (code, Some(StrBytes::from_string(message))),
        };
        entries.push(
            EntryData::default()
                .with_error_code(code)
                .with_error_message(message)
                .with_entity(
                    entry
                        .entity
                        .into_iter()
                        .map(|e| {
                            EntityData::default()
                                .with_entity_type(e.entity_type)
                                .with_entity_name(e.entity_name)
                        })
                        .collect(),
                ),
        );
    }
    AlterClientQuotasResponse::default().with_entries(entries)
}
