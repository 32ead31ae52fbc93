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
//! bus (each carries the records and bytes that became committed), keeps a
//! sum per topic since it started, and every `--interval-ms` appends one
//! record per topic that changed to `--output`: key the topic, value
//! `{"topic":"t","records":N,"bytes":B}`. Internal topics and its own
//! output are not counted.

mod common;

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use clap::Parser;
use ferrolog::actors::event_bus::{BrokerEvent, EventKind};
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
            totals: BTreeMap::new(),
            changed: BTreeSet::new(),
            subscribed: false,
        }
    }
}

pub struct CounterActor {
    output: String,
    interval: Duration,
    broker: ExtensionContext,
    /// Records and bytes committed per topic since the counter started.
    totals: BTreeMap<String, (i64, u64)>,
    /// Topics counted since the last write.
    changed: BTreeSet<String>,
    subscribed: bool,
}

impl CounterActor {
    /// Write one record per changed topic to the output topic.
    fn publish(&mut self, ctx: &mut Context<Self>) {
        if self.changed.is_empty() {
            return;
        }
        let records: Vec<ProducedRecord> = std::mem::take(&mut self.changed)
            .into_iter()
            .filter_map(|topic| {
                let (records, bytes) = *self.totals.get(&topic)?;
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
            tp, records, bytes, ..
        } = event
        {
            if tp.topic == self.output || tp.topic.starts_with("__") {
                return;
            }
            let total = self.totals.entry(tp.topic.clone()).or_default();
            total.0 += records;
            total.1 += bytes;
            self.changed.insert(tp.topic);
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
