//! An extension actor that copies the committed records of one topic into
//! another, upper-casing each value, exactly once per record across broker
//! restarts and crashes:
//!
//! ```text
//! cargo run --example stream_tap -- --source words --destination WORDS [--log-dir DIR] [--set key=value]...
//! ```
//!
//! How exactly once holds, on one broker or a cluster: the tap keeps its
//! own positions (`ExtensionContext::subscribe_records_from_own_positions`):
//! each copy carries its source offset in a `ferrolog.tap.source-offset`
//! header, and whenever delivery of a partition starts (at start-up, after
//! a restart, after any failed copy) the tap asks the destination
//! partition's leader, which must be this broker, for its last record and
//! delivers from the source offset after it. What it learned holds for
//! that leader epoch only: every copy is appended with
//! `produce_in_epoch`, so after a leadership move the append is refused and
//! the tap learns again from the new leader's log, which holds every
//! acknowledged copy. The destination partition is the source partition,
//! so per-partition order is kept, and the destination is co-partitioned
//! with the source (same replicas, same preferred leader) so that one
//! broker leads both; where they are led apart, that partition waits.

mod common;

use std::collections::HashMap;
use std::process::ExitCode;

use actix::prelude::*;
use bytes::Bytes;
use clap::Parser;
use ferrolog::actors::extension::{
    CommittedRecords, Extension, ExtensionContext, ExtensionError, PartitionOffsets,
    ProducedRecord, RecordSubscription, StartPosition,
};
use ferrolog::broker::Broker;
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::error::ResponseError;

const SOURCE_OFFSET_HEADER: &str = "ferrolog.tap.source-offset";

#[derive(Parser, Debug)]
#[command(about = "A broker with a stream tap: source -> upper-cased destination")]
struct Args {
    #[command(flatten)]
    broker: common::BrokerArgs,
    /// The topic to copy from (it must exist or be created by a client).
    #[arg(long)]
    source: String,
    /// The topic to copy into; created with the source's partition count.
    #[arg(long)]
    destination: String,
}

/// The extension: what to copy where.
pub struct StreamTap {
    pub source: String,
    pub destination: String,
}

impl Extension for StreamTap {
    type Actor = TapActor;

    fn name(&self) -> String {
        format!("stream-tap.{}.{}", self.source, self.destination)
    }

    fn create(self, broker: ExtensionContext) -> TapActor {
        TapActor {
            source: self.source,
            destination: self.destination,
            broker,
            copied: HashMap::new(),
            subscription: None,
        }
    }
}

pub struct TapActor {
    source: String,
    destination: String,
    broker: ExtensionContext,
    /// Per partition, what this tap learned of its destination as its
    /// leader: valid in that leader epoch only.
    copied: HashMap<i32, Copied>,
    subscription: Option<RecordSubscription>,
}

/// The destination partition as its leader showed it to this tap.
#[derive(Debug, Clone, Copy)]
struct Copied {
    leader_epoch: i32,
    /// The highest source offset already copied (-1: none).
    up_to: i64,
}

impl TapActor {
    /// Wait for the source, create the destination beside it, then
    /// subscribe. Runs at start and after every restart.
    fn begin(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.subscription.take() {
            old.cancel();
        }
        let broker = self.broker.clone();
        let (source, destination) = (self.source.clone(), self.destination.clone());
        let prepare = async move {
            broker
                .partition_count(&source)
                .ok_or_else(|| ExtensionError::UnknownPartition(TopicPartition::new(&source, 0)))?;
            broker
                .ensure_copartitioned_topic(&destination, &source, Vec::new())
                .await
        };
        ctx.wait(
            prepare
                .into_actor(self)
                .map(|prepared, actor, ctx| match prepared {
                    Ok(()) => {
                        log::info!(
                            "stream tap {} -> {} starts",
                            actor.source,
                            actor.destination
                        );
                        let records = ctx.address().recipient();
                        let positions = ctx.address().recipient();
                        match actor.broker.subscribe_records_from_own_positions(
                            &actor.source,
                            records,
                            positions,
                        ) {
                            Ok(subscription) => actor.subscription = Some(subscription),
                            Err(e) => log::error!("stream tap cannot subscribe: {e}"),
                        }
                    }
                    Err(e) => {
                        log::info!("stream tap waits for {}: {e}", actor.source);
                        ctx.run_later(std::time::Duration::from_secs(1), |actor, ctx| {
                            actor.begin(ctx)
                        });
                    }
                }),
        );
    }
}

/// What `tp`'s leader, this broker, holds: its leader epoch and the source
/// offset in the header of its last record (-1: nothing copied yet).
async fn learn_copied(
    broker: &ExtensionContext,
    tp: &TopicPartition,
) -> Result<Copied, ExtensionError> {
    let leadership = broker.leadership(tp).await?;
    let PartitionOffsets {
        log_start_offset, ..
    } = broker.offsets(tp).await?;
    let mut copied = Copied {
        leader_epoch: leadership.leader_epoch,
        up_to: -1,
    };
    if leadership.log_end_offset <= log_start_offset {
        return Ok(copied);
    }
    let read = broker
        .read_leader_log(tp, leadership.log_end_offset - 1, leadership.leader_epoch)
        .await?;
    if let Some(offset) = read.records.last().and_then(|record| {
        record
            .headers
            .iter()
            .find(|(key, _)| key == SOURCE_OFFSET_HEADER)
            .and_then(|(_, value)| value.as_ref())
            .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok())
    }) {
        copied.up_to = offset;
    }
    Ok(copied)
}

impl Actor for TapActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.begin(ctx);
    }
}

impl actix::Supervised for TapActor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // `started` runs again and re-reads what was copied from the
        // destination: nothing in memory is trusted after a failure.
        self.copied.clear();
    }
}

impl Handler<StartPosition> for TapActor {
    type Result = ResponseActFuture<Self, Result<Option<i64>, ExtensionError>>;

    fn handle(&mut self, start: StartPosition, _ctx: &mut Context<Self>) -> Self::Result {
        let partition = start.tp.partition;
        let broker = self.broker.clone();
        let destination = TopicPartition::new(self.destination.as_str(), partition);
        Box::pin(
            async move { learn_copied(&broker, &destination).await }
                .into_actor(self)
                .map(move |learned, actor, _ctx| {
                    // Another broker leads the destination: ask again later.
                    let copied = learned?;
                    log::info!(
                        "stream tap: {}-{partition} in leader epoch {} holds copies up to source offset {}",
                        actor.destination,
                        copied.leader_epoch,
                        copied.up_to
                    );
                    actor.copied.insert(partition, copied);
                    Ok((copied.up_to >= 0).then_some(copied.up_to + 1))
                }),
        )
    }
}

impl Handler<CommittedRecords> for TapActor {
    type Result = ResponseActFuture<Self, Result<(), ExtensionError>>;

    fn handle(&mut self, delivery: CommittedRecords, _ctx: &mut Context<Self>) -> Self::Result {
        let partition = delivery.tp.partition;
        let Some(copied) = self.copied.get(&partition).copied() else {
            // Not learned (a restart in between): delivery starts again.
            return Box::pin(fut::ready(Err(ExtensionError::Kafka {
                what: "copy",
                code: ResponseError::NotLeaderOrFollower.code(),
                message: "the destination is not learned".to_string(),
            })));
        };
        let copies: Vec<ProducedRecord> = delivery
            .records
            .iter()
            .filter(|record| record.offset > copied.up_to)
            .map(|record| ProducedRecord {
                key: record.key.clone(),
                value: record
                    .value
                    .as_ref()
                    .map(|v| Bytes::from(v.to_ascii_uppercase())),
                headers: vec![(
                    SOURCE_OFFSET_HEADER.to_string(),
                    Some(Bytes::from(record.offset.to_string())),
                )],
            })
            .collect();
        let Some(last) = delivery.records.last().map(|r| r.offset) else {
            return Box::pin(fut::ready(Ok(())));
        };
        let skipped = delivery.records.len() - copies.len();
        if skipped > 0 {
            log::info!(
                "stream tap skips {skipped} redelivered record(s) of {} already copied",
                delivery.tp
            );
        }
        if copies.is_empty() {
            return Box::pin(fut::ready(Ok(())));
        }
        let broker = self.broker.clone();
        let destination = TopicPartition::new(self.destination.as_str(), partition);
        Box::pin(
            async move {
                broker
                    .produce_in_epoch(&destination, copied.leader_epoch, &copies)
                    .await
            }
            .into_actor(self)
            .map(move |produced, actor, _ctx| {
                if let Err(e) = &produced {
                    // What was learned may be stale: learn again when the
                    // delivery starts over.
                    actor.copied.remove(&partition);
                    log::warn!(
                        "stream tap: copying into {}-{partition} failed: {e}",
                        actor.destination
                    );
                }
                produced?;
                if let Some(copied) = actor.copied.get_mut(&partition) {
                    copied.up_to = last;
                }
                Ok(())
            }),
        )
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let tap = StreamTap {
        source: args.source.clone(),
        destination: args.destination.clone(),
    };
    common::run("stream_tap", &args.broker, move |config| {
        Broker::builder(config).with_extension(tap)
    })
}
