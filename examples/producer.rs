//! Send records to a Kafka-compatible broker with the rdkafka crate:
//!
//! ```text
//! cargo run --example producer -- --bootstrap HOST:PORT --topic T --count N [--acks all] [--timeout SECONDS]
//! ```
//!
//! Sends `N` records with key `key-<i>` and value `message-<i>` (i from 0)
//! through a `FutureProducer`, waits for every delivery report and prints
//! `delivered N` on stdout. The topic is auto-created by the broker if it
//! does not exist. Every wait is bounded by `--timeout`; the exit status is
//! non-zero if any record was not delivered.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use futures_util::future::join_all;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};

#[derive(Parser, Debug)]
#[command(about = "Produce N records with the rdkafka crate")]
struct Args {
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long)]
    count: usize,
    /// 0, 1 or all.
    #[arg(long, default_value = "all")]
    acks: String,
    /// Longest wait for the whole run, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let timeout = Duration::from_secs(args.timeout);
    let producer: FutureProducer = match ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", &args.acks)
        .set("linger.ms", "5")
        .set("message.timeout.ms", (args.timeout * 1000).to_string())
        .create()
    {
        Ok(producer) => producer,
        Err(e) => {
            eprintln!("producer: cannot create the client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let keys: Vec<String> = (0..args.count).map(|i| format!("key-{i}")).collect();
    let values: Vec<String> = (0..args.count).map(|i| format!("message-{i}")).collect();
    let sends = keys.iter().zip(&values).map(|(key, value)| {
        producer.send(
            FutureRecord::to(&args.topic).key(key).payload(value),
            timeout,
        )
    });
    let mut delivered = 0;
    let mut failed = 0;
    for outcome in join_all(sends).await {
        match outcome {
            Ok(_) => delivered += 1,
            Err((e, message)) => {
                failed += 1;
                if failed <= 10 {
                    eprintln!("producer: not delivered: {e} ({message:?})");
                }
            }
        }
    }
    if let Err(e) = producer.flush(timeout) {
        eprintln!("producer: flush: {e}");
    }
    println!("delivered {delivered}");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("producer: {failed} record(s) not delivered");
        ExitCode::FAILURE
    }
}
