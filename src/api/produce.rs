//! Produce (key 0), v0-9. Each partition's records go to its partition
//! actor, all partitions in parallel, enqueued in request order per
//! connection (`ProduceOrder`). A topic the principal may not WRITE gets
//! TOPIC_AUTHORIZATION_FAILED and nothing is written. Internal topics refuse client records
//! (INVALID_TOPIC_EXCEPTION). acks=0 gets no response at all;
//! acks=1 and acks=-1 (all) answer once the leader has appended (with one
//! replica, every ISR member has it then); other acks values get
//! INVALID_REQUIRED_ACKS.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::future::join_all;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::watch;

use super::BrokerContext;
use crate::security::Session;
use crate::actors::log_manager::LogManagerError;
use crate::actors::partition::{PartitionError, ProduceError, RequiredAcks};
use crate::storage::batch::BatchError;
use crate::storage::LogError;
use crate::topic_partition::TopicPartition;
use std::time::Duration;

/// Produce requests of one connection hand their appends to the partition
/// actors in request order, as Kafka's one-request-at-a-time processing
/// does: each request takes a ticket when it is read, waits for its turn,
/// enqueues every partition's append, then passes the turn on and only
/// then waits for the appends to finish. Pipelining is kept; per-partition
/// order follows request order.
#[derive(Clone)]
pub struct ProduceOrder {
    next_ticket: Arc<AtomicU64>,
    turn: Arc<watch::Sender<u64>>,
}

impl Default for ProduceOrder {
    fn default() -> Self {
        ProduceOrder {
            next_ticket: Arc::new(AtomicU64::new(0)),
            turn: Arc::new(watch::channel(0).0),
        }
    }
}

impl ProduceOrder {
    /// The next request's place in line (take it in read order).
    pub fn ticket(&self) -> ProduceTurn {
        ProduceTurn {
            order: self.clone(),
            ticket: self.next_ticket.fetch_add(1, Ordering::SeqCst),
            passed: false,
        }
    }
}

/// One produce request's place in its connection's line.
pub struct ProduceTurn {
    order: ProduceOrder,
    ticket: u64,
    passed: bool,
}

impl ProduceTurn {
    async fn wait(&self) {
        let mut turn = self.order.turn.subscribe();
        while *turn.borrow_and_update() < self.ticket {
            if turn.changed().await.is_err() {
                return;
            }
        }
    }

    fn pass(&mut self) {
        if !self.passed {
            self.passed = true;
            let next = self.ticket + 1;
            self.order
                .turn
                .send_modify(|turn| *turn = (*turn).max(next));
        }
    }
}

impl Drop for ProduceTurn {
    fn drop(&mut self) {
        if self.passed {
            return;
        }
        // A request that ends without dispatching (its handler failed)
        // must still let the ones behind it through, once it is its turn.
        let order = self.order.clone();
        let ticket = self.ticket;
        actix_rt::spawn(async move {
            let mut turn = ProduceTurn {
                order,
                ticket,
                passed: false,
            };
            turn.wait().await;
            turn.pass();
        });
    }
}

type PartitionAppend = Pin<Box<dyn Future<Output = PartitionProduceResponse>>>;

/// acks=0 gets no response (or, when it failed, a closed connection).
pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: ProduceRequest,
    version: i16,
    mut turn: Option<ProduceTurn>,
) -> ProduceOutcome {
    if let Some(turn) = &turn {
        turn.wait().await;
    }
    let acks = request.acks;
    let timeout_ms = request.timeout_ms.max(0) as u64;
    // Dispatch: every append is enqueued at its partition actor here, in
    // request order, before anything waits for an append to finish.
    let mut topics: Vec<(String, Vec<PartitionAppend>)> =
        Vec::with_capacity(request.topic_data.len());
    for topic in request.topic_data {
        let name = topic.name.0.to_string();
        // A lookup, not `topic()`: that clones the topic's whole metadata.
        let known = ctx.metadata.read(|m| m.topics.contains_key(&name));
        // Only a principal that may write it and create it gets it created;
        // the others hear TOPIC_AUTHORIZATION_FAILED from the append.
        if !known
            && ctx.config.auto_create_topics_enable
            && ctx.produce_path.may_write(session, &name)
            && super::metadata::may_create(ctx, session, &name)
        {
            // Not awaited: this request answers UNKNOWN_TOPIC_OR_PARTITION
            // for it, and the turn passes on at once.
            ctx.auto_creations.start(ctx, &name);
        }
        let mut partitions: Vec<PartitionAppend> = Vec::with_capacity(topic.partition_data.len());
        for partition in topic.partition_data {
            let tp = TopicPartition::new(name.clone(), partition.index);
            let response = PartitionProduceResponse::default()
                .with_index(partition.index)
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1);
            // Enqueued now, in request order; awaited after the turn passes.
            let append = ctx.produce_path.append(
                session,
                tp.clone(),
                partition.records,
                RequiredAcks(acks),
                Duration::from_millis(timeout_ms),
            );
            partitions.push(Box::pin(async move {
                match append.await {
                    Ok(produced) => response
                        .with_base_offset(produced.info.first_offset)
                        .with_log_append_time_ms(produced.info.log_append_time.unwrap_or(-1))
                        .with_log_start_offset(produced.log_start_offset),
                    Err(e) => {
                        log::debug!("produce to {tp} failed: {e}");
                        // Kafka says why only when the log refused the
                        // records; routing errors carry just the code.
                        let message = matches!(e, ProduceError::Partition(_))
                            .then(|| StrBytes::from_string(e.to_string()));
                        response
                            .with_error_code(e.code())
                            .with_record_errors(record_errors(&e))
                            .with_error_message(message)
                    }
                }
            }));
        }
        topics.push((name, partitions));
    }
    if let Some(turn) = &mut turn {
        turn.pass();
    }
    let mut responses = Vec::with_capacity(topics.len());
    for (name, partitions) in topics {
        responses.push(
            TopicProduceResponse::default()
                .with_name(TopicName(StrBytes::from_string(name)))
                .with_partition_responses(join_all(partitions).await),
        );
    }
    if acks == 0 {
        let failed = responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(move |p| (&t.name, p)))
            .find(|(_, p)| p.error_code != 0);
        return match failed {
            Some((topic, p)) => ProduceOutcome::CloseConnection(format!(
                "an acks=0 produce to {}-{} failed with error {}",
                topic.0, p.index, p.error_code
            )),
            None => ProduceOutcome::NoResponse,
        };
    }
    let _ = version;
    ProduceOutcome::Respond(ProduceResponse::default().with_responses(responses))
}

/// What a produce request gets back.
pub enum ProduceOutcome {
    Respond(ProduceResponse),
    /// acks=0, every partition appended: no response at all.
    NoResponse,
    /// acks=0 and a partition failed: Kafka closes the connection.
    CloseConnection(String),
}

/// Produce v8's `record_errors`: which record of the batch a per-record
/// validation refused (Kafka's RecordValidationException), else none.
fn record_errors(error: &ProduceError) -> Vec<BatchIndexAndErrorMessage> {
    match error {
        ProduceError::Partition(PartitionError::Log(LogManagerError::Log(LogError::InvalidBatch(
            e @ (BatchError::InvalidTimestamp { record_index, .. }
            | BatchError::MissingKey { record_index }),
        )))) => vec![BatchIndexAndErrorMessage::default()
            .with_batch_index(*record_index as i32)
            .with_batch_index_error_message(Some(StrBytes::from_string(e.to_string())))],
        _ => Vec::new(),
    }
}
