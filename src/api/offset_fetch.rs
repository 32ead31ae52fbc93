//! OffsetFetch (key 9), v0-8: a group's committed offsets (all of them when
//! no topics are named; -1 for partitions without a commit). v8 asks for
//! several groups at once. A group the principal may not DESCRIBE answers
//! GROUP_AUTHORIZATION_FAILED; a topic it may not DESCRIBE is left out of
//! an all-topics answer and answers TOPIC_AUTHORIZATION_FAILED when named
//! (Kafka's `handleOffsetFetchRequest`).

use std::collections::BTreeMap;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use kafka_protocol::error::ResponseError;

use super::{ask_group, authorize_group, BrokerContext};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::consumer_group::FetchOffsets;
use crate::group::records::OffsetAndMetadata;
use crate::topic_partition::TopicPartition;

/// Each partition's committed offset (`None`: none) and error code.
type Fetched = Result<Vec<(TopicPartition, Option<OffsetAndMetadata>, i16)>, i16>;

async fn fetch(
    ctx: &BrokerContext,
    session: &Session,
    group_id: &str,
    partitions: Option<Vec<TopicPartition>>,
) -> Fetched {
    if let Err(e) = authorize_group(ctx, session, AclOperation::Describe, group_id) {
        return Err(e.code());
    }
    let may_describe = |topic: &str| {
        ctx.authorize(session, AclOperation::Describe, ResourceType::Topic, topic)
    };
    let all_topics = partitions.is_none();
    let (allowed, denied): (Vec<TopicPartition>, Vec<TopicPartition>) = partitions
        .unwrap_or_default()
        .into_iter()
        .partition(|tp| may_describe(&tp.topic));
    let partitions = (!all_topics).then(|| allowed.clone());
    let mut fetched: Vec<(TopicPartition, Option<OffsetAndMetadata>, i16)> =
        match ask_group(ctx, group_id, FetchOffsets { partitions }, false).await {
            Ok(Some(offsets)) => offsets
                .into_iter()
                .filter(|(tp, _)| !all_topics || may_describe(&tp.topic))
                .map(|(tp, offset)| (tp, offset, 0))
                .collect(),
            // An unknown group has no offsets: -1 for whatever was asked.
            Ok(None) => allowed.into_iter().map(|tp| (tp, None, 0)).collect(),
            Err(e) => return Err(e.code()),
        };
    let code = ResponseError::TopicAuthorizationFailed.code();
    fetched.extend(denied.into_iter().map(|tp| (tp, None, code)));
    Ok(fetched)
}

/// Group offsets by topic and build each response level with `topic` and
/// `partition` (v0-7 and v8 use different types with the same fields).
fn build<T, P>(
    offsets: Vec<(TopicPartition, Option<OffsetAndMetadata>, i16)>,
    topic: impl Fn(TopicName, Vec<P>) -> T,
    partition: impl Fn(i32, OffsetAndMetadata, i16) -> P,
) -> Vec<T> {
    let mut topics: BTreeMap<String, Vec<P>> = BTreeMap::new();
    for (tp, offset, code) in offsets {
        // -1: no committed offset for this partition.
        let offset = offset.unwrap_or(OffsetAndMetadata {
            offset: -1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: -1,
        });
        topics
            .entry(tp.topic)
            .or_default()
            .push(partition(tp.partition, offset, code));
    }
    topics
        .into_iter()
        .map(|(name, partitions)| topic(TopicName(StrBytes::from_string(name)), partitions))
        .collect()
}

fn wanted<'a>(topics: impl Iterator<Item = (&'a TopicName, &'a Vec<i32>)>) -> Vec<TopicPartition> {
    topics
        .flat_map(|(name, partitions)| {
            partitions
                .iter()
                .map(|&p| TopicPartition::new(name.0.to_string(), p))
        })
        .collect()
}

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in &request.groups {
            let partitions = group
                .topics
                .as_ref()
                .map(|topics| wanted(topics.iter().map(|t| (&t.name, &t.partition_indexes))));
            let response =
                OffsetFetchResponseGroup::default().with_group_id(group.group_id.clone());
            groups.push(match fetch(ctx, session, &group.group_id.0, partitions).await {
                Err(code) => response.with_error_code(code),
                Ok(offsets) => response.with_topics(build(
                    offsets,
                    |name, partitions| {
                        OffsetFetchResponseTopics::default()
                            .with_name(name)
                            .with_partitions(partitions)
                    },
                    |index, o, code| {
                        OffsetFetchResponsePartitions::default()
                            .with_partition_index(index)
                            .with_committed_offset(o.offset)
                            .with_committed_leader_epoch(o.leader_epoch)
                            .with_metadata(Some(StrBytes::from_string(o.metadata)))
                            .with_error_code(code)
                    },
                )),
            });
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let partitions = request
        .topics
        .as_ref()
        .map(|topics| wanted(topics.iter().map(|t| (&t.name, &t.partition_indexes))));
    let asked = partitions.clone().unwrap_or_default();
    let (offsets, code) = match fetch(ctx, session, &request.group_id.0, partitions).await {
        Ok(offsets) => (offsets, 0),
        // v0 and v1 have no top-level error: Kafka puts the coordinator's
        // error on every requested partition, so a client does not read
        // "nothing committed" while the group loads.
        Err(code) if version < 2 => (asked.into_iter().map(|tp| (tp, None, 0)).collect(), code),
        Err(code) => return OffsetFetchResponse::default().with_error_code(code),
    };
    OffsetFetchResponse::default().with_topics(build(
        offsets,
        |name, partitions| {
            OffsetFetchResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        },
        |index, o, partition_code| {
            OffsetFetchResponsePartition::default()
                .with_partition_index(index)
                .with_committed_offset(o.offset)
                .with_committed_leader_epoch(o.leader_epoch)
                .with_metadata(Some(StrBytes::from_string(o.metadata)))
                .with_error_code(if code != 0 { code } else { partition_code })
        },
    ))
}
