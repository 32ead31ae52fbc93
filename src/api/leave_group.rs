//! LeaveGroup (key 13), v0-4: one member (v0-2) or a batch of members,
//! possibly named by group instance id (v3+), leave.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::{ask_group, authorize_group, require_group_id, BrokerContext};
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::consumer_group::LeaveGroup;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: LeaveGroupRequest,
    version: i16,
) -> LeaveGroupResponse {
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let count = members.len();
    let allowed = authorize_group(ctx, session, AclOperation::Read, &request.group_id.0)
        .and_then(|()| require_group_id(&request.group_id.0));
    let outcome = match allowed {
        Ok(()) => ask_group(ctx, &request.group_id.0, LeaveGroup { members }, false).await,
        Err(e) => Err(e),
    };
    let codes = match outcome {
        Ok(Some(codes)) => Ok(codes),
        // An unknown group: v3+ answer per member, as Kafka does.
        Ok(None) if version >= 3 => Ok(vec![ResponseError::UnknownMemberId.code(); count]),
        Ok(None) => Err(ResponseError::UnknownMemberId.code()),
        Err(e) => Err(e.code()),
    };
    match codes {
        Err(code) => LeaveGroupResponse::default().with_error_code(code),
        Ok(codes) if version < 3 => {
            LeaveGroupResponse::default().with_error_code(codes.first().copied().unwrap_or(0))
        }
        Ok(codes) => LeaveGroupResponse::default().with_members(
            request
                .members
                .into_iter()
                .zip(codes)
                .map(|(m, code)| {
                    MemberResponse::default()
                        .with_member_id(m.member_id)
                        .with_group_instance_id(m.group_instance_id)
                        .with_error_code(code)
                })
                .collect(),
        ),
    }
}
