//! SyncGroup (key 14), v0-5: the leader hands out the assignment; every
//! member receives its own.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::{ask_group, authorize_group, require_group_id, BrokerContext};
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::consumer_group::SyncGroup;
use crate::group::state::SyncRequest;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: SyncGroupRequest,
) -> SyncGroupResponse {
    let sync = SyncRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        generation_id: request.generation_id,
        protocol_type: request.protocol_type.as_ref().map(|s| s.to_string()),
        protocol_name: request.protocol_name.as_ref().map(|s| s.to_string()),
        assignments: request
            .assignments
            .iter()
            // Copied: the group keeps it (see join_group).
            .map(|a| {
                (
                    a.member_id.to_string(),
                    Bytes::copy_from_slice(&a.assignment),
                )
            })
            .collect(),
    };
    if let Err(e) = authorize_group(ctx, session, AclOperation::Read, &request.group_id.0)
        .and_then(|()| require_group_id(&request.group_id.0))
    {
        return SyncGroupResponse::default().with_error_code(e.code());
    }
    match ask_group(ctx, &request.group_id.0, SyncGroup(sync), false).await {
        Ok(Some(r)) => SyncGroupResponse::default()
            .with_error_code(r.error_code())
            .with_protocol_type(r.protocol_type.map(StrBytes::from_string))
            .with_protocol_name(r.protocol_name.map(StrBytes::from_string))
            .with_assignment(r.assignment),
        Ok(None) => {
            SyncGroupResponse::default().with_error_code(ResponseError::UnknownMemberId.code())
        }
        Err(e) => SyncGroupResponse::default().with_error_code(e.code()),
    }
}
