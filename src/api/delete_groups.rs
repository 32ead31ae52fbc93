//! DeleteGroups (key 42), v0-2: delete Empty groups and their offsets
//! (NON_EMPTY_GROUP for groups with members, GROUP_ID_NOT_FOUND for unknown).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::{ask_group, authorize_group, BrokerContext};
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::consumer_group::DeleteGroup;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        if let Err(e) = authorize_group(ctx, session, AclOperation::Delete, &group_id.0) {
            results.push(
                DeletableGroupResult::default()
                    .with_group_id(group_id)
                    .with_error_code(e.code()),
            );
            continue;
        }
        let code = match ask_group(ctx, &group_id.0, DeleteGroup, false).await {
            Ok(Some(code)) => code,
            Ok(None) => ResponseError::GroupIdNotFound.code(),
            Err(e) => e.code(),
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(code),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
