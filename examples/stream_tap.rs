//! An extension actor that copies the committed records of one topic into
//! another, upper-casing each value, exactly once per record across broker
//! restarts and crashes:
//!
//! ```text
//! cargo run --example stream_tap -- --source words --destination WORDS [--log-dir DIR] [--set key=value]...
//! ```
//!
//! How exactly once holds: the tap subscribes to the source's committed
//! records (`ExtensionContext::subscribe_records`), which redelivers from
//! the tap's committed position after any failure. Each copy carries the
//! source offset in a `ferrolog.tap.source-offset` header, and on every
//! (re)start the tap reads the last record of each destination partition to
//! learn the highest source offset already copied; redelivered records at
//! or below it are skipped. The destination partition is the source
//! partition, so per-partition order is kept.

mod common;

use std::collections::HashMap;
use std::process::ExitCode;

use actix::prelude::*;
use bytes::Bytes;
use clap::Parser;
use ferrolog::actors::extension::{
    CommittedRecords, Extension, ExtensionContext, ExtensionError, PartitionOffsets,
    ProducedRecord, RecordSubscription,
};
use ferrolog::broker::Broker;
use ferrolog::topic_partition::TopicPartition;

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
            copied_up_to: HashMap::new(),
            subscription: None,
        }
    }
}

pub struct TapActor {
    source: String,
    destination: String,
    broker: ExtensionContext,
    /// Per source partition: the highest source offset already copied.
    copied_up_to: HashMap<i32, i64>,
    subscription: Option<RecordSubscription>,
}

impl TapActor {
    /// Wait for the source, create the destination, learn what was copied,
    /// then subscribe. Runs at start and after every restart.
    fn begin(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.subscription.take() {
            old.cancel();
        }
        let broker = self.broker.clone();
        let (source, destination) = (self.source.clone(), self.destination.clone());
        let prepare = async move {
            let partitions = broker
                .partition_count(&source)
                .ok_or_else(|| ExtensionError::UnknownPartition(TopicPartition::new(&source, 0)))?;
            broker
                .ensure_topic(&destination, partitions, Vec::new())
                .await?;
            let mut copied = HashMap::new();
            for partition in 0..partitions {
                let tp = TopicPartition::new(destination.as_str(), partition);
                if let Some(offset) = last_copied_source_offset(&broker, &tp).await? {
                    copied.insert(partition, offset);
                }
            }
            Ok::<_, ExtensionError>(copied)
        };
        ctx.wait(
            prepare
                .into_actor(self)
                .map(|prepared, actor, ctx| match prepared {
                    Ok(copied) => {
                        log::info!(
                            "stream tap {} -> {} starts; already copied: {copied:?}",
                            actor.source,
                            actor.destination
                        );
                        actor.copied_up_to = copied;
                        let recipient = ctx.address().recipient();
                        match actor.broker.subscribe_records(&actor.source, recipient) {
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

/// The source offset in the header of `tp`'s last record, if any.
async fn last_copied_source_offset(
    broker: &ExtensionContext,
    tp: &TopicPartition,
) -> Result<Option<i64>, ExtensionError> {
    let PartitionOffsets {
        high_watermark,
        log_start_offset,
    } = broker.offsets(tp).await?;
    if high_watermark <= log_start_offset {
        return Ok(None);
    }
    let read = broker.read_committed(tp, high_watermark - 1).await?;
    Ok(read.records.last().and_then(|record| {
        record
            .headers
            .iter()
            .find(|(key, _)| key == SOURCE_OFFSET_HEADER)
            .and_then(|(_, value)| value.as_ref())
            .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok())
    }))
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
        self.copied_up_to.clear();
    }
}

impl Handler<CommittedRecords> for TapActor {
    type Result = ResponseActFuture<Self, Result<(), ExtensionError>>;

    fn handle(&mut self, delivery: CommittedRecords, _ctx: &mut Context<Self>) -> Self::Result {
        let partition = delivery.tp.partition;
        let copied_up_to = self.copied_up_to.get(&partition).copied().unwrap_or(-1);
        let copies: Vec<ProducedRecord> = delivery
            .records
            .iter()
            .filter(|record| record.offset > copied_up_to)
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
            async move { broker.produce(&destination, &copies).await }
                .into_actor(self)
                .map(move |produced, actor, _ctx| {
                    if let Err(e) = &produced {
                        // The subscription redelivers from the committed
                        // position; say why, once per attempt.
                        log::warn!(
                            "stream tap: copying into {}-{partition} failed: {e}",
                            actor.destination
                        );
                    }
                    produced?;
                    actor.copied_up_to.insert(partition, last);
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
