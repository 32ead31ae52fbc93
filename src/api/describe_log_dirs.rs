//! DescribeLogDirs (key 35): each of this broker's `log.dirs` with its
//! size and free space, and the replicas it holds with their sizes and
//! offset lags, as Kafka's `ReplicaManager.describeLogDirs` answers it
//! (what `kafka-log-dirs --describe` and `Admin.describeLogDirs` print).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::AclOperation;
use crate::security::Session;
use crate::actors::log_manager::{DescribeLogDirs, LogDirDescription};
use crate::topic_partition::TopicPartition;

/// DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+'s
/// top-level error; older versions just see no directories).
pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if !ctx.authorize_cluster(session, AclOperation::Describe) {
        return failed(ResponseError::ClusterAuthorizationFailed.code());
    }
    // A null topic list asks for every replica.
    let wanted: Option<BTreeSet<TopicPartition>> = request.topics.map(|topics| {
        topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|&p| TopicPartition::new(t.topic.0.to_string(), p))
            })
            .collect()
    });
    match ctx.log_dirs.send(DescribeLogDirs).await {
        Ok(Ok(dirs)) => DescribeLogDirsResponse::default().with_results(
            dirs.into_iter()
                .map(|dir| describe(dir, wanted.as_ref()))
                .collect(),
        ),
        Ok(Err(e)) => {
            log::warn!("DescribeLogDirs: {e}");
            failed(ResponseError::KafkaStorageError.code())
        }
        Err(_) => failed(ResponseError::UnknownServerError.code()),
    }
}

fn failed(code: i16) -> DescribeLogDirsResponse {
    DescribeLogDirsResponse::default().with_error_code(code)
}

fn describe(dir: LogDirDescription, wanted: Option<&BTreeSet<TopicPartition>>) -> DescribeLogDirsResult {
    let result = DescribeLogDirsResult::default()
        .with_log_dir(StrBytes::from_string(dir.path.display().to_string()))
        .with_total_bytes(dir.total_bytes)
        .with_usable_bytes(dir.usable_bytes);
    if let Some(reason) = dir.error {
        log::warn!("log dir {} cannot be described: {reason}", dir.path.display());
        return result.with_error_code(ResponseError::KafkaStorageError.code());
    }
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for replica in dir.replicas {
        if wanted.is_some_and(|w| !w.contains(&replica.tp)) {
            continue;
        }
        topics.entry(replica.tp.topic.clone()).or_default().push(
            DescribeLogDirsPartition::default()
                .with_partition_index(replica.tp.partition)
                .with_partition_size(i64::try_from(replica.size_bytes).unwrap_or(i64::MAX))
                .with_offset_lag(replica.offset_lag)
                .with_is_future_key(false),
        );
    }
    result.with_topics(
        topics
            .into_iter()
            .map(|(name, mut partitions)| {
                partitions.sort_by_key(|p| p.partition_index);
                DescribeLogDirsTopic::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}
