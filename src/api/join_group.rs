//! JoinGroup (key 11), v0-7: join or rejoin a consumer group. The answer
//! comes when the group's rebalance completes (the group actor parks it).

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::{ask_group, authorize_group, require_group_id, BrokerContext};
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::consumer_group::JoinGroup;
use crate::group::state::JoinRequest;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: JoinGroupRequest,
    version: i16,
    client_id: &str,
    peer: std::net::SocketAddr,
) -> JoinGroupResponse {
    let join = JoinRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: client_id.to_string(),
        // Kafka shows the member's address as `InetAddress.toString()`.
        client_host: format!("/{}", peer.ip()),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            // Copied: the group keeps it, and a slice would pin the whole
            // request frame (and its `queued.max.request.bytes` share).
            .map(|p| (p.name.to_string(), Bytes::copy_from_slice(&p.metadata)))
            .collect(),
        require_known_member_id: version >= 4,
    };
    let member_id = request.member_id.clone();
    let error = |code: i16| {
        JoinGroupResponse::default()
            .with_error_code(code)
            .with_generation_id(-1)
            .with_member_id(member_id.clone())
    };
    if let Err(e) = authorize_group(ctx, session, AclOperation::Read, &request.group_id.0)
        .and_then(|()| require_group_id(&request.group_id.0))
    {
        return error(e.code());
    }
    match ask_group(ctx, &request.group_id.0, JoinGroup(join), true).await {
        Ok(Some(r)) => JoinGroupResponse::default()
            .with_error_code(r.error_code())
            .with_generation_id(r.generation_id)
            .with_protocol_type(r.protocol_type.map(StrBytes::from_string))
            // Not nullable before v7: Kafka sends "" there.
            .with_protocol_name(
                r.protocol_name
                    .map(StrBytes::from_string)
                    .or_else(|| (version < 7).then(StrBytes::default)),
            )
            .with_leader(StrBytes::from_string(r.leader))
            .with_skip_assignment(r.skip_assignment)
            .with_member_id(StrBytes::from_string(r.member_id))
            .with_members(
                r.members
                    .into_iter()
                    .map(|m| {
                        JoinGroupResponseMember::default()
                            .with_member_id(StrBytes::from_string(m.member_id))
                            .with_group_instance_id(m.group_instance_id.map(StrBytes::from_string))
                            .with_metadata(m.metadata)
                    })
                    .collect(),
            ),
        Ok(None) => error(kafka_protocol::error::ResponseError::CoordinatorNotAvailable.code()),
        Err(e) => error(e.code()),
    }
}
