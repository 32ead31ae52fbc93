//! An extension actor that appends the committed records of a topic to
//! files, one per partition, as Kafka Connect's FileStreamSink does:
//!
//! ```text
//! cargo run --example file_sink -- --topic orders --out DIR [--log-dir DIR] [--set key=value]...
//! ```
//!
//! Each record becomes the line `<offset>\t<value>` in
//! `DIR/<topic>-<partition>.txt`. The sink keeps no positions of its own:
//! it subscribes with `ExtensionContext::subscribe_records`, which commits
//! its position in `__consumer_offsets` (group
//! `ferrolog.extension.file-sink.<topic>`) after each delivery it accepts,
//! and starts from there after a restart. Delivery is at least once: a
//! crash between a write and its commit writes those lines again. In a
//! cluster each broker's sink writes the partitions its broker leads, and
//! commits at the group's coordinator wherever that is.

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use actix::prelude::*;
use clap::Parser;
use ferrolog::actors::extension::{
    CommittedRecords, Extension, ExtensionContext, ExtensionError, RecordSubscription,
};
use ferrolog::broker::Broker;
use kafka_protocol::error::ResponseError;

#[derive(Parser, Debug)]
#[command(about = "A broker with a file sink: a topic's records appended to files")]
struct Args {
    #[command(flatten)]
    broker: common::BrokerArgs,
    /// The topic to write out (it must exist or be created by a client).
    #[arg(long)]
    topic: String,
    /// The directory the files go to (created when missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The extension: which topic goes to which directory.
pub struct FileSink {
    pub topic: String,
    pub out: PathBuf,
}

impl Extension for FileSink {
    type Actor = SinkActor;

    fn name(&self) -> String {
        format!("file-sink.{}", self.topic)
    }

    fn create(self, broker: ExtensionContext) -> SinkActor {
        SinkActor {
            topic: self.topic,
            out: self.out,
            broker,
            subscription: None,
        }
    }
}

pub struct SinkActor {
    topic: String,
    out: PathBuf,
    broker: ExtensionContext,
    subscription: Option<RecordSubscription>,
}

impl SinkActor {
    /// Subscribe once the topic exists. Runs at start and after every
    /// restart.
    fn begin(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.subscription.take() {
            old.cancel();
        }
        match self
            .broker
            .subscribe_records(&self.topic, ctx.address().recipient())
        {
            Ok(subscription) => {
                log::info!("file sink {} -> {} starts", self.topic, self.out.display());
                self.subscription = Some(subscription);
            }
            Err(e) => {
                log::info!("file sink waits for {}: {e}", self.topic);
                ctx.run_later(std::time::Duration::from_secs(1), |actor, ctx| {
                    actor.begin(ctx)
                });
            }
        }
    }
}

impl Actor for SinkActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.begin(ctx);
    }
}

impl actix::Supervised for SinkActor {}

impl Handler<CommittedRecords> for SinkActor {
    type Result = Result<(), ExtensionError>;

    fn handle(&mut self, delivery: CommittedRecords, _ctx: &mut Context<Self>) -> Self::Result {
        let mut lines = Vec::new();
        for record in &delivery.records {
            let value = record.value.as_deref().unwrap_or_default();
            lines.extend_from_slice(format!("{}\t", record.offset).as_bytes());
            lines.extend_from_slice(value);
            lines.push(b'\n');
        }
        let path = self.out.join(format!("{}.txt", delivery.tp));
        // An error answers the delivery, which comes again from the
        // committed position.
        let written = std::fs::create_dir_all(&self.out)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path))
            .and_then(|mut file| file.write_all(&lines).and_then(|()| file.sync_data()));
        written.map_err(|e| ExtensionError::Kafka {
            what: "write",
            code: ResponseError::KafkaStorageError.code(),
            message: format!("{}: {e}", path.display()),
        })
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let sink = FileSink {
        topic: args.topic.clone(),
        out: args.out.clone(),
    };
    common::run("file_sink", &args.broker, move |config| {
        Broker::builder(config).with_extension(sink)
    })
}
