//! Heartbeat (key 12), v0-4: a member is alive; the answer says whether a
//! rebalance is under way.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::{ask_group, authorize_group, require_group_id, BrokerContext};
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::consumer_group::Heartbeat;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let command = Heartbeat {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        generation_id: request.generation_id,
    };
    if let Err(e) = authorize_group(ctx, session, AclOperation::Read, &request.group_id.0)
        .and_then(|()| require_group_id(&request.group_id.0))
    {
        return HeartbeatResponse::default().with_error_code(e.code());
    }
    let code = match ask_group(ctx, &request.group_id.0, command, false).await {
        Ok(Some(code)) => code,
        Ok(None) => ResponseError::UnknownMemberId.code(),
        Err(e) => e.code(),
    };
    HeartbeatResponse::default().with_error_code(code)
}
