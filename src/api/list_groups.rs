//! ListGroups (key 16), v0-4: the groups this broker coordinates, filtered
//! by state (v4).

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::actors::group_coordinator::ListGroups;

pub async fn handle(ctx: &BrokerContext, request: ListGroupsRequest) -> ListGroupsResponse {
    let groups = ctx.groups.send(ListGroups).await.unwrap_or_default();
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_string())
        .collect();
    ListGroupsResponse::default().with_groups(
        groups
            .into_iter()
            .filter(|(_, _, state)| {
                states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state))
            })
            .map(|(id, protocol_type, state)| {
                ListedGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(id)))
                    .with_protocol_type(StrBytes::from_string(protocol_type))
                    .with_group_state(StrBytes::from_string(state))
                    .with_group_type(StrBytes::from_static_str("classic"))
            })
            .collect(),
    )
}
