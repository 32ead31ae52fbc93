//! Produce (key 0), v0-9. Each partition's records go to its partition
//! actor, all partitions in parallel. acks=0 gets no response at all;
//! acks=1 and acks=-1 (all) answer once the leader has appended (with one
//! replica, every ISR member has it then); other acks values get
//! INVALID_REQUIRED_ACKS.

use futures_util::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::create_topics::auto_create_topic;
use super::{error_code, BrokerContext};
use crate::actors::partition::AppendRecords;
use crate::topic_partition::TopicPartition;

/// None when acks=0: the client expects no response.
pub async fn handle(
    ctx: &BrokerContext,
    request: ProduceRequest,
    version: i16,
) -> Option<ProduceResponse> {
    let acks = request.acks;
    let mut topics = Vec::with_capacity(request.topic_data.len());
    for topic in request.topic_data {
        let name = topic.name.0.to_string();
        if ctx.metadata.topic(&name).is_none() && ctx.config.auto_create_topics_enable {
            if let Err(e) = auto_create_topic(ctx, &name).await {
                log::debug!("produce to {name}: auto-creation failed: {e}");
            }
        }
        let partitions = topic.partition_data.into_iter().map(|partition| {
            let tp = TopicPartition::new(name.clone(), partition.index);
            async move {
                let response = PartitionProduceResponse::default()
                    .with_index(partition.index)
                    .with_base_offset(-1)
                    .with_log_append_time_ms(-1)
                    .with_log_start_offset(-1);
                if !matches!(acks, -1..=1) {
                    return response.with_error_code(ResponseError::InvalidRequiredAcks.code());
                }
                let Some(records) = partition.records.filter(|r| !r.is_empty()) else {
                    return response.with_error_code(ResponseError::CorruptMessage.code());
                };
                let Some(handle) = ctx.partition(&tp) else {
                    return response.with_error_code(ResponseError::UnknownTopicOrPartition.code());
                };
                if acks == -1 && isr_too_small(ctx, &tp) {
                    return response.with_error_code(ResponseError::NotEnoughReplicas.code());
                }
                let append = handle.addr.send(AppendRecords { records });
                match append.await {
                    Ok(Ok((info, log_start_offset))) => response
                        .with_base_offset(info.first_offset)
                        .with_log_append_time_ms(info.log_append_time.unwrap_or(-1))
                        .with_log_start_offset(log_start_offset),
                    Ok(Err(e)) => {
                        log::debug!("produce to {tp} failed: {e}");
                        response
                            .with_error_code(error_code(&e))
                            .with_error_message(Some(StrBytes::from_string(e.to_string())))
                    }
                    Err(_) => response.with_error_code(ResponseError::NotLeaderOrFollower.code()),
                }
            }
        });
        topics.push(
            TopicProduceResponse::default()
                .with_name(TopicName(StrBytes::from_string(name.clone())))
                .with_partition_responses(join_all(partitions).await),
        );
    }
    if acks == 0 {
        return None;
    }
    let _ = version;
    Some(ProduceResponse::default().with_responses(topics))
}

/// acks=all needs at least `min.insync.replicas` in the ISR (topic config,
/// else the broker's), or the produce fails with NOT_ENOUGH_REPLICAS.
fn isr_too_small(ctx: &BrokerContext, tp: &TopicPartition) -> bool {
    ctx.metadata.read(|m| {
        let Some(topic) = m.topics.get(&tp.topic) else {
            return false;
        };
        let min_isr = topic
            .configs
            .get("min.insync.replicas")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(ctx.config.min_insync_replicas.max(1) as usize);
        topic
            .partitions
            .get(&tp.partition)
            .is_some_and(|p| p.isr.len() < min_isr)
    })
}
