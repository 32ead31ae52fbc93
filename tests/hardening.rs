//! Defects found in review of the single broker, each shown with the
//! scenario that exposed it, against a real broker process and real
//! clients.

mod common;

use std::time::{Duration, Instant};

use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

/// Retention deletes old segments and moves the log start offset in the
/// shard; the partition actor must follow, or ListOffsets EARLIEST answers
/// a deleted offset and a consumer with `auto.offset.reset=earliest` resets
/// to it forever. Here: 1 s retention, tiny segments, a retention check
/// every second; after the old segments are gone, a new group reading from
/// the earliest offset receives exactly the records still in the log.
#[test]
fn consumers_resetting_to_earliest_follow_retention() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["log.retention.check.interval.ms=1000"]);
    let topic = NewTopic::new("retained", 1, TopicReplication::Fixed(1))
        .set("retention.ms", "1000")
        .set("segment.bytes", "1000");
    let created = block_on(
        admin(&broker.bootstrap).create_topics([&topic], &admin_options(Duration::from_secs(30))),
    )
    .unwrap();
    assert_eq!(created, vec![Ok("retained".to_string())]);
    let producer: BaseProducer = client_config(&broker.bootstrap)
        .set("linger.ms", "0")
        .create()
        .unwrap();
    let send = |from: usize, to: usize| {
        for i in from..to {
            let value = format!("record-{i:04}-{}", "x".repeat(100));
            producer
                .send(BaseRecord::<(), str>::to("retained").payload(value.as_str()))
                .unwrap();
            // One batch per record: many small segments.
            producer.flush(Duration::from_secs(10)).unwrap();
        }
    };
    send(0, 40);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "watermarks")
        .create()
        .unwrap();
    // Wait (bounded) for retention to delete the old segments.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (low, _) = consumer
            .fetch_watermarks("retained", 0, Duration::from_secs(5))
            .unwrap();
        if low > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "retention never moved the log start offset"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    send(40, 45);
    let (low, high) = consumer
        .fetch_watermarks("retained", 0, Duration::from_secs(5))
        .unwrap();
    assert!(low > 0 && high == 45, "low {low}, high {high}");
    let reader: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "from-earliest")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    reader.subscribe(&["retained"]).unwrap();
    let mut offsets = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Retention keeps running: read until the last record, however many
    // older ones it deletes meanwhile.
    while offsets.last() != Some(&(high - 1)) && Instant::now() < deadline {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(200)) {
            offsets.push(m.offset());
        }
    }
    let first = *offsets.first().expect("the reader got records");
    assert!(
        first >= low,
        "first offset {first} below the log start {low}"
    );
    assert_eq!(offsets.last(), Some(&44));
}
