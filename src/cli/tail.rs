//! `ferrolog tail`: read a topic and print its records, as
//! `kafka-console-consumer` or `kcat -C` do: Fetch from each partition's
//! leader, without a group (nothing is committed).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::connection::{error_name, CliError, Cluster};
use super::ConnectionArgs;
use crate::storage::batch::decode_entry;

/// `ferrolog tail`'s arguments.
#[derive(clap::Args, Debug)]
pub struct TailArgs {
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Only this partition (default: every one).
    #[arg(long)]
    partition: Option<i32>,
    /// Start at each partition's first record (default: its end, so only
    /// new records print).
    #[arg(long)]
    from_beginning: bool,
    /// Stop after this many records.
    #[arg(long)]
    max_messages: Option<u64>,
    /// Stop after this many milliseconds without a new record (default:
    /// never).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// How to print each record: %t topic, %p partition, %o offset, %k key,
    /// %v value, %T timestamp (ms), %% a percent sign.
    #[arg(long, default_value = "%v")]
    format: String,
    /// How to reach the cluster.
    #[command(flatten)]
    connection: ConnectionArgs,
}

/// One record to print.
struct Printed<'a> {
    topic: &'a str,
    partition: i32,
    offset: i64,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

fn render(format: &str, r: &Printed<'_>) -> String {
    let text =
        |b: Option<&[u8]>| b.map_or(String::new(), |b| String::from_utf8_lossy(b).into_owned());
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push_str(r.topic),
            Some('p') => out.push_str(&r.partition.to_string()),
            Some('o') => out.push_str(&r.offset.to_string()),
            Some('T') => out.push_str(&r.timestamp.to_string()),
            Some('k') => out.push_str(&text(r.key)),
            Some('v') => out.push_str(&text(r.value)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

pub async fn run(args: &TailArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(&args.connection).await?;
    let Some(topic) = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == args.topic))
    else {
        return Err(CliError::Refused(format!(
            "topic {} does not exist",
            args.topic
        )));
    };
    if topic.error_code != 0 {
        return Err(CliError::Refused(format!(
            "topic {}: {}",
            args.topic,
            error_name(topic.error_code)
        )));
    }
    // partition -> leader
    let leaders: BTreeMap<i32, i32> = topic
        .partitions
        .iter()
        .filter(|p| {
            args.partition
                .is_none_or(|wanted| wanted == p.partition_index)
        })
        .map(|p| (p.partition_index, p.leader_id.0))
        .collect();
    if leaders.is_empty() {
        return Err(CliError::Usage(format!(
            "{} has no partition {:?}",
            args.topic, args.partition
        )));
    }
    let start = if args.from_beginning { -2 } else { -1 };
    let mut positions = start_offsets(&cluster, &metadata, &args.topic, &leaders, start).await?;
    let mut printed = 0u64;
    let mut last_record = Instant::now();
    let stdout = std::io::stdout();
    loop {
        for (leader, partitions) in by_leader(&leaders, &positions) {
            let fetched = cluster
                .fetch_entries(&metadata, &args.topic, leader, &partitions)
                .await?;
            for (partition, entries) in fetched {
                for entry in entries {
                    let decoded = decode_entry(&entry.bytes, 0)
                        .map_err(|e| CliError::Refused(format!("decoding: {e}")))?;
                    let position = positions.entry(partition).or_default();
                    for record in decoded.iter().filter(|r| r.offset >= *position) {
                        let line = render(
                            &args.format,
                            &Printed {
                                topic: &args.topic,
                                partition,
                                offset: record.offset,
                                timestamp: record.timestamp,
                                key: record.key.as_deref(),
                                value: record.value.as_deref(),
                            },
                        );
                        let _ = writeln!(stdout.lock(), "{line}");
                        printed += 1;
                        last_record = Instant::now();
                        if args.max_messages.is_some_and(|max| printed >= max) {
                            return Ok(());
                        }
                    }
                    *position = (*position).max(entry.header.last_offset + 1);
                }
            }
        }
        if args
            .timeout_ms
            .is_some_and(|ms| last_record.elapsed() >= Duration::from_millis(ms))
        {
            return Ok(());
        }
    }
}

/// Each partition's first offset to read: earliest (-2) or latest (-1).
async fn start_offsets(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    topic: &str,
    leaders: &BTreeMap<i32, i32>,
    timestamp: i64,
) -> Result<BTreeMap<i32, i64>, CliError> {
    let mut offsets = BTreeMap::new();
    let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (&p, &leader) in leaders {
        by_leader.entry(leader).or_default().push(p);
    }
    for (leader, partitions) in by_leader {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&p| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_timestamp(timestamp)
                        })
                        .collect(),
                )]);
        let answered: ListOffsetsResponse = cluster
            .ask(BrokerId(leader), metadata, ApiKey::ListOffsets, 6, &request)
            .await?;
        for t in answered.topics {
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(CliError::Refused(format!(
                        "finding where {topic}-{} starts: {}",
                        p.partition_index,
                        error_name(p.error_code)
                    )));
                }
                offsets.insert(p.partition_index, p.offset);
            }
        }
    }
    Ok(offsets)
}

/// The partitions to fetch, grouped by leader, with their next offsets.
fn by_leader(
    leaders: &BTreeMap<i32, i32>,
    positions: &BTreeMap<i32, i64>,
) -> BTreeMap<i32, Vec<(i32, i64)>> {
    let mut grouped: BTreeMap<i32, Vec<(i32, i64)>> = BTreeMap::new();
    for (&p, &leader) in leaders {
        grouped
            .entry(leader)
            .or_default()
            .push((p, positions.get(&p).copied().unwrap_or(0)));
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_name_each_field() {
        let r = Printed {
            topic: "t",
            partition: 2,
            offset: 7,
            timestamp: 1000,
            key: Some(b"k"),
            value: Some(b"v"),
        };
        assert_eq!(
            render("%t/%p@%o %k=%v %T 100%% %x", &r),
            "t/2@7 k=v 1000 100% %x"
        );
        assert_eq!(render("%v", &Printed { value: None, ..r }), "");
    }
}
