//! DescribeGroups (key 15), v0-5: state, protocol and members (with their
//! metadata and assignment once the group is Stable, as in Kafka) of each
//! named group; unknown groups are Dead. A group the principal may not
//! DESCRIBE answers GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use kafka_protocol::error::ResponseError;

use super::authorized_operations::authorized_operations;
use super::{ask_group, BrokerContext};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::consumer_group::DescribeGroup;
use crate::group::state::GroupState;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut groups = Vec::with_capacity(request.groups.len());
    for group_id in request.groups {
        if !ctx.authorize(session, AclOperation::Describe, ResourceType::Group, &group_id.0) {
            groups.push(
                DescribedGroup::default()
                    .with_group_id(group_id)
                    .with_error_code(ResponseError::GroupAuthorizationFailed.code())
                    .with_authorized_operations(i32::MIN),
            );
            continue;
        }
        let described = DescribedGroup::default()
            .with_group_id(group_id.clone())
            .with_authorized_operations(authorized_operations(
                ctx,
                session,
                ResourceType::Group,
                &group_id.0,
                request.include_authorized_operations,
            ));
        groups.push(
            match ask_group(ctx, &group_id.0, DescribeGroup, false).await {
                Ok(Some(d)) => {
                    // Kafka's `GroupMetadata.summary`: the protocol, member
                    // metadata and assignments only for a Stable group.
                    let stable = d.state == GroupState::Stable;
                    described
                        .with_group_state(StrBytes::from_static_str(d.state.name()))
                        .with_protocol_type(StrBytes::from_string(d.protocol_type))
                        .with_protocol_data(if stable {
                            StrBytes::from_string(d.protocol_name)
                        } else {
                            StrBytes::default()
                        })
                        .with_members(
                            d.members
                                .into_iter()
                                .map(|m| {
                                    let member = DescribedGroupMember::default()
                                        .with_member_id(StrBytes::from_string(m.member_id))
                                        .with_group_instance_id(
                                            m.group_instance_id.map(StrBytes::from_string),
                                        )
                                        .with_client_id(StrBytes::from_string(m.client_id))
                                        .with_client_host(StrBytes::from_string(m.client_host));
                                    if stable {
                                        member
                                            .with_member_metadata(m.subscription)
                                            .with_member_assignment(m.assignment)
                                    } else {
                                        member
                                    }
                                })
                                .collect(),
                        )
                }
                Ok(None) => described.with_group_state(StrBytes::from_static_str("Dead")),
                Err(e) => described.with_error_code(e.code()),
            },
        );
    }
    DescribeGroupsResponse::default().with_groups(groups)
}
