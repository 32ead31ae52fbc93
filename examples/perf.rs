//! A client-throughput tool in the spirit of librdkafka's
//! `rdkafka_performance`, written with the rdkafka crate, for benchmarking a
//! Kafka-compatible broker (ferrolog or another) from the outside:
//!
//! ```text
//! perf create-topic --bootstrap H:P --topic T --partitions P [--replication-factor R] [--config K=V]
//! perf produce --bootstrap H:P --topic T --count N --size BYTES [--partitions P] [--acks 1] [--rate R]
//! perf consume --bootstrap H:P --topic T --count N [--partitions P] [--batch 10000]
//! ```
//!
//! `produce` sends `N` keyless records of `BYTES` bytes each through a
//! `BaseProducer` tuned for throughput (linger.ms=5, batch.size=1000000, a
//! queue big enough to never be the limit) and counts the delivery reports;
//! keyless records go through librdkafka's default partitioner, which is
//! sticky, like `rdkafka_performance` without `-p`. With `--partitions P` the
//! topic must have exactly `P` partitions (checked against Metadata first).
//!
//! `consume` reads `N` records back with a `BaseConsumer` that `assign`s every
//! partition from the beginning (no group membership, no commits: this
//! measures the log path, not group coordination), with generous fetch sizes
//! (8 MiB per partition, 24 MiB per response). It drains the consumer queue
//! with librdkafka's batch call, as confluent-kafka-python's `consume(n)`
//! does: per-record `BaseConsumer::poll` (`--batch 0`) costs about twice the
//! client CPU and made the client the limit.
//!
//! Each prints one machine-readable line on stdout:
//! `records=N bytes=B seconds=S records_per_sec=R mb_per_sec=M`, where `bytes`
//! counts record values (payloads) and a MB is 2^20 bytes. `produce` times
//! from the first send to the last delivery report; `consume`, like
//! `rdkafka_performance`, from the first record received to the last, and
//! appends `startup_seconds=T`: the time from `assign` to the first record;
//! `produce` appends `latency_p50_ms`, `latency_p99_ms` and
//! `latency_p999_ms`, each record's time from its hand-over to librdkafka to
//! its delivery report, in microseconds shown as ms (queueing included, as
//! `rdkafka_performance` reports it). With `--rate R` the records are handed
//! over at R per second, evenly paced, for latency at a fixed load.
//! Both append `client_cpu_seconds=C`, this process's CPU time over the run,
//! to tell a client-bound run from a broker-bound one. Progress and errors
//! go to stderr. The exit status is non-zero on any error (a failed delivery,
//! a consumer error, fewer records than asked for) and every wait is bounded
//! by `--timeout` seconds.

use std::ffi::CStr;
use std::process::ExitCode;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::bindings as rdsys;
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// Bytes in the MB of `mb_per_sec`.
const MB: f64 = 1024.0 * 1024.0;

#[derive(Parser)]
#[command(about = "Produce/consume throughput against a Kafka-compatible broker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a topic with the admin API.
    CreateTopic(CreateArgs),
    /// Produce `count` records of `size` bytes and wait for every delivery report.
    Produce(ProduceArgs),
    /// Consume `count` records from the beginning of every partition.
    Consume(ConsumeArgs),
    /// Commit offsets for `groups` groups (simple consumers, no
    /// membership): each round commits every partition of the topic once
    /// per group, in one OffsetCommit.
    CommitOffsets(CommitArgs),
}

#[derive(Args)]
struct CommitArgs {
    #[command(flatten)]
    common: Common,
    /// Groups `perf-group-0..`.
    #[arg(long)]
    groups: usize,
    /// Commits of every partition per group.
    #[arg(long)]
    rounds: usize,
}

#[derive(Args)]
struct Common {
    /// Bootstrap server, host:port.
    #[arg(long)]
    bootstrap: String,
    /// Topic name.
    #[arg(long)]
    topic: String,
    /// Upper bound, in seconds, on the whole command.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Extra librdkafka settings, `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Args)]
struct CreateArgs {
    #[command(flatten)]
    common: Common,
    /// Partition count.
    #[arg(long)]
    partitions: i32,
    /// Replicas per partition.
    #[arg(long, default_value_t = 1)]
    replication_factor: i32,
    /// A topic config, `key=value` (repeatable), e.g. `flush.messages=1`.
    #[arg(long = "config")]
    configs: Vec<String>,
}

#[derive(Args)]
struct ProduceArgs {
    #[command(flatten)]
    common: Common,
    /// Records to send.
    #[arg(long)]
    count: u64,
    /// Value size in bytes.
    #[arg(long)]
    size: usize,
    /// Expected partition count of the topic (checked before producing).
    #[arg(long)]
    partitions: Option<i32>,
    /// `acks`: 0, 1 or -1/all.
    #[arg(long, default_value = "1")]
    acks: String,
    /// Records per second, evenly paced (default: as fast as the client can).
    #[arg(long)]
    rate: Option<f64>,
}

#[derive(Args)]
struct ConsumeArgs {
    #[command(flatten)]
    common: Common,
    /// Records to read (the command ends once it has them).
    #[arg(long)]
    count: u64,
    /// Partitions to assign, 0..P (default: every partition in Metadata).
    #[arg(long)]
    partitions: Option<i32>,
    /// Records taken from librdkafka per call of its batch API
    /// (`rd_kafka_consume_batch_queue`, as confluent-kafka-python's
    /// `consume(n)`); 0 polls one record at a time with `BaseConsumer::poll`.
    #[arg(long, default_value_t = 10000)]
    batch: usize,
}

fn main() -> ExitCode {
    // librdkafka's log lines (e.g. with `--set debug=fetch`) go through `log`:
    // RUST_LOG=rdkafka=debug shows them.
    env_logger::init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::CreateTopic(args) => create_topic(&args),
        Command::Produce(args) => produce(&args),
        Command::Consume(args) => consume(&args),
        Command::CommitOffsets(args) => commit_offsets(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("perf: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn client_config(common: &Common) -> Result<ClientConfig, String> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &common.bootstrap)
        .set("broker.address.family", "v4")
        .set("socket.timeout.ms", "30000");
    for pair in &common.set {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("--set {pair}: expected key=value"))?;
        config.set(key, value);
    }
    Ok(config)
}

/// User + system CPU time this process (all its threads, librdkafka's
/// included) has used, in seconds.
fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Prints the result line; `extra` (e.g. ` startup_seconds=0.1`) is appended.
fn report(records: u64, bytes: u64, elapsed: Duration, extra: &str) {
    let seconds = elapsed.as_secs_f64().max(1e-9);
    println!(
        "records={records} bytes={bytes} seconds={seconds:.3} records_per_sec={:.0} mb_per_sec={:.2}{extra}",
        records as f64 / seconds,
        bytes as f64 / MB / seconds
    );
}

/// The partition count Metadata reports for `topic`, once the topic exists
/// with no error (retried until `deadline`).
fn partition_count<C: ClientContext>(
    client: &rdkafka::client::Client<C>,
    topic: &str,
    deadline: Instant,
) -> Result<i32, String> {
    let mut last = String::from("no answer");
    while Instant::now() < deadline {
        match client.fetch_metadata(Some(topic), Duration::from_secs(10)) {
            Ok(metadata) => match metadata.topics().iter().find(|t| t.name() == topic) {
                Some(t) if t.error().is_none() && !t.partitions().is_empty() => {
                    return Ok(t.partitions().len() as i32)
                }
                Some(t) => last = format!("topic error {:?}", t.error()),
                None => last = "topic missing from Metadata".to_string(),
            },
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("Metadata for {topic}: {last}"))
}

fn create_topic(args: &CreateArgs) -> Result<(), String> {
    let common = &args.common;
    let deadline = Instant::now() + Duration::from_secs(common.timeout);
    let admin: AdminClient<DefaultClientContext> = client_config(common)?
        .create()
        .map_err(|e| format!("admin client: {e}"))?;
    let options = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(30)))
        .operation_timeout(Some(Duration::from_secs(30)));
    let mut topic = NewTopic::new(
        &common.topic,
        args.partitions,
        TopicReplication::Fixed(args.replication_factor),
    );
    for pair in &args.configs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("--config {pair}: expected key=value"))?;
        topic = topic.set(key, value);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let results = runtime
        .block_on(admin.create_topics([&topic], &options))
        .map_err(|e| format!("CreateTopics: {e}"))?;
    for result in results {
        if let Err((name, code)) = result {
            return Err(format!("CreateTopics {name}: {code:?}"));
        }
    }
    // Wait until Metadata shows the topic with its partitions.
    let found = partition_count(admin.inner(), &common.topic, deadline)?;
    if found != args.partitions {
        return Err(format!(
            "{} has {found} partitions, asked for {}",
            common.topic, args.partitions
        ));
    }
    eprintln!("perf: created {} with {found} partitions", common.topic);
    Ok(())
}

/// What a consumer has received so far.
struct Tally {
    records: u64,
    bytes: u64,
    errors: u64,
    first_record: Option<Instant>,
    last_progress: Instant,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            records: 0,
            bytes: 0,
            errors: 0,
            first_record: None,
            last_progress: Instant::now(),
        }
    }

    fn record(&mut self, payload_len: usize) {
        if self.first_record.is_none() {
            self.first_record = Some(Instant::now());
        }
        self.records += 1;
        self.bytes += payload_len as u64;
    }

    fn progressed(&mut self) {
        self.last_progress = Instant::now();
    }

    fn error(&mut self, error: &str) {
        self.errors += 1;
        if self.errors <= 10 {
            eprintln!("perf: consume error: {error}");
        }
    }

    /// Nothing for a long time: the records are not coming.
    fn stalled(&self) -> bool {
        let stalled = self.last_progress.elapsed() > Duration::from_secs(60);
        if stalled {
            eprintln!("perf: no record for 60 s, giving up");
        }
        stalled
    }
}

/// The consumer's queue, drained with librdkafka's batch API. Declared after
/// the consumer it comes from, so it is destroyed first.
struct ConsumerQueue(*mut rdsys::rd_kafka_queue_t);

impl ConsumerQueue {
    fn of<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> Result<ConsumerQueue, String> {
        // SAFETY: the handle is a live consumer; the returned reference is
        // released in `drop`.
        let queue = unsafe { rdsys::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) };
        if queue.is_null() {
            return Err("the consumer has no consumer queue".to_string());
        }
        Ok(ConsumerQueue(queue))
    }

    /// Takes up to `slots.len()` records (waiting at most 100 ms) into `tally`.
    fn consume_batch(
        &self,
        slots: &mut [*mut rdsys::rd_kafka_message_t],
        tally: &mut Tally,
    ) -> Result<(), String> {
        // SAFETY: `slots` has room for `slots.len()` pointers; librdkafka
        // fills the first `n` with messages we own until destroyed below.
        let n = unsafe {
            rdsys::rd_kafka_consume_batch_queue(self.0, 100, slots.as_mut_ptr(), slots.len())
        };
        if n < 0 {
            // SAFETY: reads this thread's last librdkafka error.
            let code = unsafe { rdsys::rd_kafka_last_error() };
            return Err(format!("rd_kafka_consume_batch_queue: {code:?}"));
        }
        if n > 0 {
            tally.progressed();
        }
        for &message in &slots[..n as usize] {
            // SAFETY: `message` is one of the `n` valid messages returned,
            // read once and destroyed once.
            unsafe {
                let m = &*message;
                if m.err == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                    tally.record(m.len);
                } else {
                    let text = CStr::from_ptr(rdsys::rd_kafka_message_errstr(message));
                    tally.error(&format!("{:?}: {}", m.err, text.to_string_lossy()));
                }
                rdsys::rd_kafka_message_destroy(message);
            }
        }
        Ok(())
    }
}

impl Drop for ConsumerQueue {
    fn drop(&mut self) {
        // SAFETY: releases the reference taken in `of`, once.
        unsafe { rdsys::rd_kafka_queue_destroy(self.0) }
    }
}

/// Counts delivery reports; prints client errors and the first few failed deliveries.
struct PerfContext {
    delivered: AtomicU64,
    failed: AtomicU64,
    /// The instant the records' send times are counted from.
    start: Instant,
    /// Each delivered record's latency, µs: from its hand-over to librdkafka
    /// (its delivery opaque: µs since `start`) to its delivery report.
    latencies_us: std::sync::Mutex<Vec<u32>>,
}

impl Default for PerfContext {
    fn default() -> Self {
        PerfContext {
            delivered: AtomicU64::default(),
            failed: AtomicU64::default(),
            start: Instant::now(),
            latencies_us: std::sync::Mutex::default(),
        }
    }
}

impl PerfContext {
    fn micros_since_start(&self) -> usize {
        self.start.elapsed().as_micros() as usize
    }
}

impl ClientContext for PerfContext {
    fn error(&self, error: KafkaError, reason: &str) {
        eprintln!("perf: client error: {error}: {reason}");
    }
}

impl ConsumerContext for PerfContext {}

impl ProducerContext for PerfContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_at_us: usize) {
        match result {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                let latency = self.micros_since_start().saturating_sub(sent_at_us);
                if let Ok(mut latencies) = self.latencies_us.lock() {
                    latencies.push(latency.min(u32::MAX as usize) as u32);
                }
            }
            Err((error, message)) => {
                let failed = self.failed.fetch_add(1, Ordering::Relaxed);
                if failed < 10 {
                    eprintln!(
                        "perf: delivery failed (partition {}): {error}",
                        message.partition()
                    );
                }
            }
        }
    }
}

/// ` latency_p50_ms=.. latency_p99_ms=.. latency_p999_ms=..` over the
/// delivered records.
fn latency_percentiles(context: &PerfContext) -> String {
    let Ok(mut latencies) = context.latencies_us.lock() else {
        return String::new();
    };
    if latencies.is_empty() {
        return String::new();
    }
    latencies.sort_unstable();
    let at = |q: f64| f64::from(latencies[((latencies.len() - 1) as f64 * q) as usize]) / 1000.0;
    format!(
        " latency_p50_ms={:.3} latency_p99_ms={:.3} latency_p999_ms={:.3}",
        at(0.50),
        at(0.99),
        at(0.999)
    )
}

fn produce(args: &ProduceArgs) -> Result<(), String> {
    let common = &args.common;
    let deadline = Instant::now() + Duration::from_secs(common.timeout);
    let mut config = client_config(common)?;
    config
        .set("acks", &args.acks)
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "2000000")
        .set("queue.buffering.max.kbytes", "2097151")
        .set("compression.type", "none")
        .set("message.timeout.ms", "120000");
    // --set may override any of the above.
    for pair in &common.set {
        if let Some((key, value)) = pair.split_once('=') {
            config.set(key, value);
        }
    }
    let producer: BaseProducer<PerfContext> = config
        .create_with_context(PerfContext::default())
        .map_err(|e| format!("producer: {e}"))?;

    if let Some(expected) = args.partitions {
        let found = partition_count(producer.client(), &common.topic, deadline)?;
        if found != expected {
            return Err(format!(
                "{} has {found} partitions, expected {expected}",
                common.topic
            ));
        }
    }

    // Values: a fixed, non-repeating-looking pattern (no compression is used).
    let payload: Vec<u8> = (0..args.size)
        .map(|i| (i.wrapping_mul(131) % 251) as u8)
        .collect();
    let topic = common.topic.as_str();
    let cpu_before = process_cpu_seconds();
    let start = Instant::now();
    let mut enqueue_errors = 0u64;
    let pace = args.rate.filter(|rate| *rate > 0.0).map(|rate| 1.0 / rate);
    for sent in 0..args.count {
        if let Some(interval) = pace {
            // Evenly paced from the start: a late record is sent at once,
            // and the ones after it keep the schedule.
            let due = start + Duration::from_secs_f64(interval * sent as f64);
            let now = Instant::now();
            if due > now {
                producer.poll(due - now);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
        }
        let sent_at = producer.context().micros_since_start();
        let mut record =
            BaseRecord::<(), [u8], usize>::with_opaque_to(topic, sent_at).payload(&payload[..]);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    if Instant::now() >= deadline {
                        return Err(format!("timed out with {sent} records enqueued"));
                    }
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
                Err((error, _)) => {
                    enqueue_errors += 1;
                    if enqueue_errors <= 10 {
                        eprintln!("perf: send failed: {error}");
                    }
                    break;
                }
            }
        }
        if sent % 1024 == 0 || pace.is_some() {
            producer.poll(Duration::ZERO);
        }
    }
    // Wait for every delivery report, bounded by the deadline.
    while producer.in_flight_count() > 0 && Instant::now() < deadline {
        producer.poll(Duration::from_millis(50));
    }
    let elapsed = start.elapsed();
    let context = producer.context();
    let delivered = context.delivered.load(Ordering::Relaxed);
    let failed = context.failed.load(Ordering::Relaxed);
    let in_flight = producer.in_flight_count();
    report(
        delivered,
        delivered * args.size as u64,
        elapsed,
        &format!(
            " client_cpu_seconds={:.2}{}",
            process_cpu_seconds() - cpu_before,
            latency_percentiles(context)
        ),
    );
    if failed > 0 || enqueue_errors > 0 || delivered != args.count || in_flight > 0 {
        return Err(format!(
            "delivered {delivered} of {}: {failed} delivery errors, {enqueue_errors} send errors, {in_flight} still in flight",
            args.count
        ));
    }
    Ok(())
}

fn consume(args: &ConsumeArgs) -> Result<(), String> {
    let common = &args.common;
    let deadline = Instant::now() + Duration::from_secs(common.timeout);
    let mut config = client_config(common)?;
    config
        // librdkafka refuses `assign()` without a group.id; nothing here
        // subscribes or commits, so the group is never used.
        .set("group.id", "ferrolog-perf-no-group")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        // Generous, but a whole response stays under 32 MiB: bigger ones
        // (10 MiB x 8 partitions) cost librdkafka fresh mmap'd buffers and
        // page faults on every fetch, ~40% more client CPU per byte here.
        .set("fetch.max.bytes", "25165824")
        .set("max.partition.fetch.bytes", "8388608")
        .set("receive.message.max.bytes", "26214400")
        .set("queued.min.messages", "1000000")
        .set("queued.max.messages.kbytes", "1048576");
    for pair in &common.set {
        if let Some((key, value)) = pair.split_once('=') {
            config.set(key, value);
        }
    }
    let consumer: BaseConsumer<PerfContext> = config
        .create_with_context(PerfContext::default())
        .map_err(|e| format!("consumer: {e}"))?;
    let partitions = match args.partitions {
        Some(p) => p,
        None => partition_count(consumer.client(), &common.topic, deadline)?,
    };
    let mut list = TopicPartitionList::new();
    for partition in 0..partitions {
        list.add_partition_offset(&common.topic, partition, Offset::Beginning)
            .map_err(|e| format!("assign list: {e}"))?;
    }

    let cpu_before = process_cpu_seconds();
    let start = Instant::now();
    consumer.assign(&list).map_err(|e| format!("assign: {e}"))?;
    let mut tally = Tally::new();
    if args.batch == 0 {
        while tally.records < args.count && Instant::now() < deadline && !tally.stalled() {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(message)) => {
                    tally.record(message.payload_len());
                    tally.progressed();
                }
                Some(Err(error)) => tally.error(&error.to_string()),
                None => {}
            }
        }
    } else {
        let queue = ConsumerQueue::of(&consumer)?;
        let mut slots: Vec<*mut rdsys::rd_kafka_message_t> = vec![ptr::null_mut(); args.batch];
        while tally.records < args.count && Instant::now() < deadline && !tally.stalled() {
            // Never ask for more than is left: the call waits for a full batch
            // (or the timeout).
            let want = (args.count - tally.records).min(args.batch as u64) as usize;
            queue.consume_batch(&mut slots[..want], &mut tally)?;
        }
    }
    let Tally {
        records,
        bytes,
        errors,
        first_record,
        ..
    } = tally;
    // As rdkafka_performance does, the rate is measured from the first
    // record: connecting, the group coordinator lookup librdkafka makes even
    // for `assign()`, and ListOffsets are reported apart as `startup_seconds`.
    let end = Instant::now();
    let first = first_record.unwrap_or(end);
    report(
        records,
        bytes,
        end - first,
        &format!(
            " startup_seconds={:.3} client_cpu_seconds={:.2}",
            (first - start).as_secs_f64(),
            process_cpu_seconds() - cpu_before
        ),
    );
    if errors > 0 || records != args.count {
        return Err(format!(
            "consumed {records} of {} with {errors} errors",
            args.count
        ));
    }
    Ok(())
}

fn commit_offsets(args: &CommitArgs) -> Result<(), String> {
    use rdkafka::consumer::CommitMode;
    let common = &args.common;
    let consumers: Vec<BaseConsumer> = (0..args.groups)
        .map(|group| {
            client_config(common)?
                .set("group.id", format!("perf-group-{group}"))
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| format!("consumer: {e}"))
        })
        .collect::<Result<_, String>>()?;
    let partitions = match consumers.first() {
        Some(consumer) => partition_count(
            consumer.client(),
            &common.topic,
            Instant::now() + Duration::from_secs(10),
        )?,
        None => 0,
    };
    let started = Instant::now();
    let mut commits = 0u64;
    for round in 0..args.rounds {
        for consumer in &consumers {
            let mut list = TopicPartitionList::new();
            for partition in 0..partitions {
                list.add_partition_offset(
                    &common.topic,
                    partition,
                    Offset::Offset(round as i64 + 1),
                )
                .map_err(|e| format!("offset list: {e}"))?;
            }
            consumer
                .commit(&list, CommitMode::Sync)
                .map_err(|e| format!("commit: {e}"))?;
            commits += partitions as u64;
        }
        if started.elapsed() > Duration::from_secs(common.timeout) {
            return Err(format!("timed out after {commits} commits"));
        }
    }
    report(commits, 0, started.elapsed(), "");
    Ok(())
}
