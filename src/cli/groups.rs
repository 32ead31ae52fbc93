//! `ferrolog groups`: list the consumer groups and describe one with its
//! lag per partition, as Kafka's `kafka-consumer-groups --bootstrap-server`
//! does.

use std::collections::BTreeMap;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{refusal, CliError, Cluster};
use super::{print, table, ConnectionArgs};

/// What `ferrolog groups` does.
#[derive(clap::Subcommand, Debug)]
pub enum GroupsAction {
    /// Every group of every broker's coordinator, with its state.
    List,
    /// A group's state, members, and per partition its committed offset,
    /// the log end offset and the lag.
    Describe {
        /// The group.
        #[arg(long)]
        group: String,
    },
    /// Move an inactive group's committed offsets on a topic: a dry run
    /// that prints the new offsets unless --execute.
    ResetOffsets {
        /// The group.
        #[arg(long)]
        group: String,
        /// The topic whose partitions move.
        #[arg(long)]
        topic: String,
        /// To each partition's first offset.
        #[arg(long, group = "target")]
        to_earliest: bool,
        /// To each partition's end.
        #[arg(long, group = "target")]
        to_latest: bool,
        /// To this offset (kept within each partition's range, as Kafka does).
        #[arg(long, group = "target")]
        to_offset: Option<i64>,
        /// To the first offset at or after this time (ms since the epoch).
        #[arg(long, group = "target")]
        to_timestamp: Option<i64>,
        /// Commit the new offsets (without it: a dry run).
        #[arg(long)]
        execute: bool,
    },
    /// Delete an inactive group and its offsets.
    Delete {
        /// The group.
        #[arg(long)]
        group: String,
    },
}

#[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct GroupListing {
    group: String,
    state: String,
    protocol_type: String,
}

#[derive(Serialize)]
struct MemberView {
    member_id: String,
    client_id: String,
    host: String,
}

#[derive(Serialize)]
struct OffsetView {
    topic: String,
    partition: i32,
    current_offset: i64,
    log_end_offset: Option<i64>,
    lag: Option<i64>,
}

#[derive(Serialize)]
struct GroupView {
    group: String,
    coordinator: i32,
    state: String,
    members: Vec<MemberView>,
    offsets: Vec<OffsetView>,
}

pub async fn run(action: GroupsAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    match action {
        GroupsAction::List => {
            let mut groups = Vec::new();
            for broker in &metadata.brokers {
                let listed: ListGroupsResponse = cluster
                    .ask(
                        broker.node_id,
                        &metadata,
                        ApiKey::ListGroups,
                        4,
                        &ListGroupsRequest::default(),
                    )
                    .await?;
                if listed.error_code != 0 {
                    return Err(refusal(
                        &format!("listing the groups of broker {}", broker.node_id.0),
                        listed.error_code,
                        None,
                    ));
                }
                groups.extend(listed.groups.into_iter().map(|g| GroupListing {
                    group: g.group_id.0.to_string(),
                    state: g.group_state.to_string(),
                    protocol_type: g.protocol_type.to_string(),
                }));
            }
            groups.sort();
            print(args.json, &groups, || {
                let rows = groups
                    .iter()
                    .map(|g| vec![g.group.clone(), g.state.clone(), g.protocol_type.clone()])
                    .collect();
                table(&["GROUP", "STATE", "PROTOCOL-TYPE"], rows)
            });
            Ok(())
        }
        GroupsAction::ResetOffsets {
            group,
            topic,
            to_earliest,
            to_latest,
            to_offset,
            to_timestamp,
            execute,
        } => {
            let target =
                match (to_earliest, to_latest, to_offset, to_timestamp) {
                    (true, _, _, _) => Target::Earliest,
                    (_, true, _, _) => Target::Latest,
                    (_, _, Some(offset), _) => Target::Offset(offset),
                    (_, _, _, Some(ms)) => Target::Timestamp(ms),
                    _ => return Err(CliError::Usage(
                        "name a target: --to-earliest, --to-latest, --to-offset or --to-timestamp"
                            .into(),
                    )),
                };
            let plan = reset_offsets(&cluster, &metadata, &group, &topic, target, execute).await?;
            print(args.json, &plan, || {
                let rows = plan
                    .iter()
                    .map(|(p, o)| vec![group.clone(), topic.clone(), p.to_string(), o.to_string()])
                    .collect();
                format!(
                    "{}{}",
                    table(&["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows),
                    if execute {
                        ""
                    } else {
                        "\n(dry run: --execute commits these)"
                    }
                )
            });
            Ok(())
        }
        GroupsAction::Delete { group } => {
            let coordinator = coordinator(&cluster, &metadata, &group).await?;
            let response: DeleteGroupsResponse = cluster
                .ask(
                    coordinator,
                    &metadata,
                    ApiKey::DeleteGroups,
                    2,
                    &DeleteGroupsRequest::default()
                        .with_groups_names(vec![GroupId(StrBytes::from_string(group.clone()))]),
                )
                .await?;
            if let Some(r) = response.results.iter().find(|r| r.error_code != 0) {
                return Err(refusal(&format!("deleting {group}"), r.error_code, None));
            }
            let done = serde_json::json!({ "deleted": group });
            print(args.json, &done, || {
                format!("Deleted consumer group {group}.")
            });
            Ok(())
        }
        GroupsAction::Describe { group } => {
            let view = describe(&cluster, &metadata, &group).await?;
            print(args.json, &view, || {
                let rows = view
                    .offsets
                    .iter()
                    .map(|o| {
                        let or_dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
                        vec![
                            view.group.clone(),
                            o.topic.clone(),
                            o.partition.to_string(),
                            o.current_offset.to_string(),
                            or_dash(o.log_end_offset),
                            or_dash(o.lag),
                        ]
                    })
                    .collect();
                format!(
                    "group {} ({}, {} members, coordinator {})\n{}",
                    view.group,
                    view.state,
                    view.members.len(),
                    view.coordinator,
                    table(
                        &[
                            "GROUP",
                            "TOPIC",
                            "PARTITION",
                            "CURRENT-OFFSET",
                            "LOG-END-OFFSET",
                            "LAG"
                        ],
                        rows
                    )
                )
            });
            Ok(())
        }
    }
}

/// Where a reset moves each partition.
#[derive(Debug, Clone, Copy)]
enum Target {
    Earliest,
    Latest,
    Offset(i64),
    Timestamp(i64),
}

/// The group's coordinator (FindCoordinator).
async fn coordinator(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    group: &str,
) -> Result<BrokerId, CliError> {
    let found: FindCoordinatorResponse = cluster
        .ask_any(
            metadata,
            ApiKey::FindCoordinator,
            3,
            &FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_string())),
        )
        .await?;
    if found.error_code != 0 {
        return Err(refusal(
            &format!("finding the coordinator of {group}"),
            found.error_code,
            found.error_message.as_deref(),
        ));
    }
    Ok(found.node_id)
}

/// Each partition of `topic` and the offset `target` names, committed for
/// `group` when `execute`. Kafka's rule: only an inactive group (Empty or
/// without members) may be reset.
async fn reset_offsets(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    group: &str,
    topic: &str,
    target: Target,
    execute: bool,
) -> Result<Vec<(i32, i64)>, CliError> {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    let coordinator = coordinator(cluster, metadata, group).await?;
    let group_id = GroupId(StrBytes::from_string(group.to_string()));
    let described: DescribeGroupsResponse = cluster
        .ask(
            coordinator,
            metadata,
            ApiKey::DescribeGroups,
            5,
            &DescribeGroupsRequest::default().with_groups(vec![group_id.clone()]),
        )
        .await?;
    if let Some(g) = described.groups.first() {
        if !matches!(g.group_state.as_str(), "Empty" | "Dead") {
            return Err(CliError::Refused(format!(
                "assignments can only be reset if the group {group} is inactive, but it is {}",
                g.group_state.as_str()
            )));
        }
    }
    let partitions: Vec<(String, i32)> = metadata
        .topics
        .iter()
        .filter(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (topic.to_string(), p.partition_index))
        })
        .collect();
    if partitions.is_empty() {
        return Err(CliError::Refused(format!("topic {topic} does not exist")));
    }
    let earliest = list_offsets(cluster, metadata, partitions.iter(), -2).await;
    let latest = list_offsets(cluster, metadata, partitions.iter(), -1).await;
    let by_time = match target {
        Target::Timestamp(ms) => Some(list_offsets(cluster, metadata, partitions.iter(), ms).await),
        _ => None,
    };
    let mut plan = Vec::new();
    for key in &partitions {
        let (Some(&low), Some(&high)) = (earliest.get(key), latest.get(key)) else {
            return Err(CliError::Unreachable(format!(
                "the leader of {}-{} did not answer ListOffsets",
                key.0, key.1
            )));
        };
        let offset = match target {
            Target::Earliest => low,
            Target::Latest => high,
            Target::Offset(offset) => offset.clamp(low, high),
            // No record at or after the time: the end, as Kafka does.
            Target::Timestamp(_) => by_time
                .as_ref()
                .and_then(|t| t.get(key).copied())
                .filter(|&o| o >= 0)
                .unwrap_or(high),
        };
        plan.push((key.1, offset));
    }
    plan.sort();
    if execute {
        let request = OffsetCommitRequest::default()
            .with_group_id(group_id)
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::default())
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(
                    plan.iter()
                        .map(|&(p, offset)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(-1)
                        })
                        .collect(),
                )]);
        let committed: OffsetCommitResponse = cluster
            .ask(coordinator, metadata, ApiKey::OffsetCommit, 8, &request)
            .await?;
        for t in &committed.topics {
            if let Some(p) = t.partitions.iter().find(|p| p.error_code != 0) {
                return Err(refusal(
                    &format!(
                        "committing {group}'s offset for {topic}-{}",
                        p.partition_index
                    ),
                    p.error_code,
                    None,
                ));
            }
        }
    }
    Ok(plan)
}

async fn describe(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    group: &str,
) -> Result<GroupView, CliError> {
    let coordinator = coordinator(cluster, metadata, group).await?;
    let group_id = GroupId(StrBytes::from_string(group.to_string()));
    let described: DescribeGroupsResponse = cluster
        .ask(
            coordinator,
            metadata,
            ApiKey::DescribeGroups,
            5,
            &DescribeGroupsRequest::default().with_groups(vec![group_id.clone()]),
        )
        .await?;
    let Some(described) = described.groups.into_iter().next() else {
        return Err(CliError::Refused(format!("{group} was not described")));
    };
    if described.error_code != 0 {
        return Err(refusal(
            &format!("describing {group}"),
            described.error_code,
            None,
        ));
    }
    if described.group_state.as_str() == "Dead" {
        return Err(CliError::Refused(format!(
            "consumer group {group} does not exist"
        )));
    }
    let fetched: OffsetFetchResponse = cluster
        .ask(
            coordinator,
            metadata,
            ApiKey::OffsetFetch,
            7,
            &OffsetFetchRequest::default()
                .with_group_id(group_id)
                .with_topics(None),
        )
        .await?;
    if fetched.error_code != 0 {
        return Err(refusal(
            &format!("fetching {group}'s offsets"),
            fetched.error_code,
            None,
        ));
    }
    let mut committed: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for topic in &fetched.topics {
        for p in topic.partitions.iter().filter(|p| p.committed_offset >= 0) {
            committed.insert(
                (topic.name.0.to_string(), p.partition_index),
                p.committed_offset,
            );
        }
    }
    let ends = list_offsets(cluster, metadata, committed.keys(), -1).await;
    let offsets = committed
        .into_iter()
        .map(|((topic, partition), current)| {
            let end = ends.get(&(topic.clone(), partition)).copied();
            OffsetView {
                lag: end.map(|end| (end - current).max(0)),
                topic,
                partition,
                current_offset: current,
                log_end_offset: end,
            }
        })
        .collect();
    Ok(GroupView {
        group: group.to_string(),
        coordinator: coordinator.0,
        state: described.group_state.to_string(),
        members: described
            .members
            .iter()
            .map(|m| MemberView {
                member_id: m.member_id.to_string(),
                client_id: m.client_id.to_string(),
                host: m.client_host.to_string(),
            })
            .collect(),
        offsets,
    })
}

/// Each partition's offset for `timestamp` (ListOffsets at its leader: -1
/// the log end, -2 the log start, else the first offset at or after that
/// time); a partition whose leader does not answer is left out.
async fn list_offsets<'a>(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    partitions: impl Iterator<Item = &'a (String, i32)>,
    timestamp: i64,
) -> BTreeMap<(String, i32), i64> {
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for (topic, partition) in partitions {
        let leader = metadata
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
            .and_then(|t| {
                t.partitions
                    .iter()
                    .find(|p| p.partition_index == *partition)
            })
            .map(|p| p.leader_id.0);
        if let Some(leader) = leader.filter(|&l| l >= 0) {
            by_leader
                .entry(leader)
                .or_default()
                .entry(topic.clone())
                .or_default()
                .push(*partition);
        }
    }
    let mut ends = BTreeMap::new();
    for (leader, topics) in by_leader {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(
                topics
                    .into_iter()
                    .map(|(topic, partitions)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|p| {
                                        ListOffsetsPartition::default()
                                            .with_partition_index(p)
                                            .with_timestamp(timestamp)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let answered: Result<ListOffsetsResponse, _> = cluster
            .ask(BrokerId(leader), metadata, ApiKey::ListOffsets, 6, &request)
            .await;
        let Ok(answered) = answered else { continue };
        for topic in answered.topics {
            for p in topic.partitions.into_iter().filter(|p| p.error_code == 0) {
                ends.insert((topic.name.0.to_string(), p.partition_index), p.offset);
            }
        }
    }
    ends
}
