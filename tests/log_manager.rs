//! The shared log manager over real files: routing to shards, per-partition
//! order under concurrent senders, placement over `log.dirs`, clean restarts,
//! retention driven by an injected clock, and fault isolation (a failing
//! partition goes offline while the others keep serving).

use std::path::Path;
use std::sync::Arc;

use ferrolog::actors::log_manager::shard::EnforceRetention;
use ferrolog::actors::log_manager::{
    Append, Close, CreateLog, GetLogOffsets, GetShards, LogManager, LogManagerConfig,
    LogManagerError, Read, Roll, ShardLink,
};
use ferrolog::clock::{ManualClock, SharedClock, SystemClock};
use ferrolog::storage::batch::EntryHeader;
use ferrolog::storage::log_dir::CLEAN_SHUTDOWN_FILE;
use ferrolog::storage::testing::{batch_v2, batch_v2_at};
use ferrolog::storage::LogConfig;
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::Compression;

fn actor_config(dirs: &[&Path], log: LogConfig) -> LogManagerConfig {
    let mut config = LogManagerConfig::new(dirs.iter().map(|d| d.to_path_buf()).collect(), log);
    config.shards = 3;
    config.max_in_flight_per_shard = 8;
    config
}

/// A log manager on `dir` with the default log config and the system clock.
async fn default_log_manager(dir: &Path) -> actix::Addr<LogManager> {
    let clock: SharedClock = Arc::new(SystemClock);
    LogManager::start(actor_config(&[dir], LogConfig::default()), clock)
        .await
        .unwrap()
        .0
}

/// Creates `tp`'s log with `config` through the log manager.
async fn create_log(log: &actix::Addr<LogManager>, tp: &TopicPartition, config: LogConfig) {
    log.send(CreateLog {
        tp: tp.clone(),
        config,
    })
    .await
    .unwrap()
    .unwrap();
}

/// The shard that owns `tp`: partition actors send it appends, reads and
/// rolls directly, and so do these tests.
async fn shard(log: &actix::Addr<LogManager>, tp: &TopicPartition) -> ShardLink {
    log.send(GetShards).await.unwrap().for_partition(tp)
}

fn run<F: std::future::Future<Output = ()>>(f: F) {
    actix_rt::System::new().block_on(f);
}

/// Many appends sent at once to several partitions get offsets in the order
/// they were sent, per partition, and read back byte for byte.
#[test]
fn concurrent_appends_keep_per_partition_order() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let clock: SharedClock = Arc::new(SystemClock);
        let (log, loaded) =
            LogManager::start(actor_config(&[dir.path()], LogConfig::default()), clock)
                .await
                .unwrap();
        assert!(loaded.is_empty());
        let tps: Vec<TopicPartition> = (0..6).map(|p| TopicPartition::new("orders", p)).collect();
        for tp in &tps {
            create_log(&log, tp, LogConfig::default()).await;
        }
        let batch = batch_v2(4, 100, Compression::None);
        let mut sends = Vec::new();
        for round in 0..50 {
            for tp in &tps {
                let send = shard(&log, tp)
                    .await
                    .dispatch_when_room(Append {
                        tp: tp.clone(),
                        records: bytes::Bytes::copy_from_slice(&batch[..]),
                    })
                    .await;
                sends.push((tp.clone(), round, send));
            }
        }
        for (tp, round, send) in sends {
            let info = send.await.unwrap();
            assert_eq!(info.first_offset, round * 4, "{tp} round {round}");
        }
        for tp in &tps {
            let read = shard(&log, tp)
                .await
                .send(Read {
                    tp: tp.clone(),
                    offset: 8,
                    max_bytes: 1,
                    max_offset: None,
                })
                .await
                .unwrap();
            let bytes = read.region.unwrap().read_to_vec().unwrap();
            assert_eq!(
                bytes.len(),
                batch.len(),
                "the whole first batch despite max_bytes=1"
            );
            assert_eq!(EntryHeader::parse(&bytes, 0).unwrap().offset_field, 8);
            assert_eq!(&bytes[8..], &batch[8..]);
            assert_eq!(read.log_end_offset, 200);
        }
        log.send(Close).await.unwrap().unwrap();
    });
}

/// New partitions go to the log dir holding the fewest; a clean close leaves
/// the marker and checkpoints, and a restart loads every log at its offsets.
#[test]
fn placement_and_clean_restart() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run(async {
        let config = actor_config(&[a.path(), b.path()], LogConfig::default());
        let (log, _) = LogManager::start(config.clone(), Arc::new(SystemClock))
            .await
            .unwrap();
        for p in 0..4 {
            let tp = TopicPartition::new("t", p);
            create_log(&log, &tp, LogConfig::default()).await;
            for _ in 0..=p {
                shard(&log, &tp)
                    .await
                    .send(Append {
                        tp: tp.clone(),
                        records: bytes::Bytes::copy_from_slice(
                            &batch_v2(2, 10, Compression::Lz4)[..],
                        ),
                    })
                    .await
                    .unwrap();
            }
        }
        let count = |d: &Path| {
            std::fs::read_dir(d)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().is_dir())
                .count()
        };
        assert_eq!((count(a.path()), count(b.path())), (2, 2));
        log.send(Close).await.unwrap().unwrap();
        for d in [a.path(), b.path()] {
            assert!(d.join(CLEAN_SHUTDOWN_FILE).exists());
            let checkpoint =
                std::fs::read_to_string(d.join("recovery-point-offset-checkpoint")).unwrap();
            assert!(checkpoint.starts_with("0\n2\n"), "{checkpoint}");
        }
        actix::System::current().stop();
    });
    run(async {
        let config = actor_config(&[a.path(), b.path()], LogConfig::default());
        let (log, loaded) = LogManager::start(config, Arc::new(SystemClock))
            .await
            .unwrap();
        assert_eq!(loaded.len(), 4);
        assert!(
            !a.path().join(CLEAN_SHUTDOWN_FILE).exists(),
            "the marker is consumed at start"
        );
        for l in &loaded {
            let offsets = l.offsets.as_ref().unwrap();
            assert_eq!(offsets.log_end_offset, 2 * (l.tp.partition as i64 + 1));
        }
        let offsets = log
            .send(GetLogOffsets {
                tp: TopicPartition::new("t", 3),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(offsets.log_end_offset, 8);
        log.send(Close).await.unwrap().unwrap();
    });
}

/// Retention runs on the injected clock: old closed segments are deleted, the
/// log start offset moves up, the active segment stays.
#[test]
fn retention_by_time_on_a_manual_clock() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let clock = ManualClock::new(1_000_000);
        let config = LogConfig {
            retention_ms: 60_000,
            segment_bytes: 2048,
            ..LogConfig::default()
        };
        let (log, _) = LogManager::start(
            actor_config(&[dir.path()], config.clone()),
            Arc::new(clock.clone()),
        )
        .await
        .unwrap();
        let tp = TopicPartition::new("events", 0);
        create_log(&log, &tp, config).await;
        for i in 0..10 {
            let batch = batch_v2_at(4, 200, 1_000_000 + i * 1000);
            shard(&log, &tp)
                .await
                .send(Append {
                    tp: tp.clone(),
                    records: bytes::Bytes::copy_from_slice(&batch[..]),
                })
                .await
                .unwrap();
        }
        let reports = shard(&log, &tp).await.send(EnforceRetention).await.unwrap();
        assert!(
            reports.iter().all(|(_, r)| r.deleted_segments == 0),
            "nothing is old yet"
        );
        clock.advance(120_000);
        let reports = shard(&log, &tp).await.send(EnforceRetention).await.unwrap();
        let (_, report) = reports.iter().find(|(t, _)| *t == tp).unwrap();
        assert!(report.deleted_segments > 0);
        let offsets = log
            .send(GetLogOffsets { tp: tp.clone() })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(offsets.log_end_offset, 40);
        assert_eq!(offsets.log_start_offset, report.log_start_offset);
        assert!(offsets.log_start_offset > 0 && offsets.log_start_offset < 40);
        let below = shard(&log, &tp)
            .await
            .send(Read {
                tp: tp.clone(),
                offset: 0,
                max_bytes: 1024,
                max_offset: None,
            })
            .await;
        assert!(matches!(
            below,
            Err(LogManagerError::Log(
                ferrolog::storage::LogError::OffsetOutOfRange { .. }
            ))
        ));
        log.send(Close).await.unwrap().unwrap();
    });
}

/// A disk failure on one partition (its directory vanishes, so rolling a new
/// segment fails) takes that partition offline with an error, and only it.
#[test]
fn a_failing_partition_goes_offline_alone() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let (log, _) = LogManager::start(
            actor_config(&[dir.path()], LogConfig::default()),
            Arc::new(SystemClock),
        )
        .await
        .unwrap();
        let doomed = TopicPartition::new("doomed", 0);
        let healthy = TopicPartition::new("healthy", 0);
        for tp in [&doomed, &healthy] {
            create_log(&log, tp, LogConfig::default()).await;
            shard(&log, tp)
                .await
                .send(Append {
                    tp: tp.clone(),
                    records: bytes::Bytes::copy_from_slice(&batch_v2(1, 10, Compression::None)[..]),
                })
                .await
                .unwrap();
        }
        std::fs::remove_dir_all(dir.path().join("doomed-0")).unwrap();
        let rolled = shard(&log, &doomed)
            .await
            .send(Roll { tp: doomed.clone() })
            .await;
        assert!(
            matches!(rolled, Err(LogManagerError::PartitionOffline { .. })),
            "{rolled:?}"
        );
        let again = shard(&log, &doomed)
            .await
            .send(Append {
                tp: doomed.clone(),
                records: bytes::Bytes::copy_from_slice(&batch_v2(1, 10, Compression::None)[..]),
            })
            .await;
        assert!(matches!(
            again,
            Err(LogManagerError::PartitionOffline { .. })
        ));
        let info = shard(&log, &healthy)
            .await
            .send(Append {
                tp: healthy.clone(),
                records: bytes::Bytes::copy_from_slice(&batch_v2(1, 10, Compression::None)[..]),
            })
            .await
            .unwrap();
        assert_eq!(info.first_offset, 1);
        log.send(Close).await.unwrap().unwrap();
        assert!(
            !dir.path().join(CLEAN_SHUTDOWN_FILE).exists(),
            "an offline partition forces recovery next time"
        );
    });
}

/// A roll's fsyncs run on the shard's flusher thread, not inline: right
/// after the roll the recovery point has not moved (the shard did not wait),
/// and it reaches the rolled segment's end once the flusher is done.
#[test]
fn a_roll_is_flushed_off_the_shard_thread() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let log = default_log_manager(dir.path()).await;
        let tp = TopicPartition::new("rolling", 0);
        create_log(&log, &tp, LogConfig::default()).await;
        for _ in 0..4 {
            shard(&log, &tp)
                .await
                .send(Append {
                    tp: tp.clone(),
                    records: batch_v2(5, 100, Compression::None),
                })
                .await
                .unwrap();
        }
        shard(&log, &tp)
            .await
            .send(Roll { tp: tp.clone() })
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let offsets = log
                .send(GetLogOffsets { tp: tp.clone() })
                .await
                .unwrap()
                .unwrap();
            if offsets.recovery_point == 20 {
                break;
            }
            assert!(offsets.recovery_point < 20, "{offsets:?}");
            assert!(
                std::time::Instant::now() < deadline,
                "never flushed: {offsets:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        log.send(Close).await.unwrap().unwrap();
    });
}

/// Once the logs are closed (the clean-shutdown marker follows), a log is
/// no longer created: one created then would sit unflushed under the
/// marker, and the next start would trust it without recovery.
#[test]
fn no_log_is_created_after_close() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let log = default_log_manager(dir.path()).await;
        let create = |topic: &str| CreateLog {
            tp: TopicPartition::new(topic, 0),
            config: LogConfig::default(),
        };
        log.send(create("before")).await.unwrap().unwrap();
        log.send(Close).await.unwrap().unwrap();
        let late = log.send(create("late")).await.unwrap();
        assert!(matches!(late, Err(LogManagerError::Stopped)), "{late:?}");
    });
    assert!(dir.path().join(CLEAN_SHUTDOWN_FILE).exists());
    assert!(dir.path().join("before-0").is_dir());
    assert!(!dir.path().join("late-0").exists());
}

/// A shard frees a place in its in-flight window when it answers, whether or
/// not the answer has been read yet: a sender holding many unread replies can
/// still send (a partition actor waiting for room does not poll its earlier
/// answers, and would otherwise wait forever).
#[test]
fn unread_answers_give_their_place_in_the_window_back() {
    let dir = tempfile::tempdir().unwrap();
    run(async {
        let log = default_log_manager(dir.path()).await;
        let tp = TopicPartition::new("unread", 0);
        create_log(&log, &tp, LogConfig::default()).await;
        let link = shard(&log, &tp).await;
        // Four times the window (8), every reply held and not yet polled.
        let sending = async {
            let mut unread = Vec::new();
            for _ in 0..32 {
                unread.push(
                    link.dispatch_when_room(Append {
                        tp: tp.clone(),
                        records: batch_v2(1, 10, Compression::None),
                    })
                    .await,
                );
            }
            unread
        };
        let unread = tokio::time::timeout(std::time::Duration::from_secs(10), sending)
            .await
            .expect("the window never freed");
        for (i, reply) in unread.into_iter().enumerate() {
            assert_eq!(reply.await.unwrap().first_offset, i as i64);
        }
        let offsets = link.send(GetLogOffsets { tp: tp.clone() }).await.unwrap();
        assert_eq!(offsets.log_end_offset, 32);
        log.send(Close).await.unwrap().unwrap();
    });
}
