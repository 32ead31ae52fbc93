//! `ferrolog perf produce|consume`: a load generator in the spirit of
//! Kafka's `kafka-producer-perf-test` and `kafka-consumer-perf-test`,
//! speaking the protocol directly (one request in flight per leader, so it
//! measures round trips as well as the broker). Records/s, MB/s and, for
//! produce, each request's latency percentiles; a progress bar on stderr
//! when it is a terminal.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, MetadataResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{error_name, CliError, Cluster};
use super::{print, ConnectionArgs};
use crate::storage::records::{encode_batch, NewRecord};

/// What `ferrolog perf` does.
#[derive(clap::Subcommand, Debug)]
pub enum PerfAction {
    /// Produce --num-records records of --record-size bytes.
    Produce {
        /// The topic (it must exist).
        #[arg(long)]
        topic: String,
        /// How many records.
        #[arg(long)]
        num_records: u64,
        /// Bytes of each record's value.
        #[arg(long, default_value_t = 100)]
        record_size: usize,
        /// Records per produce request (one batch).
        #[arg(long, default_value_t = 1000)]
        batch_records: usize,
        /// 1 or -1 (all): each request waits for its answer, so acks=0,
        /// which has none, is not offered.
        #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
        acks: i16,
    },
    /// Read --num-records records from the topic's start.
    Consume {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// How many records.
        #[arg(long)]
        num_records: u64,
    },
}

#[derive(Serialize)]
struct PerfResult {
    records: u64,
    bytes: u64,
    seconds: f64,
    records_per_sec: f64,
    mb_per_sec: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_latency_ms: Option<BTreeMap<&'static str, f64>>,
}

fn progress(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {pos}/{len} records ({per_sec})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Each partition's leader.
fn leaders(metadata: &MetadataResponse, topic: &str) -> Result<BTreeMap<i32, i32>, CliError> {
    let found = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
        .filter(|t| t.error_code == 0)
        .ok_or_else(|| CliError::Refused(format!("topic {topic} does not exist")))?;
    Ok(found
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.leader_id.0))
        .collect())
}

pub async fn run(action: PerfAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    let result = match action {
        PerfAction::Produce {
            topic,
            num_records,
            record_size,
            batch_records,
            acks,
        } => {
            produce(
                &cluster,
                &metadata,
                &topic,
                num_records,
                record_size,
                batch_records.max(1),
                acks,
            )
            .await?
        }
        PerfAction::Consume { topic, num_records } => {
            consume(&cluster, &metadata, &topic, num_records).await?
        }
    };
    print(args.json, &result, || {
        let mut line = format!(
            "{} records, {} bytes in {:.3} s: {:.0} records/s, {:.2} MB/s",
            result.records, result.bytes, result.seconds, result.records_per_sec, result.mb_per_sec
        );
        if let Some(latency) = &result.request_latency_ms {
            let parts: Vec<String> = latency
                .iter()
                .map(|(k, v)| format!("{k} {v:.1} ms"))
                .collect();
            line.push_str(&format!("; request latency {}", parts.join(", ")));
        }
        line
    });
    Ok(())
}

fn figures(records: u64, bytes: u64, took: Duration) -> PerfResult {
    let seconds = took.as_secs_f64().max(1e-9);
    PerfResult {
        records,
        bytes,
        seconds,
        records_per_sec: records as f64 / seconds,
        mb_per_sec: bytes as f64 / seconds / (1024.0 * 1024.0),
        request_latency_ms: None,
    }
}

async fn produce(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    topic: &str,
    num_records: u64,
    record_size: usize,
    batch_records: usize,
    acks: i16,
) -> Result<PerfResult, CliError> {
    if !matches!(acks, 1 | -1) {
        return Err(CliError::Usage(format!("--acks {acks}: 1 or -1")));
    }
    let leaders = leaders(metadata, topic)?;
    let partitions: Vec<(i32, i32)> = leaders.into_iter().collect();
    let value = Bytes::from(vec![b'x'; record_size]);
    let bar = progress(num_records);
    let mut latencies = Vec::new();
    let started = Instant::now();
    let mut sent = 0u64;
    let mut turn = 0usize;
    while sent < num_records {
        let count = (num_records - sent).min(batch_records as u64) as usize;
        let (partition, leader) = partitions[turn % partitions.len()];
        turn += 1;
        let records: Vec<NewRecord> = (0..count)
            .map(|_| NewRecord {
                value: Some(value.clone()),
                ..NewRecord::default()
            })
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let batch = encode_batch(&records, now).map_err(|e| CliError::Usage(e.to_string()))?;
        let request = ProduceRequest::default()
            .with_acks(acks)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch))])]);
        let asked = Instant::now();
        let answer: ProduceResponse = cluster
            .ask(BrokerId(leader), metadata, ApiKey::Produce, 9, &request)
            .await?;
        for t in &answer.responses {
            if let Some(p) = t.partition_responses.iter().find(|p| p.error_code != 0) {
                return Err(CliError::Refused(format!(
                    "producing to {topic}-{}: {}",
                    p.index,
                    error_name(p.error_code)
                )));
            }
        }
        latencies.push(asked.elapsed());
        sent += count as u64;
        bar.set_position(sent);
    }
    bar.finish_and_clear();
    let mut result = figures(sent, sent * record_size as u64, started.elapsed());
    latencies.sort();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[index].as_secs_f64() * 1000.0
    };
    if !latencies.is_empty() {
        result.request_latency_ms = Some(BTreeMap::from([
            ("p50", at(0.5)),
            ("p99", at(0.99)),
            ("p999", at(0.999)),
        ]));
    }
    Ok(result)
}

async fn consume(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    topic: &str,
    num_records: u64,
) -> Result<PerfResult, CliError> {
    let leaders = leaders(metadata, topic)?;
    let mut next: BTreeMap<i32, i64> = leaders.keys().map(|&p| (p, 0)).collect();
    let bar = progress(num_records);
    let started = Instant::now();
    let (mut records, mut bytes) = (0u64, 0u64);
    let mut idle = Instant::now();
    while records < num_records {
        let mut by_leader: BTreeMap<i32, Vec<(i32, i64)>> = BTreeMap::new();
        for (&p, &leader) in &leaders {
            by_leader.entry(leader).or_default().push((p, next[&p]));
        }
        let mut progressed = false;
        for (leader, partitions) in by_leader {
            let fetched = cluster
                .fetch_entries(metadata, topic, leader, &partitions)
                .await?;
            for (partition, entries) in fetched {
                for entry in entries {
                    let header = entry.header;
                    let position = next.entry(partition).or_default();
                    let first = header.first_offset().unwrap_or(*position).max(*position);
                    records += (header.last_offset + 1 - first).max(0) as u64;
                    bytes += header.size as u64;
                    *position = header.last_offset + 1;
                    progressed = true;
                }
            }
        }
        bar.set_position(records.min(num_records));
        if progressed {
            idle = Instant::now();
        } else if idle.elapsed() > Duration::from_secs(30) {
            return Err(CliError::Refused(format!(
                "read {records} of {num_records} records, then nothing for 30 s"
            )));
        }
    }
    bar.finish_and_clear();
    Ok(figures(records, bytes, started.elapsed()))
}
