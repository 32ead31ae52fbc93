//! What a big CreateTopics costs the producers already running: a producer
//! sends one record per millisecond (acks=1) to a probe topic and records
//! each acknowledgement's latency, first for a quiet baseline window, then
//! while CreateTopics makes a topic of `--partitions` partitions (2,000 by
//! default), then for a window after it. Prints p50/p99/max for each and
//! how long the creation took:
//!
//! ```text
//! cargo run --release -- --config config/server.properties &
//! cargo run --release --example create_latency -- --bootstrap 127.0.0.1:9092 --partitions 2000
//! ```
//!
//! Quote the p99 during creation as a ratio to the baseline measured in
//! the same run: the machine is shared and absolute numbers move.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;

#[derive(Parser, Debug)]
#[command(about = "Producer latency before, during and after a big CreateTopics")]
struct Args {
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// Partitions of the topic created mid-run.
    #[arg(long, default_value_t = 2000)]
    partitions: i32,
    /// Length of the baseline and the after windows.
    #[arg(long, default_value_t = 3)]
    window_seconds: u64,
}

/// Send instants by sequence number, and the latencies measured.
#[derive(Clone, Default)]
struct Latencies(Arc<Mutex<Vec<(Instant, Duration)>>>);

impl ClientContext for Latencies {}

impl ProducerContext for Latencies {
    type DeliveryOpaque = Box<Instant>;

    fn delivery(&self, result: &DeliveryResult<'_>, sent: Box<Instant>) {
        if result.is_ok() {
            if let Ok(mut all) = self.0.lock() {
                all.push((*sent, sent.elapsed()));
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn report(name: &str, latencies: &[(Instant, Duration)], from: Instant, to: Instant) {
    let mut window: Vec<Duration> = latencies
        .iter()
        .filter(|(sent, _)| *sent >= from && *sent < to)
        .map(|(_, latency)| *latency)
        .collect();
    window.sort();
    println!(
        "{name:>8}: {:>5} records  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        window.len(),
        percentile(&window, 0.5).as_secs_f64() * 1e3,
        percentile(&window, 0.99).as_secs_f64() * 1e3,
        window.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &args.bootstrap)
        .set("broker.address.family", "v4");
    let admin: AdminClient<DefaultClientContext> = config.create().map_err(|e| e.to_string())?;
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(300)));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let suffix = std::process::id();
    let probe = format!("latency-probe-{suffix}");
    let big = format!("latency-big-{suffix}");
    rt.block_on(admin.create_topics(
        [&NewTopic::new(&probe, 1, TopicReplication::Fixed(1))],
        &options,
    ))
    .map_err(|e| e.to_string())?;

    let latencies = Latencies::default();
    let producer: BaseProducer<Latencies> = config
        .clone()
        .set("linger.ms", "0")
        .set("acks", "1")
        .create_with_context(latencies.clone())
        .map_err(|e| e.to_string())?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        let probe = probe.clone();
        std::thread::spawn(move || {
            let mut next = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let record: BaseRecord<(), str, Box<Instant>> =
                    BaseRecord::with_opaque_to(&probe, Box::new(Instant::now()))
                        .payload("probe")
                        .partition(0);
                let _ = producer.send(record);
                next += Duration::from_millis(1);
                // Serve delivery reports until the next send is due: one
                // `poll(0)` serves a single event, so after any stall the
                // reports would queue up and the latencies would measure
                // this loop, not the broker.
                producer.poll(Duration::ZERO);
                let now = Instant::now();
                if next > now {
                    producer.poll(next - now);
                }
            }
            let _ = producer.flush(Duration::from_secs(30));
        })
    };
    let window = Duration::from_secs(args.window_seconds);
    let start = Instant::now();
    std::thread::sleep(window);
    let creating = Instant::now();
    let created = rt.block_on(admin.create_topics(
        [&NewTopic::new(
            &big,
            args.partitions,
            TopicReplication::Fixed(1),
        )],
        &options,
    ));
    let created_at = Instant::now();
    std::thread::sleep(window);
    let end = Instant::now();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = sender.join();
    match created {
        Ok(results) => println!("create {big} ({} partitions): {results:?}", args.partitions),
        Err(e) => println!("create {big} failed: {e}"),
    }
    println!(
        "creation took {:.2} s",
        (created_at - creating).as_secs_f64()
    );
    let all = latencies.0.lock().map_err(|e| e.to_string())?.clone();
    report("before", &all, start, creating);
    report("during", &all, creating, created_at);
    report("after", &all, created_at, end);
    let _ = rt.block_on(admin.delete_topics(&[&probe, &big], &options));
    Ok(())
}
