//! An extension actor that counts the records and bytes committed to every
//! topic and serves the counts to clients as records of a topic it writes
//! every few seconds:
//!
//! ```text
//! cargo run --example topic_counter -- [--output topic-stats] [--interval-ms 5000] [--log-dir DIR]
//! kcat -b <address> -C -t topic-stats -o beginning
//! ```
//!
//! It subscribes to `HighWatermarkAdvanced` events on the broker's event
//! bus. Each carries the running totals of the partition's leadership, so
//! the counts stay exact when the counter's mailbox is full and the bus
//! drops events for it: the next event says it all again. Per topic it
//! sums what its partitions committed since the counter started, and
//! every `--interval-ms` appends one record per topic that changed to
//! `--output`: key the topic, value
//! `{"topic":"t","records":N,"bytes":B}`. Internal topics and its own
//! output are not counted.

mod common;

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use clap::Parser;
use ferrolog::actors::event_bus::{BrokerEvent, CommittedTotals, EventKind};
use ferrolog::actors::extension::{Extension, ExtensionContext, ProducedRecord};
use ferrolog::broker::Broker;
use ferrolog::topic_partition::TopicPartition;

#[derive(Parser, Debug)]
#[command(about = "A broker that publishes per-topic record and byte counts")]
struct Args {
    #[command(flatten)]
    broker: common::BrokerArgs,
    /// The topic the counts are written to (created with one partition).
    #[arg(long, default_value = "topic-stats")]
    output: String,
    /// How often the counts are written.
    #[arg(long, default_value_t = 5000)]
    interval_ms: u64,
}

pub struct TopicCounter {
    pub output: String,
    pub interval: Duration,
}

impl Extension for TopicCounter {
    type Actor = CounterActor;

    fn name(&self) -> String {
        "topic-counter".to_string()
    }

    fn create(self, broker: ExtensionContext) -> CounterActor {
        CounterActor {
            output: self.output,
            interval: self.interval,
            broker,
            partitions: BTreeMap::new(),
            changed: BTreeSet::new(),
            subscribed: false,
        }
    }
}

pub struct CounterActor {
    output: String,
    interval: Duration,
    broker: ExtensionContext,
    /// What each partition committed since the counter started.
    partitions: BTreeMap<TopicPartition, PartitionCount>,
    /// Topics counted since the last write.
    changed: BTreeSet<String>,
    subscribed: bool,
}

/// A partition's committed records and bytes: the leaderships that ended
/// (summed) and the current one (its latest running totals).
/// The first event seen sets a negative baseline, so what a leadership
/// committed before the counter started is not counted.
struct PartitionCount {
    ended: (i64, i64),
    current: CommittedTotals,
}

impl PartitionCount {
    /// A count that starts with an event that moved `records` and `bytes`.
    fn starting_at(committed: CommittedTotals, records: i64, bytes: u64) -> Self {
        PartitionCount {
            ended: (
                records - committed.records,
                bytes as i64 - committed.bytes as i64,
            ),
            current: committed,
        }
    }

    fn observe(&mut self, committed: CommittedTotals) {
        if committed.since_offset != self.current.since_offset {
            self.ended.0 += self.current.records;
            self.ended.1 += self.current.bytes as i64;
            self.current = committed;
        } else if committed.records >= self.current.records {
            self.current = committed;
        }
    }

    fn total(&self) -> (i64, u64) {
        (
            self.ended.0 + self.current.records,
            (self.ended.1 + self.current.bytes as i64).max(0) as u64,
        )
    }
}

impl CounterActor {
    /// Records and bytes committed to `topic` since the counter started.
    fn topic_total(&self, topic: &str) -> Option<(i64, u64)> {
        let mut partitions = self
            .partitions
            .iter()
            .filter(|(tp, _)| tp.topic == topic)
            .peekable();
        partitions.peek()?;
        Some(partitions.fold((0, 0), |(records, bytes), (_, count)| {
            let (r, b) = count.total();
            (records + r, bytes + b)
        }))
    }

    /// Write one record per changed topic to the output topic.
    fn publish(&mut self, ctx: &mut Context<Self>) {
        if self.changed.is_empty() {
            return;
        }
        let records: Vec<ProducedRecord> = std::mem::take(&mut self.changed)
            .into_iter()
            .filter_map(|topic| {
                let (records, bytes) = self.topic_total(&topic)?;
                let value = format!(r#"{{"topic":"{topic}","records":{records},"bytes":{bytes}}}"#);
                Some(ProducedRecord {
                    key: Some(Bytes::from(topic)),
                    value: Some(Bytes::from(value)),
                    headers: Vec::new(),
                })
            })
            .collect();
        let broker = self.broker.clone();
        let output = self.output.clone();
        ctx.wait(
            async move {
                broker.ensure_topic(&output, 1, Vec::new()).await?;
                broker
                    .produce(&TopicPartition::new(output.as_str(), 0), &records)
                    .await
            }
            .into_actor(self)
            .map(|written, _actor, _ctx| {
                if let Err(e) = written {
                    log::warn!("topic counter could not write its counts: {e}");
                }
            }),
        );
    }
}

impl Actor for CounterActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Events survive a restart of this actor (same mailbox): subscribe
        // once.
        if !self.subscribed {
            self.broker.events().subscribe(
                ctx.address().recipient(),
                &[EventKind::HighWatermarkAdvanced],
            );
            self.subscribed = true;
        }
        ctx.run_interval(self.interval, |actor, ctx| actor.publish(ctx));
    }
}

impl actix::Supervised for CounterActor {}

impl Handler<BrokerEvent> for CounterActor {
    type Result = ();

    fn handle(&mut self, event: BrokerEvent, _ctx: &mut Context<Self>) {
        if let BrokerEvent::HighWatermarkAdvanced {
            tp,
            records,
            bytes,
            committed,
            ..
        } = event
        {
            if tp.topic == self.output || tp.topic.starts_with("__") {
                return;
            }
            self.changed.insert(tp.topic.clone());
            match self.partitions.entry(tp) {
                Entry::Occupied(mut count) => count.get_mut().observe(committed),
                Entry::Vacant(slot) => {
                    slot.insert(PartitionCount::starting_at(committed, records, bytes));
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let counter = TopicCounter {
        output: args.output.clone(),
        interval: Duration::from_millis(args.interval_ms.max(1)),
    };
    common::run("topic_counter", &args.broker, move |config| {
        Broker::builder(config).with_extension(counter)
    })
}
