//! OffsetFetch (key 9), v0-8: a group's committed offsets (all of them when
//! no topics are named; -1 for partitions without a commit). v8 asks for
//! several groups at once.

use std::collections::BTreeMap;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::{ask_group, BrokerContext};
use crate::actors::consumer_group::{GroupCommand, GroupReply};
use crate::group::records::OffsetAndMetadata;
use crate::topic_partition::TopicPartition;

type Fetched = Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, i16>;

async fn fetch(
    ctx: &BrokerContext,
    group_id: &str,
    partitions: Option<Vec<TopicPartition>>,
) -> Fetched {
    let wanted = partitions.clone();
    match ask_group(
        ctx,
        group_id,
        GroupCommand::FetchOffsets { partitions },
        false,
    )
    .await
    {
        Ok(Some(GroupReply::Offsets(offsets))) => {
            Ok(offsets.into_iter().map(|(tp, o, _)| (tp, o)).collect())
        }
        // An unknown group has no offsets: -1 for whatever was asked.
        Ok(_) => Ok(wanted
            .unwrap_or_default()
            .into_iter()
            .map(|tp| (tp, None))
            .collect()),
        Err(code) => Err(code),
    }
}

fn by_topic(
    offsets: Vec<(TopicPartition, Option<OffsetAndMetadata>)>,
) -> BTreeMap<String, Vec<(i32, Option<OffsetAndMetadata>)>> {
    let mut topics: BTreeMap<String, Vec<(i32, Option<OffsetAndMetadata>)>> = BTreeMap::new();
    for (tp, offset) in offsets {
        topics
            .entry(tp.topic)
            .or_default()
            .push((tp.partition, offset));
    }
    topics
}

pub async fn handle(
    ctx: &BrokerContext,
    request: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in &request.groups {
            let partitions = group.topics.as_ref().map(|topics| {
                topics
                    .iter()
                    .flat_map(|t| {
                        t.partition_indexes
                            .iter()
                            .map(|&p| TopicPartition::new(t.name.0.to_string(), p))
                    })
                    .collect()
            });
            let response =
                OffsetFetchResponseGroup::default().with_group_id(group.group_id.clone());
            groups.push(match fetch(ctx, &group.group_id.0, partitions).await {
                Err(code) => response.with_error_code(code),
                Ok(offsets) => response.with_topics(
                    by_topic(offsets)
                        .into_iter()
                        .map(|(name, partitions)| {
                            OffsetFetchResponseTopics::default()
                                .with_name(TopicName(StrBytes::from_string(name)))
                                .with_partitions(
                                    partitions
                                        .into_iter()
                                        .map(|(p, o)| {
                                            let o = o.unwrap_or(OffsetAndMetadata {
                                                offset: -1,
                                                leader_epoch: -1,
                                                metadata: String::new(),
                                                commit_timestamp_ms: -1,
                                            });
                                            OffsetFetchResponsePartitions::default()
                                                .with_partition_index(p)
                                                .with_committed_offset(o.offset)
                                                .with_committed_leader_epoch(o.leader_epoch)
                                                .with_metadata(Some(StrBytes::from_string(
                                                    o.metadata,
                                                )))
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                ),
            });
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let partitions = request.topics.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(|&p| TopicPartition::new(t.name.0.to_string(), p))
            })
            .collect()
    });
    match fetch(ctx, &request.group_id.0, partitions).await {
        Err(code) => OffsetFetchResponse::default().with_error_code(code),
        Ok(offsets) => OffsetFetchResponse::default().with_topics(
            by_topic(offsets)
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetFetchResponseTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(
                            partitions
                                .into_iter()
                                .map(|(p, o)| {
                                    let o = o.unwrap_or(OffsetAndMetadata {
                                        offset: -1,
                                        leader_epoch: -1,
                                        metadata: String::new(),
                                        commit_timestamp_ms: -1,
                                    });
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_committed_offset(o.offset)
                                        .with_committed_leader_epoch(o.leader_epoch)
                                        .with_metadata(Some(StrBytes::from_string(o.metadata)))
                                })
                                .collect(),
                        )
                })
                .collect(),
        ),
    }
}
