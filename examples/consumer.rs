//! Read records from a Kafka-compatible broker with the rdkafka crate:
//!
//! ```text
//! cargo run --example consumer -- --bootstrap HOST:PORT --topic T --count N [--timeout SECONDS]
//! ```
//!
//! Looks up the topic's partitions (Metadata), `assign`s all of them from
//! the beginning (no consumer group: nothing is committed), prints each
//! record's value on its own line on stdout, and exits 0 after `N` records.
//! If `N` records do not arrive within `--timeout` seconds it exits 1.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

#[derive(Parser, Debug)]
#[command(about = "Consume N records from the beginning with the rdkafka crate")]
struct Args {
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long)]
    count: usize,
    /// Longest wait for the whole run, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    // librdkafka wants a group.id before it allows assign(); the group is
    // never joined and nothing is committed.
    let consumer: BaseConsumer = match ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("group.id", "ferrolog-example-consumer")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .create()
    {
        Ok(consumer) => consumer,
        Err(e) => {
            eprintln!("consumer: cannot create the client: {e}");
            return ExitCode::FAILURE;
        }
    };

    // The topic may still be being created by a producer: retry, bounded.
    let partitions = loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            eprintln!("consumer: topic {} not found in time", args.topic);
            return ExitCode::FAILURE;
        }
        match consumer.fetch_metadata(Some(&args.topic), remaining.min(Duration::from_secs(5))) {
            Ok(metadata) => {
                let found = metadata
                    .topics()
                    .iter()
                    .find(|t| t.name() == args.topic && t.error().is_none())
                    .map(|t| t.partitions().iter().map(|p| p.id()).collect::<Vec<_>>());
                if let Some(partitions) = found.filter(|p| !p.is_empty()) {
                    break partitions;
                }
            }
            Err(e) => eprintln!("consumer: metadata: {e}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut assignment = TopicPartitionList::new();
    for &partition in &partitions {
        if let Err(e) = assignment.add_partition_offset(&args.topic, partition, Offset::Beginning) {
            eprintln!("consumer: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = consumer.assign(&assignment) {
        eprintln!("consumer: assign: {e}");
        return ExitCode::FAILURE;
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut received = 0;
    while received < args.count {
        if Instant::now() >= deadline {
            eprintln!(
                "consumer: only {received} of {} records within {} s",
                args.count, args.timeout
            );
            return ExitCode::FAILURE;
        }
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => eprintln!("consumer: {e}"),
            Some(Ok(message)) => {
                let value = message.payload().unwrap_or_default();
                let _ = out.write_all(value);
                let _ = out.write_all(b"\n");
                received += 1;
            }
        }
    }
    let _ = out.flush();
    eprintln!(
        "consumer: read {received} records from {} partition(s)",
        partitions.len()
    );
    ExitCode::SUCCESS
}
