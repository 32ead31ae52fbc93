//! Supervision of partition actors, in-process over real files: a partition
//! actor that stops is restarted after a backoff and rebuilds its offsets
//! from the log; one that keeps failing stops restarting and goes offline.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use ferrolog::actors::event_bus::{BrokerEvent, EventBus, EventKind};
use ferrolog::actors::log::{
    Append, Close, CreateLog, GetLogOffsets, GetShards, LogActor, LogActorConfig, LogActorError,
};
use ferrolog::actors::partition::{
    Acks, AppendRecords, GetState, PartitionActor, PartitionAssignment, PartitionHandle,
    ReplicaContext, Restart, StopPartition,
};
use ferrolog::clock::SystemClock;
use ferrolog::storage::testing::batch_v2;
use ferrolog::storage::LogConfig;
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::Compression;

/// A log actor on `dir`, a new log for `<topic>-0`, and its partition actor.
async fn partition_on_a_new_log(
    dir: &std::path::Path,
    topic: &str,
) -> (Addr<LogActor>, TopicPartition, PartitionHandle) {
    let log = log_actor_on(dir).await;
    let partition = new_partition(&log, topic, PartitionAssignment::sole_replica(0)).await;
    (log, TopicPartition::new(topic, 0), partition)
}

async fn log_actor_on(dir: &std::path::Path) -> Addr<LogActor> {
    let config = LogActorConfig::new(vec![dir.to_path_buf()], LogConfig::default());
    LogActor::start(config, Arc::new(SystemClock))
        .await
        .unwrap()
        .0
}

/// A new log for `<topic>-0` and its partition actor, on broker 0, in the
/// role `assignment` gives it.
async fn new_partition(
    log: &Addr<LogActor>,
    topic: &str,
    assignment: PartitionAssignment,
) -> PartitionHandle {
    let tp = TopicPartition::new(topic, 0);
    let offsets = log
        .send(CreateLog {
            tp: tp.clone(),
            config: LogConfig::default(),
        })
        .await
        .unwrap()
        .unwrap();
    let shards = log.send(GetShards).await.unwrap();
    PartitionActor::start(
        tp.clone(),
        shards.for_partition(&tp),
        offsets,
        EventBus::new(),
        ReplicaContext::standalone(0, Arc::new(SystemClock)),
        assignment,
        None,
    )
}

/// Appends made to the log behind the partition actor's back are invisible
/// to it until it restarts; after a `Restart` it has rebuilt its log end
/// offset and high watermark from the log, and serves appends again.
#[test]
fn a_restarted_partition_rebuilds_its_state_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let (log, tp, partition) = partition_on_a_new_log(dir.path(), "supervised").await;
        let batch = batch_v2(5, 10, Compression::None);
        for _ in 0..2 {
            log.send(Append {
                tp: tp.clone(),
                records: batch.clone(),
            })
            .await
            .unwrap()
            .unwrap();
        }
        assert_eq!(
            partition.addr.send(GetState).await.unwrap().log_end_offset,
            0,
            "stale before the restart"
        );
        partition.addr.send(Restart).await.unwrap();
        // The first restart waits 100 ms; poll, bounded.
        let mut state = partition.addr.send(GetState).await.unwrap();
        for _ in 0..50 {
            if state.log_end_offset == 10 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            state = partition.addr.send(GetState).await.unwrap();
        }
        assert_eq!((state.log_end_offset, state.high_watermark), (10, 10));
        assert_eq!(*partition.high_watermark.borrow(), 10);
        let (info, _) = partition
            .addr
            .send(AppendRecords {
                records: batch.clone(),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(info.first_offset, 10);
    });
}

/// Past its restart budget (5 restarts a minute) a partition actor does not
/// restart in a loop: it stays up and answers KAFKA_STORAGE_ERROR-mapped
/// PartitionOffline to every append.
#[test]
fn a_partition_that_keeps_failing_goes_offline() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let (_log, _tp, partition) = partition_on_a_new_log(dir.path(), "flaky").await;
        for _ in 0..6 {
            partition.addr.send(Restart).await.unwrap();
            // Each restart waits for its backoff before serving again.
            let _ = partition.addr.send(GetState).await.unwrap();
        }
        let outcome = partition
            .addr
            .send(AppendRecords {
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap();
        assert!(
            matches!(outcome, Err(LogActorError::PartitionOffline { .. })),
            "{outcome:?}"
        );
    });
}

/// A leader in leader epoch 7 records the epoch before serving and stamps
/// it into each batch it appends; acks=all with an ISR of one is answered
/// at once; on stop, the high watermark reaches `replication-offset-
/// checkpoint`. A follower refuses produces with NOT_LEADER_OR_FOLLOWER.
#[test]
fn a_leader_stamps_its_epoch_and_checkpoints_its_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_actor_on(dir.path()).await;
        let in_epoch_7 = |leader: i32| PartitionAssignment {
            leader,
            leader_epoch: 7,
            ..PartitionAssignment::sole_replica(0)
        };
        let leader = new_partition(&log, "led", in_epoch_7(0)).await;
        let (info, _) = leader
            .addr
            .send(AppendRecords {
                records: batch_v2(5, 10, Compression::None),
                acks: Acks::All {
                    min_insync_replicas: 1,
                    timeout: Duration::from_secs(5),
                },
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(info.last_offset, 4);
        let follower = new_partition(&log, "followed", in_epoch_7(1)).await;
        let refused = follower
            .addr
            .send(AppendRecords {
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap();
        assert!(
            matches!(
                refused,
                Err(LogActorError::Replication(
                    ferrolog::replication::ReplicationError::NotLeaderOrFollower
                ))
            ),
            "{refused:?}"
        );
        assert_eq!(leader.addr.send(GetState).await.unwrap().high_watermark, 5);
        leader.addr.send(StopPartition).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        log.send(Close).await.unwrap().unwrap();
        let partition_dir = dir.path().join("led-0");
        let segment = std::fs::read(partition_dir.join("00000000000000000000.log")).unwrap();
        assert_eq!(i32::from_be_bytes(segment[12..16].try_into().unwrap()), 7);
        assert_eq!(
            std::fs::read_to_string(partition_dir.join("leader-epoch-checkpoint")).unwrap(),
            "0\n1\n7 0\n"
        );
        let checkpoint =
            std::fs::read_to_string(dir.path().join("replication-offset-checkpoint")).unwrap();
        assert!(checkpoint.contains("led 0 5"), "{checkpoint}");
    });
}

/// Collects the group flushes the event bus reports: (recovery point,
/// produces answered).
struct FlushWatcher(Arc<std::sync::Mutex<Vec<(i64, usize)>>>);

impl actix::Actor for FlushWatcher {
    type Context = actix::Context<Self>;
}

impl actix::Handler<BrokerEvent> for FlushWatcher {
    type Result = ();

    fn handle(&mut self, event: BrokerEvent, _ctx: &mut actix::Context<Self>) {
        if let BrokerEvent::LogFlushed {
            recovery_point,
            produces,
            ..
        } = event
        {
            self.0.lock().unwrap().push((recovery_point, produces));
        }
    }
}

/// `flush.messages=1` (the durable mode): a produce is answered only after
/// a flush covering it, and concurrent produces share flushes (group
/// commit) instead of paying one fsync each. A topic without the setting
/// is never flushed on the produce path.
#[test]
fn durable_topics_acknowledge_after_a_shared_flush() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        use actix::Actor;
        let log = log_actor_on(dir.path()).await;
        let shards = log.send(GetShards).await.unwrap();
        let events = EventBus::new();
        let flushes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let watcher = FlushWatcher(flushes.clone()).start();
        events.subscribe(watcher.recipient(), &[EventKind::LogFlushed]);
        let start = |topic: &str, config: LogConfig| {
            let (log, shards, events) = (log.clone(), shards.clone(), events.clone());
            let tp = TopicPartition::new(topic, 0);
            async move {
                let offsets = log
                    .send(CreateLog {
                        tp: tp.clone(),
                        config,
                    })
                    .await
                    .unwrap()
                    .unwrap();
                PartitionActor::start(
                    tp.clone(),
                    shards.for_partition(&tp),
                    offsets,
                    events,
                    ReplicaContext::standalone(0, Arc::new(SystemClock)),
                    PartitionAssignment::sole_replica(0),
                    None,
                )
            }
        };
        let durable = start(
            "durable",
            LogConfig {
                flush_messages: 1,
                ..LogConfig::default()
            },
        )
        .await;
        const PRODUCES: usize = 64;
        let answers = futures_util::future::join_all((0..PRODUCES).map(|_| {
            durable.addr.send(AppendRecords {
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
        }))
        .await;
        for answer in answers {
            answer.unwrap().unwrap();
        }
        let offsets = log
            .send(GetLogOffsets {
                tp: TopicPartition::new("durable", 0),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(offsets.recovery_point, PRODUCES as i64);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let seen = flushes.lock().unwrap().clone();
        let answered: usize = seen.iter().map(|(_, produces)| produces).sum();
        assert_eq!(
            answered, PRODUCES,
            "every produce waited for a flush: {seen:?}"
        );
        assert!(
            seen.len() <= PRODUCES / 2,
            "{} flushes for {PRODUCES} concurrent produces: {seen:?}",
            seen.len()
        );
        assert_eq!(seen.last().map(|(rp, _)| *rp), Some(PRODUCES as i64));

        let lazy = start("lazy", LogConfig::default()).await;
        lazy.addr
            .send(AppendRecords {
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        let offsets = log
            .send(GetLogOffsets {
                tp: TopicPartition::new("lazy", 0),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(offsets.recovery_point, 0);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(flushes.lock().unwrap().len(), seen.len());
    });
}
