//! FindCoordinator (key 10), v0-4: the broker coordinating a group (the
//! leader of its `__consumer_offsets` partition). Transaction coordinators
//! do not exist yet: UNSUPPORTED_VERSION with a message, which clients
//! treat as fatal (a retriable code would have them retry until their
//! timeout); any other key type is an INVALID_REQUEST, as in Kafka.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::group_coordinator::FindGroupCoordinator;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
const NO_TRANSACTIONS: &str = "transactions are not supported by this broker yet";

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: FindCoordinatorRequest,
    version: i16,
    listener: &str,
) -> FindCoordinatorResponse {
    let keys: Vec<StrBytes> = if version >= 4 {
        request.coordinator_keys.clone()
    } else {
        vec![request.key.clone()]
    };
    let mut coordinators = Vec::with_capacity(keys.len());
    for key in keys {
        let found = if request.key_type == KEY_TYPE_TRANSACTION {
            Err(ResponseError::UnsupportedVersion)
        } else if request.key_type != KEY_TYPE_GROUP {
            Err(ResponseError::InvalidRequest)
        } else if !ctx.authorize(session, AclOperation::Describe, ResourceType::Group, &key) {
            Err(ResponseError::GroupAuthorizationFailed)
        } else {
            ctx.groups
                .send(FindGroupCoordinator {
                    group_id: key.to_string(),
                })
                .await
                .unwrap_or(Err(ResponseError::CoordinatorNotAvailable))
        };
        // The coordinator as reached on the client's listener.
        let found = found.and_then(|broker| {
            let (host, port) = broker
                .on_listener(listener)
                .ok_or(ResponseError::CoordinatorNotAvailable)?;
            Ok((broker.id, host.to_string(), port))
        });
        coordinators.push(match found {
            Ok((id, host, port)) => Coordinator::default()
                .with_key(key)
                .with_node_id(BrokerId(id))
                .with_host(StrBytes::from_string(host))
                .with_port(port as i32),
            Err(e) => Coordinator::default()
                .with_key(key)
                .with_node_id(BrokerId(-1))
                .with_port(-1)
                .with_error_code(e.code())
                .with_error_message(
                    (e == ResponseError::UnsupportedVersion)
                        .then(|| StrBytes::from_static_str(NO_TRANSACTIONS)),
                ),
        });
    }
    if version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let first = coordinators.into_iter().next().unwrap_or_default();
    FindCoordinatorResponse::default()
        .with_error_code(first.error_code)
        .with_error_message(first.error_message)
        .with_node_id(first.node_id)
        .with_host(first.host)
        .with_port(first.port)
}
