//! ListGroups (key 16), v0-5: the groups this broker coordinates, filtered
//! by state (v4) and by type (v5, KIP-848). Every group here is a
//! "classic" group, so a type filter without "classic" (case-insensitive,
//! as Kafka parses it) lists none.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::group_coordinator::ListGroups;

/// The only group type this broker runs (Kafka's `GroupType.CLASSIC`).
const CLASSIC: &str = "classic";

/// Every group to a principal that may DESCRIBE the cluster, else only
/// the groups it may DESCRIBE (Kafka's `handleListGroupsRequest`).
pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let all_groups = ctx.authorize_cluster(session, AclOperation::Describe);
    let groups = ctx.groups.send(ListGroups).await.unwrap_or_default();
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_string())
        .collect();
    let classic_wanted = request.types_filter.is_empty()
        || request
            .types_filter
            .iter()
            .any(|t| t.eq_ignore_ascii_case(CLASSIC));
    ListGroupsResponse::default().with_groups(
        groups
            .into_iter()
            .filter(|_| classic_wanted)
            .filter(|(id, _, _)| {
                all_groups || ctx.authorize(session, AclOperation::Describe, ResourceType::Group, id)
            })
            .filter(|(_, _, state)| {
                states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state))
            })
            .map(|(id, protocol_type, state)| {
                ListedGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(id)))
                    .with_protocol_type(StrBytes::from_string(protocol_type))
                    .with_group_state(StrBytes::from_string(state))
                    .with_group_type(StrBytes::from_static_str(CLASSIC))
            })
            .collect(),
    )
}
