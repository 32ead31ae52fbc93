//! `offsets.retention.minutes`: committed offsets of a group without
//! members expire that long after their commit (after the group became
//! Empty, for groups that had members), checked every
//! `offsets.retention.check.interval.ms`. The broker runs in-process on a
//! manual clock, so "a day later" takes no time; clients speak raw
//! OffsetCommit/OffsetFetch over a socket.

mod common;

use std::sync::Arc;
use std::time::Duration;

use ferrolog::broker::Broker;
use ferrolog::clock::{Clock, ManualClock, SystemClock};
use ferrolog::config::BrokerConfig;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, MetadataRequest,
    MetadataResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const TIMEOUT: Duration = Duration::from_secs(10);

fn commit(bootstrap: &str, offset: i64) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("standalone")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("expiring")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let response: OffsetCommitResponse =
        common::raw_request(bootstrap, ApiKey::OffsetCommit, 7, &request, TIMEOUT);
    response.topics[0].partitions[0].error_code
}

fn committed(bootstrap: &str) -> i64 {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("standalone")))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("expiring")))
            .with_partition_indexes(vec![0])]));
    let response: OffsetFetchResponse =
        common::raw_request(bootstrap, ApiKey::OffsetFetch, 7, &request, TIMEOUT);
    response.topics[0].partitions[0].committed_offset
}

/// A standalone commit (generation -1, no member) survives until
/// `offsets.retention.minutes` after it was made, then OffsetFetch answers
/// -1 (checked with a 50 ms check interval and a clock moved by hand).
#[test]
fn committed_offsets_expire_after_the_retention() {
    let dir = tempfile::tempdir().unwrap();
    let properties = format!(
        "log.dirs={}\nlisteners=PLAINTEXT://127.0.0.1:0\nhttp.listener=http://127.0.0.1:0\noffsets.topic.replication.factor=1\n\
         offsets.topic.num.partitions=3\noffsets.retention.minutes=60\n\
         offsets.retention.check.interval.ms=50\n",
        dir.path().display()
    );
    let config = BrokerConfig::from_properties(&properties, &[]).unwrap().0;
    let clock = ManualClock::new(SystemClock.now_ms());
    actix_rt::System::new().block_on(async move {
        let broker = Broker::builder(config)
            .with_clock(Arc::new(clock.clone()))
            .start()
            .await
            .unwrap();
        let bootstrap = broker.bound.to_string();
        // Blocking socket calls run off the broker's own thread.
        let blocking = |f: Box<dyn FnOnce() -> i64 + Send>| tokio::task::spawn_blocking(f);
        let b = bootstrap.clone();
        blocking(Box::new(move || {
            let request = MetadataRequest::default()
                .with_topics(Some(vec![
                    kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_static_str("expiring")))),
                ]))
                .with_allow_auto_topic_creation(true);
            let _: MetadataResponse =
                common::raw_request(&b, ApiKey::Metadata, 9, &request, TIMEOUT);
            // Until __consumer_offsets is loaded, commits are refused: poll, bounded.
            for _ in 0..200 {
                let find = FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_static_str("standalone"));
                let found: FindCoordinatorResponse =
                    common::raw_request(&b, ApiKey::FindCoordinator, 2, &find, TIMEOUT);
                if found.error_code == 0 && commit(&b, 42) == 0 {
                    return 0;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("the commit was never accepted");
        }))
        .await
        .unwrap();
        let b = bootstrap.clone();
        assert_eq!(blocking(Box::new(move || committed(&b))).await.unwrap(), 42);
        clock.advance(59 * 60_000);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let b = bootstrap.clone();
        assert_eq!(
            blocking(Box::new(move || committed(&b))).await.unwrap(),
            42,
            "not yet"
        );
        clock.advance(2 * 60_000);
        let mut offset = 42;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let b = bootstrap.clone();
            offset = blocking(Box::new(move || committed(&b))).await.unwrap();
            if offset == -1 {
                break;
            }
        }
        assert_eq!(offset, -1, "expired after 61 minutes");
        broker.shutdown().await.unwrap();
    });
}
