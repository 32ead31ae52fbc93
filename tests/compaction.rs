//! Log compaction: the cleaner on real segment files (storage level), and
//! the broker's cleaner with real clients and a crash at each swap step.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, Offset, TopicPartitionList};

use bytes::Bytes;
use ferrolog::storage::cleaner::{clean, CleanerLimits};
use ferrolog::storage::config::CleanupPolicy;
use ferrolog::storage::testing::keyed_batch;
use ferrolog::storage::{LoadOptions, LogConfig, PartitionLog};
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

fn compacted(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        cleanup_policy: CleanupPolicy::COMPACT,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: 0,
        ..LogConfig::default()
    }
}

/// Every record of the log: (offset, key, value).
fn read_all(log: &PartitionLog) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let Some(region) = log.read(offset, 1 << 20, None).unwrap().region else {
            break;
        };
        let mut bytes = Bytes::from(region.read_to_vec().unwrap());
        let mut next = offset;
        while !bytes.is_empty() {
            let Ok(set) = RecordBatchDecoder::decode(&mut bytes) else {
                break;
            };
            for record in set.records {
                next = record.offset + 1;
                if record.offset < offset {
                    continue;
                }
                let text = |b: Option<Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
                out.push((record.offset, text(record.key).unwrap(), text(record.value)));
            }
        }
        assert!(next > offset, "read made no progress at {offset}");
        offset = next;
    }
    out
}

/// The latest (offset, value) of each key.
fn latest(records: &[(i64, String, Option<String>)]) -> BTreeMap<String, (i64, Option<String>)> {
    records
        .iter()
        .map(|(offset, key, value)| (key.clone(), (*offset, value.clone())))
        .collect()
}

fn clean_once(log: &mut PartitionLog, now_ms: i64) -> usize {
    let task = log.clean_task(now_ms).expect("something to clean");
    let outcome = clean(&task, &CleanerLimits::default()).unwrap();
    log.swap_cleaned(&outcome, now_ms).unwrap()
}

/// Rounds of values for keys k0..k9; round r's batch is compressed on odd
/// rounds; key k9 is deleted (a tombstone) in the last round.
fn write_rounds(log: &mut PartitionLog, rounds: usize, first_timestamp: i64) {
    for round in 0..rounds {
        let values: Vec<String> = (0..10).map(|k| format!("k{k}-r{round}")).collect();
        let keys: Vec<String> = (0..10).map(|k| format!("k{k}")).collect();
        let entries: Vec<(&str, Option<&str>)> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| {
                let tombstone = round + 1 == rounds && k == "k9";
                (k.as_str(), (!tombstone).then_some(v.as_str()))
            })
            .collect();
        let compression = if round % 2 == 1 {
            Compression::Gzip
        } else {
            Compression::None
        };
        log.append(
            keyed_batch(&entries, first_timestamp + round as i64 * 10, compression),
            first_timestamp,
        )
        .unwrap();
    }
}

#[test]
fn compaction_keeps_the_latest_value_of_every_key_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("compacted", 0);
    let mut log = PartitionLog::create(dir.path(), tp.clone(), compacted(1024), 0).unwrap();
    write_rounds(&mut log, 40, 1_000);
    log.roll(2_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    let before = read_all(&log);
    let expected = latest(&before);
    let size_before = log.size_in_bytes();
    let leo = log.log_end_offset();
    let segments_before = log.segment_count();
    // Cleaned segments may merge sources up to segment.bytes.
    log.update_config(compacted(4096));

    assert!(clean_once(&mut log, 2_000) > 0);
    assert!(log.segment_count() < segments_before);
    let after = read_all(&log);
    assert_eq!(
        latest(&after),
        expected,
        "every key's latest value, at its offset"
    );
    assert_eq!(after.len(), 10, "one record per key: {after:?}");
    assert!(after.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(log.log_end_offset(), leo);
    assert!(log.size_in_bytes() < size_before / 10);
    // The tombstone of k9 stays after its first cleaning.
    assert_eq!(expected["k9"].1, None);

    // Nothing is dirty any more; the checkpointed first dirty offset
    // brings that back after a reload.
    assert!(log.cleanable(2_000).is_none());
    let first_dirty = log.cleaner_checkpoint().unwrap();
    assert_eq!(first_dirty, leo);
    log.close(3_000).unwrap();
    let (log, _) = PartitionLog::load(
        &dir.path().join(tp.dir_name()),
        tp.clone(),
        compacted(1024),
        LoadOptions {
            cleaner_offset: first_dirty,
            high_watermark: leo,
            ..LoadOptions::default()
        },
        3_000,
    )
    .unwrap();
    assert_eq!(read_all(&log), after);
    assert_eq!(log.log_end_offset(), leo);
    assert!(
        log.cleanable(3_000).is_none(),
        "the checkpoint says it is clean"
    );
    assert!(leftovers(&dir.path().join(tp.dir_name())).is_empty());
}

#[test]
fn tombstones_go_after_delete_retention_and_appends_continue_after_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("tombstones", 0);
    let mut log = PartitionLog::create(dir.path(), tp, compacted(1024), 0).unwrap();
    write_rounds(&mut log, 10, 1_000);
    log.roll(2_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    clean_once(&mut log, 2_000);
    assert!(read_all(&log)
        .iter()
        .any(|(_, k, v)| k == "k9" && v.is_none()));

    // New values for k0 only, in a later segment: the next cleaning finds
    // the tombstone in the clean part, older than delete.retention.ms (0).
    log.append(
        keyed_batch(&[("k0", Some("new"))], 5_000, Compression::None),
        5_000,
    )
    .unwrap();
    log.roll(5_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    clean_once(&mut log, 5_000);
    let after = latest(&read_all(&log));
    assert!(!after.contains_key("k9"), "tombstone removed: {after:?}");
    assert_eq!(after["k0"].1.as_deref(), Some("new"));
    assert_eq!(after.len(), 9);

    // Appends go on at the log end offset, past the gaps.
    let leo = log.log_end_offset();
    let info = log
        .append(
            keyed_batch(&[("k1", Some("later"))], 6_000, Compression::None),
            6_000,
        )
        .unwrap();
    assert_eq!(info.first_offset, leo);
}

#[test]
fn a_cleaning_whose_sources_changed_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("moved-on", 0);
    let mut log = PartitionLog::create(dir.path(), tp.clone(), compacted(1024), 0).unwrap();
    write_rounds(&mut log, 20, 1_000);
    log.roll(2_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    let task = log.clean_task(2_000).unwrap();
    let outcome = clean(&task, &CleanerLimits::default()).unwrap();
    // DeleteRecords removed the first segments meanwhile.
    let second = log.segment_base_offsets()[2];
    log.delete_records_before(second).unwrap();
    let before = latest(&read_all(&log));
    // The cleaning of the deleted segments is dropped; later groups,
    // whose sources are untouched, still go in.
    let swapped = log.swap_cleaned(&outcome, 2_000).unwrap();
    assert!(swapped < outcome.cleaned.len());
    assert_eq!(latest(&read_all(&log)), before);
    assert_eq!(log.log_start_offset(), second);
    assert!(leftovers(&dir.path().join(tp.dir_name())).is_empty());
}

/// A crash after the commit point (`.swap` files written, sources partly
/// deleted) is completed at load; one before it (`.cleaned` files) is
/// rolled back. Either way every key reads its latest value.
#[test]
fn an_interrupted_swap_recovers_to_old_or_new_segments() {
    for crash_after_commit in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("interrupted", 0);
        let partition_dir = dir.path().join(tp.dir_name());
        let mut log = PartitionLog::create(dir.path(), tp.clone(), compacted(1024), 0).unwrap();
        write_rounds(&mut log, 30, 1_000);
        log.roll(2_000).unwrap();
        log.set_high_watermark(log.log_end_offset());
        log.flush(2_000).unwrap();
        let expected = latest(&read_all(&log));
        let leo = log.log_end_offset();
        let segments_before = log.segment_count();
        log.update_config(compacted(8192));
        let task = log.clean_task(2_000).unwrap();
        let outcome = clean(&task, &CleanerLimits::default()).unwrap();
        let cleaned = &outcome.cleaned[0];
        if crash_after_commit {
            // Commit the first cleaned segment, delete one of its sources
            // (not the first), then "crash".
            for extension in ["index", "timeindex", "log"] {
                let name = |suffix: &str| {
                    partition_dir.join(format!("{:020}.{extension}{suffix}", cleaned.base_offset))
                };
                std::fs::rename(name(".cleaned"), name(".swap")).unwrap();
            }
            if let Some(&(second, _)) = cleaned.sources.get(1) {
                std::fs::remove_file(partition_dir.join(format!("{second:020}.log"))).unwrap();
            }
        }
        drop(log);
        let (log, _) = PartitionLog::load(
            &partition_dir,
            tp.clone(),
            compacted(1024),
            LoadOptions {
                recovery_point: 0,
                ..LoadOptions::default()
            },
            3_000,
        )
        .unwrap();
        let records = read_all(&log);
        assert_eq!(
            latest(&records),
            expected,
            "crash after commit: {crash_after_commit}"
        );
        assert_eq!(log.log_end_offset(), leo);
        assert!(leftovers(&partition_dir).is_empty());
        assert!(cleaned.sources.len() > 1);
        if crash_after_commit {
            assert!(
                log.segment_count() < segments_before,
                "the swap was completed"
            );
        } else {
            assert_eq!(
                log.segment_count(),
                segments_before,
                "the old segments stay"
            );
        }
    }
}

/// Files a finished load must not leave behind.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".cleaned") || name.ends_with(".swap"))
        .collect()
}

/// A broker whose cleaner looks every 200 ms and whose high watermark
/// reaches the log within 100 ms.
const CLEANER_OVERRIDES: &[&str] = &[
    "log.cleaner.backoff.ms=200",
    "replica.high.watermark.checkpoint.interval.ms=100",
];

fn create_compacted_topic(bootstrap: &str, name: &str) {
    let topic = NewTopic::new(name, 1, TopicReplication::Fixed(1))
        .set("cleanup.policy", "compact")
        .set("segment.bytes", "4096")
        .set("min.cleanable.dirty.ratio", "0.01")
        .set("delete.retention.ms", "0");
    let results =
        block_on(admin(bootstrap).create_topics([&topic], &admin_options(Duration::from_secs(10))))
            .expect("CreateTopics gets an answer");
    assert_eq!(results, vec![Ok(name.to_string())]);
}

/// What was written at each offset.
type Written = BTreeMap<i64, (String, Option<String>)>;

/// Produce `rounds` values for each of `keys` keys through librdkafka
/// (batched, lz4); key 0's last value is a tombstone. Answers the
/// expected latest value per key (None: deleted) and what each offset got.
fn produce_rounds(
    bootstrap: &str,
    topic: &str,
    keys: usize,
    rounds: usize,
) -> (BTreeMap<String, Option<String>>, Written) {
    let producer: FutureProducer = client_config(bootstrap)
        .set("linger.ms", "5")
        .set("compression.codec", "lz4")
        .create()
        .unwrap();
    let mut expected = BTreeMap::new();
    let mut written = Written::new();
    block_on(async {
        for round in 0..rounds {
            let keys_of_round: Vec<String> = (0..keys).map(|key| format!("key-{key}")).collect();
            let values: Vec<String> = (0..keys)
                .map(|key| format!("value-{key}-{round}"))
                .collect();
            let mut sends = Vec::new();
            for key in 0..keys {
                let (k, v) = (&keys_of_round[key], &values[key]);
                let tombstone = key == 0 && round + 1 == rounds;
                let mut record = FutureRecord::to(topic).key(k.as_str()).partition(0);
                if !tombstone {
                    record = record.payload(v.as_str());
                }
                expected.insert(k.clone(), (!tombstone).then(|| v.clone()));
                sends.push(producer.send(record, Duration::from_secs(10)));
            }
            for (key, send) in futures_util::future::join_all(sends)
                .await
                .into_iter()
                .enumerate()
            {
                let offset = send.expect("acknowledged").offset;
                let tombstone = key == 0 && round + 1 == rounds;
                written.insert(
                    offset,
                    (
                        keys_of_round[key].clone(),
                        (!tombstone).then(|| values[key].clone()),
                    ),
                );
            }
        }
    });
    (expected, written)
}

/// Read the whole partition: (offset, key, value) in order.
fn consume_all(bootstrap: &str, topic: &str) -> Vec<(i64, String, Option<String>)> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", "compaction-reader")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap();
    let (_, high) = consumer
        .fetch_watermarks(topic, 0, Duration::from_secs(10))
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&list).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while out.last().is_none_or(|(offset, _, _)| offset + 1 < high) {
        assert!(
            Instant::now() < deadline,
            "could not read up to {high}: {}",
            out.len()
        );
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let message = message.unwrap();
        let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
        out.push((
            message.offset(),
            text(message.key()).unwrap(),
            text(message.payload()),
        ));
    }
    out
}

fn assert_latest_values(
    records: &[(i64, String, Option<String>)],
    expected: &BTreeMap<String, Option<String>>,
) {
    assert!(
        records.windows(2).all(|w| w[0].0 < w[1].0),
        "offsets increase"
    );
    let mut latest = BTreeMap::new();
    for (_, key, value) in records {
        latest.insert(key.clone(), value.clone());
    }
    // A removed tombstone leaves its key absent: deleted all the same.
    for (key, value) in expected {
        assert_eq!(
            latest.get(key).cloned().flatten(),
            value.clone(),
            "key {key}"
        );
    }
}

/// The cleaner compacts a topic librdkafka writes to while consumers read
/// it: each key's latest value stays, at its offset; most of the rest goes.
#[test]
fn the_cleaner_compacts_what_librdkafka_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start(dir.path(), CLEANER_OVERRIDES);
    create_compacted_topic(&broker.bootstrap, "compacted");
    let (expected, written) = produce_rounds(&broker.bootstrap, "compacted", 50, 40);
    assert_eq!(written.len(), 2_000);
    broker.wait_for_line("log cleaner: cleaned compacted-0", Duration::from_secs(30));
    // Cleaning goes on as segments close; read once it has caught up.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut after = consume_all(&broker.bootstrap, "compacted");
    while after.len() > 400 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        after = consume_all(&broker.bootstrap, "compacted");
    }
    assert!(after.len() <= 400, "compacted to {} records", after.len());
    assert_latest_values(&after, &expected);
    for (offset, key, value) in &after {
        assert_eq!(
            written.get(offset),
            Some(&(key.clone(), value.clone())),
            "offset {offset} kept its record"
        );
    }
    // A clean stop records where the dirty part starts, as Kafka's
    // cleaner-offset-checkpoint does.
    let dir_path = broker.terminate();
    let checkpoint = std::fs::read_to_string(dir_path.join("cleaner-offset-checkpoint")).unwrap();
    let first_dirty: i64 = checkpoint
        .lines()
        .find_map(|line| line.strip_prefix("compacted 0 "))
        .and_then(|offset| offset.parse().ok())
        .unwrap_or_else(|| panic!("no compacted-0 line in {checkpoint:?}"));
    assert!(first_dirty > 0 && first_dirty <= 2_000, "{checkpoint}");
    // Restarted after a SIGKILL, the compacted log reads the same.
    let broker = BrokerProcess::restart_on(&dir_path, &["log.cleaner.enable=false"]);
    let dir_path = broker.kill();
    let broker = BrokerProcess::restart_on(&dir_path, &["log.cleaner.enable=false"]);
    assert_latest_values(&consume_all(&broker.bootstrap, "compacted"), &expected);
    broker.terminate();
}

/// A record without a key is refused on a compacted topic, with Kafka's
/// INVALID_RECORD and, from Produce v8, the record's index.
#[test]
fn keyless_records_are_refused_on_compacted_topics() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_compacted_topic(&broker.bootstrap, "keys-only");
    let producer: FutureProducer = client_config(&broker.bootstrap).create().unwrap();
    let keyless = block_on(producer.send(
        FutureRecord::<str, str>::to("keys-only").payload("no key"),
        Duration::from_secs(10),
    ));
    let (error, _) = keyless.expect_err("refused");
    assert!(format!("{error:?}").contains("InvalidRecord"), "{error:?}");
    let keyed = block_on(producer.send(
        FutureRecord::to("keys-only").key("k").payload("v"),
        Duration::from_secs(10),
    ));
    assert!(keyed.is_ok());

    let batch =
        ferrolog::storage::testing::keyed_batch(&[("a", Some("1"))], 1_000, Compression::None);
    let mut records = ferrolog::storage::testing::records(3, 4);
    records[2].key = None;
    let keyless = ferrolog::storage::records::encode_records(&records).unwrap();
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("keys-only")))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(keyless))])]);
    let response: ProduceResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Produce,
        8,
        &request,
        Duration::from_secs(10),
    );
    let partition = &response.responses[0].partition_responses[0];
    assert_eq!(partition.error_code, 87, "INVALID_RECORD");
    assert_eq!(partition.record_errors.len(), 1);
    assert_eq!(partition.record_errors[0].batch_index, 2);
    assert_eq!(
        common::produce_records(&broker.bootstrap, "keys-only", 0, batch, 1).error_code,
        0
    );
    broker.terminate();
}

/// SIGKILL at each step of a cleaning (a fail point makes the broker kill
/// itself there): after a restart every key reads its latest value at its
/// original offset, nothing is lost, and no `.cleaned` or `.swap` file is
/// left. Before the commit the old segments stay; after it the swap is
/// completed at load.
#[cfg(feature = "failpoints")]
#[test]
fn a_crash_at_any_cleaning_step_loses_nothing() {
    for step in [
        "cleaner.cleaned",
        "cleaner.swap.committed",
        "cleaner.swap.sources_deleted",
        "cleaner.swap.done",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let broker = BrokerProcess::start(dir.path(), &["log.cleaner.enable=false"]);
        create_compacted_topic(&broker.bootstrap, "crashing");
        let (expected, written) = produce_rounds(&broker.bootstrap, "crashing", 20, 30);
        let log_dir = broker.terminate();

        let mut overrides = CLEANER_OVERRIDES.to_vec();
        overrides.push("log.cleaner.enable=true");
        let failpoint = format!("{step}=return");
        let mut crashing = BrokerProcess::start_with_env(
            &log_dir,
            &overrides,
            &[("FAILPOINTS", failpoint.as_str())],
        );
        let status = crashing.wait_for_exit(Duration::from_secs(60));
        assert!(!status.success(), "{step}: the broker killed itself");

        let broker = BrokerProcess::restart_on(&log_dir, &["log.cleaner.enable=false"]);
        let records = consume_all(&broker.bootstrap, "crashing");
        assert_latest_values(&records, &expected);
        for (offset, key, value) in &records {
            assert_eq!(
                written.get(offset),
                Some(&(key.clone(), value.clone())),
                "{step}: offset {offset}"
            );
        }
        let partition_dir = log_dir.join("crashing-0");
        assert!(
            leftovers(&partition_dir).is_empty(),
            "{step}: {:?}",
            leftovers(&partition_dir)
        );
        if step != "cleaner.cleaned" {
            assert!(
                records.len() < written.len(),
                "{step}: the committed cleaning stands"
            );
        }
        broker.terminate();
    }
}

/// A truncation (a follower after an unclean election) whose offset falls
/// in a gap compaction left keeps the log end offset there, as Kafka's
/// `truncateTo` does: offsets consumers have seen are never given out again.
#[test]
fn truncating_into_a_compacted_gap_keeps_the_log_end_offset() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("gap", 0);
    let mut log = PartitionLog::create(dir.path(), tp.clone(), compacted(1024), 0).unwrap();
    write_rounds(&mut log, 20, 1_000);
    log.roll(2_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    clean_once(&mut log, 2_000);
    let kept: Vec<i64> = read_all(&log)
        .iter()
        .map(|(offset, _, _)| *offset)
        .collect();
    // An offset nobody holds any more, just below the first record kept.
    assert!(kept[0] > 1, "{kept:?}");
    let in_gap = kept[0] - 1;
    log.truncate_to(in_gap, 3_000).unwrap();
    assert_eq!(log.log_end_offset(), in_gap);
    assert!(read_all(&log).iter().all(|(offset, _, _)| *offset < in_gap));
    let info = log
        .append(
            keyed_batch(&[("k0", Some("after"))], 4_000, Compression::None),
            4_000,
        )
        .unwrap();
    assert_eq!(info.first_offset, in_gap);
    log.close(5_000).unwrap();
    let (log, _) = PartitionLog::load(
        &dir.path().join(tp.dir_name()),
        tp,
        compacted(1024),
        LoadOptions::default(),
        5_000,
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), in_gap + 1);
}

/// Compaction keeps each idempotent producer's last batch whole, even when
/// newer records replaced all its keys, so the producer's state can still
/// be rebuilt from the log after a crash (no snapshot).
#[test]
fn compaction_keeps_each_producers_last_batch() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("producers", 0);
    let partition_dir = dir.path().join(tp.dir_name());
    let mut log = PartitionLog::create(dir.path(), tp.clone(), compacted(1024), 0).unwrap();
    // Producer 42, epoch 0: two batches (sequences 0-1 and 2-3) of keys
    // that plain writes replace afterwards.
    for (first_sequence, keys) in [(0, ["a", "b"]), (2, ["c", "d"])] {
        let mut records =
            ferrolog::storage::testing::records_at(2, 8, 1_000 + first_sequence as i64);
        for (i, record) in records.iter_mut().enumerate() {
            record.producer_id = 42;
            record.producer_epoch = 0;
            record.sequence = first_sequence + i as i32;
            record.key = Some(Bytes::from(keys[i]));
        }
        let batch = ferrolog::storage::records::encode_records(&records).unwrap();
        log.append(batch, 1_000).unwrap();
    }
    write_rounds(&mut log, 10, 2_000);
    for key in ["a", "b", "c", "d"] {
        log.append(
            keyed_batch(&[(key, Some("plain"))], 3_000, Compression::None),
            3_000,
        )
        .unwrap();
    }
    log.roll(4_000).unwrap();
    log.set_high_watermark(log.log_end_offset());
    // One cleaned segment: with the active one, the last two segments,
    // which a load without a snapshot replays (as Kafka does).
    log.update_config(compacted(1 << 20));
    clean_once(&mut log, 4_000);
    assert_eq!(log.segment_count(), 2, "{:?}", log.segment_base_offsets());
    let kept = read_all(&log);
    // The first batch (offsets 0-1) went; the last (offsets 2-3) stayed.
    assert!(!kept.iter().any(|(offset, _, _)| *offset < 2), "{kept:?}");
    assert!(kept
        .iter()
        .any(|(offset, key, _)| *offset == 2 && key == "c"));
    assert!(kept
        .iter()
        .any(|(offset, key, _)| *offset == 3 && key == "d"));
    // A crash, and no snapshot: the state comes back from the kept batch.
    drop(log);
    for entry in std::fs::read_dir(&partition_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "snapshot") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let (log, _) = PartitionLog::load(
        &partition_dir,
        tp,
        compacted(1 << 20),
        LoadOptions::default(),
        5_000,
    )
    .unwrap();
    assert_eq!(log.producer_last_sequence(42), Some((0, 3)));
}

/// `__consumer_offsets` is created compacted; one that is not (written by
/// an older ferrolog: `cleanup.policy=delete`) is converted at start, with
/// a log line, and the committed offsets are still there.
#[test]
fn the_offsets_topic_is_compacted_and_converted_at_start() {
    use rdkafka::admin::{AlterConfig, ResourceSpecifier};
    use rdkafka::consumer::CommitMode;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["offsets.topic.num.partitions=1"]);
    create_compacted_topic(&broker.bootstrap, "tracked");
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "converted")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset("tracked", 0, Offset::Offset(42))
        .unwrap();
    consumer.commit(&offsets, CommitMode::Sync).unwrap();
    let policy = |bootstrap: &str| {
        let described = block_on(admin(bootstrap).describe_configs(
            [&ResourceSpecifier::Topic("__consumer_offsets")],
            &admin_options(Duration::from_secs(10)),
        ))
        .unwrap();
        let resource = described.into_iter().next().unwrap().unwrap();
        resource.get("cleanup.policy").and_then(|e| e.value.clone())
    };
    assert_eq!(policy(&broker.bootstrap).as_deref(), Some("compact"));
    // What an older broker left: a delete-policy offsets topic.
    let old = AlterConfig::new(ResourceSpecifier::Topic("__consumer_offsets"))
        .set("cleanup.policy", "delete")
        .set("retention.ms", "-1");
    let altered = block_on(
        admin(&broker.bootstrap).alter_configs([&old], &admin_options(Duration::from_secs(10))),
    )
    .unwrap();
    assert!(altered.iter().all(|r| r.is_ok()), "{altered:?}");
    assert_eq!(policy(&broker.bootstrap).as_deref(), Some("delete"));
    drop(consumer);
    let log_dir = broker.terminate();

    let mut broker = BrokerProcess::restart_on(&log_dir, &["offsets.topic.num.partitions=1"]);
    broker.wait_for_line(
        "__consumer_offsets is now cleanup.policy=compact",
        Duration::from_secs(20),
    );
    assert_eq!(policy(&broker.bootstrap).as_deref(), Some("compact"));
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "converted")
        .create()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let committed = consumer.committed_offsets(offsets.clone(), Duration::from_secs(10));
        if let Ok(committed) = committed {
            if committed.find_partition("tracked", 0).map(|p| p.offset())
                == Some(Offset::Offset(42))
            {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the commit of 42 is gone");
        std::thread::sleep(Duration::from_millis(200));
    }
    broker.terminate();
}
