//! Supervision of partition actors, in-process over real files: a partition
//! actor that stops is restarted after a backoff and rebuilds its offsets
//! from the log; one that keeps failing stops restarting and goes offline.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use ferrolog::actors::event_bus::{BrokerEvent, EventBus, EventKind};
use ferrolog::actors::log_manager::{
    Append, Close, CreateLog, GetLogOffsets, GetShards, LogManager, LogManagerConfig,
    LogManagerError,
};
use ferrolog::actors::partition::{
    Acks, AppendRecords, ApplyAssignment, GetReplicaState, GetState, LeaderOffsets, PartitionActor,
    PartitionAssignment, PartitionError, PartitionHandle, Produced, ReadRecords, ReplicaContext,
    ReplicaFetch, Restart, StopPartition, TruncateReplica, UpdateConfig,
};
use ferrolog::clock::SystemClock;
use ferrolog::config::topic::TopicConfig;
use ferrolog::metadata::znodes::{LeaderAndIsr, TopicPartitionStateZNode};
use ferrolog::metadata::{CreateMode, EmbeddedStore, MetadataStore};
use ferrolog::replication::ReplicationError;
use ferrolog::storage::testing::batch_v2;
use ferrolog::storage::{LogConfig, LogError};
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::Compression;

/// A log manager on `dir`, a new log for `<topic>-0`, and its partition actor.
async fn partition_on_a_new_log(
    dir: &std::path::Path,
    topic: &str,
) -> (Addr<LogManager>, TopicPartition, PartitionHandle) {
    let log = log_manager_on(dir).await;
    let partition = new_partition(&log, topic, PartitionAssignment::sole_replica(0)).await;
    (log, TopicPartition::new(topic, 0), partition)
}

async fn log_manager_on(dir: &std::path::Path) -> Addr<LogManager> {
    let config = LogManagerConfig::new(vec![dir.to_path_buf()], LogConfig::default());
    LogManager::start(config, Arc::new(SystemClock))
        .await
        .unwrap()
        .0
}

/// A new log for `<topic>-0` and its partition actor, on broker 0, in the
/// role `assignment` gives it.
async fn new_partition(
    log: &Addr<LogManager>,
    topic: &str,
    assignment: PartitionAssignment,
) -> PartitionHandle {
    let standalone = ReplicaContext::standalone(0, Arc::new(SystemClock));
    new_partition_in(log, topic, assignment, standalone).await
}

/// `new_partition` with its replication settings (`replica`).
async fn new_partition_in(
    log: &Addr<LogManager>,
    topic: &str,
    assignment: PartitionAssignment,
    replica: ReplicaContext,
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
        replica,
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
        let shard = log.send(GetShards).await.unwrap().for_partition(&tp);
        for _ in 0..2 {
            shard
                .send(Append {
                    tp: tp.clone(),
                    records: batch.clone(),
                })
                .await
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
        let Produced { info, .. } = partition
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
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
                current_leader_epoch: -1,
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap();
        assert!(
            matches!(
                outcome,
                Err(PartitionError::Log(
                    LogManagerError::PartitionOffline { .. }
                ))
            ),
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
        let log = log_manager_on(dir.path()).await;
        let in_epoch_7 = |leader: i32| PartitionAssignment {
            leader,
            leader_epoch: 7,
            ..PartitionAssignment::sole_replica(0)
        };
        let leader = new_partition(&log, "led", in_epoch_7(0)).await;
        let Produced { info, .. } = leader
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch_v2(5, 10, Compression::None),
                acks: Acks::All {
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
                current_leader_epoch: -1,
                records: batch_v2(1, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap();
        assert!(
            matches!(
                refused,
                Err(PartitionError::Replication(
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

/// An append in a leader epoch (an extension's `produce_in_epoch`) lands
/// only in that epoch: one that believes in an older epoch is refused with
/// FENCED_LEADER_EPOCH, a newer one with UNKNOWN_LEADER_EPOCH, and -1 (a
/// client's Produce) is not checked.
#[test]
fn an_append_in_a_stale_leader_epoch_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let leader = new_partition(
            &log,
            "fenced",
            PartitionAssignment {
                leader: 0,
                leader_epoch: 7,
                ..PartitionAssignment::sole_replica(0)
            },
        )
        .await;
        let append = |current_leader_epoch| AppendRecords {
            current_leader_epoch,
            records: batch_v2(1, 10, Compression::None),
            acks: Acks::Leader,
        };
        let stale = leader.addr.send(append(6)).await.unwrap();
        assert_eq!(
            stale.as_ref().map_err(|e| e.code()).err(),
            Some(74),
            "{stale:?}"
        );
        let ahead = leader.addr.send(append(8)).await.unwrap();
        assert_eq!(
            ahead.as_ref().map_err(|e| e.code()).err(),
            Some(75),
            "{ahead:?}"
        );
        for epoch in [7, -1] {
            let landed = leader.addr.send(append(epoch)).await.unwrap().unwrap();
            assert_eq!(landed.info.first_offset, if epoch == 7 { 0 } else { 1 });
        }
    });
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
        let log = log_manager_on(dir.path()).await;
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
                current_leader_epoch: -1,
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
                current_leader_epoch: -1,
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

/// Follower 1 fetches from `offset` in `leader_epoch`, telling the leader
/// its position (which may move the ISR and the high watermark).
async fn follower_fetches(leader: &PartitionHandle, offset: i64, leader_epoch: i32) {
    leader
        .addr
        .send(ReplicaFetch {
            replica_id: 1,
            offset,
            max_bytes: 1 << 20,
            current_leader_epoch: leader_epoch,
            log_start_offset: 0,
        })
        .await
        .unwrap()
        .unwrap();
}

/// A leader of `<topic>-0` with replicas [0, 1] and ISR [0, 1] on broker 0,
/// whose follower (1) never fetches; its ISR lives in `store`'s partition
/// state znode (at version `zk_version`, as the leader believes it), and it
/// drops followers after `lag_ms`.
async fn leader_with_a_silent_follower(
    log: &Addr<LogManager>,
    topic: &str,
    store: Arc<dyn MetadataStore>,
    lag_ms: i64,
) -> PartitionHandle {
    let tp = TopicPartition::new(topic, 0);
    ferrolog::metadata::znodes::ensure_paths(store.as_ref())
        .await
        .unwrap();
    let state = LeaderAndIsr {
        leader: 0,
        leader_epoch: 1,
        isr: vec![0, 1],
        controller_epoch: 1,
    };
    store
        .create_recursive(
            &TopicPartitionStateZNode::path(&tp),
            TopicPartitionStateZNode::encode(&state),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    new_partition_in(
        log,
        topic,
        PartitionAssignment {
            leader: 0,
            leader_epoch: 1,
            isr: vec![0, 1],
            replicas: vec![0, 1],
            zk_version: 0,
            controller_epoch: 1,
        },
        ReplicaContext {
            store: Some(store),
            replica_lag_time_max_ms: lag_ms,
            ..ReplicaContext::standalone(0, Arc::new(SystemClock))
        },
    )
    .await
}

fn acks_all(timeout_ms: u64) -> Acks {
    Acks::All {
        timeout: Duration::from_millis(timeout_ms),
    }
}

fn replication_error(answer: Result<Produced, PartitionError>) -> ReplicationError {
    match answer {
        Err(PartitionError::Replication(e)) => e,
        other => panic!("expected a replication error, got {other:?}"),
    }
}

/// acks=all when the follower does not follow, as Kafka answers: after the
/// request's timeout REQUEST_TIMED_OUT (the records stay written); when
/// leadership moves, NOT_LEADER_OR_FOLLOWER; when the ISR shrinks below
/// `min.insync.replicas` while a produce waits, the shrink is written to the
/// state znode with a notification for the controller, and the produce is
/// answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.
#[test]
fn acks_all_answers_when_the_follower_does_not_follow() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let waiting = leader_with_a_silent_follower(&log, "waiting", store.clone(), 60_000).await;
        let append = |acks| AppendRecords {
            current_leader_epoch: -1,
            records: batch_v2(5, 10, Compression::None),
            acks,
        };
        let timed_out = waiting.addr.send(append(acks_all(200))).await.unwrap();
        assert_eq!(
            replication_error(timed_out),
            ReplicationError::RequestTimedOut
        );
        assert_eq!(waiting.addr.send(GetState).await.unwrap().log_end_offset, 5);
        assert_eq!(waiting.addr.send(GetState).await.unwrap().high_watermark, 0);

        let pending = waiting.addr.send(append(acks_all(30_000)));
        let moved = waiting.addr.send(ApplyAssignment(PartitionAssignment {
            leader: 1,
            leader_epoch: 2,
            isr: vec![1],
            replicas: vec![0, 1],
            zk_version: 1,
            controller_epoch: 1,
        }));
        let (pending, moved) = futures_util::future::join(pending, moved).await;
        moved.unwrap().unwrap();
        assert_eq!(
            replication_error(pending.unwrap()),
            ReplicationError::NotLeaderOrFollower
        );

        let shrinking = leader_with_a_silent_follower(&log, "shrinking", store.clone(), 300).await;
        // The topic's min.insync.replicas=2 reaches the partition as a
        // config change does.
        shrinking
            .addr
            .send(UpdateConfig {
                config: TopicConfig {
                    min_insync_replicas: Some(2),
                    ..TopicConfig::default()
                },
            })
            .await
            .unwrap()
            .unwrap();
        let started = std::time::Instant::now();
        let after_append = shrinking.addr.send(append(acks_all(10_000))).await.unwrap();
        assert_eq!(
            replication_error(after_append),
            ReplicationError::NotEnoughReplicasAfterAppend
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            shrinking.addr.send(GetReplicaState).await.unwrap().isr,
            vec![0]
        );
        let tp = TopicPartition::new("shrinking", 0);
        let (bytes, stat) = store
            .get(&TopicPartitionStateZNode::path(&tp))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            TopicPartitionStateZNode::decode(&tp, &bytes).unwrap().isr,
            vec![0]
        );
        assert_eq!(stat.version, 1);
        assert_eq!(
            store
                .children("/isr_change_notification")
                .await
                .unwrap()
                .len(),
            1
        );
    });
}

/// The purgatory holds at most 10 000 acks=all produces per partition: the
/// next one is still written but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND
/// at once; stopping the partition answers every waiting one.
#[test]
fn the_acks_all_purgatory_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "crowded", store, 600_000).await;
        let batch = batch_v2(1, 10, Compression::None);
        // Spawned, so every send is queued now rather than when awaited.
        let waiting: Vec<_> = (0..10_000)
            .map(|_| {
                actix_rt::spawn(leader.addr.send(AppendRecords {
                    current_leader_epoch: -1,
                    records: batch.clone(),
                    acks: acks_all(120_000),
                }))
            })
            .collect();
        // Full once every one is parked: the log end alone can reach
        // 10 000 before the last appends' answers are handled (actix polls
        // an actor's futures in any order), which let the next one in.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while leader
            .addr
            .send(GetReplicaState)
            .await
            .unwrap()
            .waiting_produces
            < 10_000
        {
            assert!(
                std::time::Instant::now() < deadline,
                "10 000 appends not parked"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let one_too_many = leader
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch.clone(),
                acks: acks_all(120_000),
            })
            .await
            .unwrap();
        assert_eq!(
            replication_error(one_too_many),
            ReplicationError::NotEnoughReplicasAfterAppend
        );
        assert_eq!(
            leader.addr.send(GetState).await.unwrap().log_end_offset,
            10_001
        );
        leader.addr.send(StopPartition).await.unwrap();
        // Answered, not left hanging: NOT_LEADER_OR_FOLLOWER, or the
        // stopped actor's closed mailbox, which Produce answers the same.
        for answer in futures_util::future::join_all(waiting).await {
            if let Ok(answer) = answer.unwrap() {
                assert_eq!(
                    replication_error(answer),
                    ReplicationError::NotLeaderOrFollower
                );
            }
        }
    });
}

/// An ISR write against a stale znode version is refused (another writer,
/// the controller, moved the state on): the leader keeps its ISR and stops
/// trying until the controller's next LeaderAndIsr.
#[test]
fn a_stale_isr_write_is_refused_and_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "stale", store.clone(), 100).await;
        let tp = TopicPartition::new("stale", 0);
        let path = TopicPartitionStateZNode::path(&tp);
        // The controller rewrote the state twice; the leader still
        // believes version 0.
        let (bytes, _) = store.get(&path).await.unwrap().unwrap();
        store.set(&path, bytes.clone(), None).await.unwrap();
        store.set(&path, bytes, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        assert_eq!(
            leader.addr.send(GetReplicaState).await.unwrap().isr,
            vec![0, 1]
        );
        let (bytes, stat) = store.get(&path).await.unwrap().unwrap();
        assert_eq!(stat.version, 2, "nothing was written after the refusal");
        assert_eq!(
            TopicPartitionStateZNode::decode(&tp, &bytes).unwrap().isr,
            vec![0, 1]
        );
        assert!(store
            .children("/isr_change_notification")
            .await
            .unwrap()
            .is_empty());
    });
}

/// Waits (at most 10 s) until `tp`'s partition state znode satisfies
/// `done`; returns the state and its version.
async fn state_znode_until(
    store: &Arc<dyn MetadataStore>,
    tp: &TopicPartition,
    done: impl Fn(&LeaderAndIsr, i32) -> bool,
) -> (LeaderAndIsr, i32) {
    let path = TopicPartitionStateZNode::path(tp);
    for _ in 0..200 {
        let (bytes, stat) = store.get(&path).await.unwrap().unwrap();
        let state = TopicPartitionStateZNode::decode(tp, &bytes).unwrap();
        if done(&state, stat.version) {
            return (state, stat.version);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never reached the expected state");
}

fn same_epoch(isr: Vec<i32>, zk_version: i32) -> ApplyAssignment {
    ApplyAssignment(PartitionAssignment {
        leader: 0,
        leader_epoch: 1,
        isr,
        replicas: vec![0, 1],
        zk_version,
        controller_epoch: 1,
    })
}

/// Issue 20, hole 1: a LeaderAndIsr in the leader epoch in force, built
/// from a controller cache that has not yet seen the leader's own ISR
/// write (partition state version 0 against the leader's 1), is skipped:
/// the leader keeps the ISR ZooKeeper holds, so acks=all is not answered
/// on the strength of a different set than the one that can be elected,
/// and it can still change the ISR. A newer state in the same epoch is
/// taken.
#[test]
fn a_same_epoch_assignment_older_than_the_leaders_isr_write_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "epoch", store.clone(), 200).await;
        let tp = TopicPartition::new("epoch", 0);
        let (_, version) = state_znode_until(&store, &tp, |s, _| s.isr == vec![0]).await;
        assert_eq!(version, 1);
        for _ in 0..50 {
            if leader.addr.send(GetReplicaState).await.unwrap().isr == vec![0] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // The controller's stale cache: ISR [0, 1] at version 0.
        leader
            .addr
            .send(same_epoch(vec![0, 1], 0))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            leader.addr.send(GetReplicaState).await.unwrap().isr,
            vec![0],
            "the leader fell back to an ISR the state znode no longer holds"
        );
        let (state, version) = state_znode_until(&store, &tp, |_, _| true).await;
        assert_eq!((state.isr, version), (vec![0], 1));

        // The controller itself put 1 back (version 2): taken, and the
        // leader, not frozen, shrinks it again on its own (version 3).
        let path = TopicPartitionStateZNode::path(&tp);
        let restored = LeaderAndIsr {
            leader: 0,
            leader_epoch: 1,
            isr: vec![0, 1],
            controller_epoch: 1,
        };
        let stat = store
            .set(&path, TopicPartitionStateZNode::encode(&restored), Some(1))
            .await
            .unwrap();
        leader
            .addr
            .send(same_epoch(vec![0, 1], stat.version))
            .await
            .unwrap()
            .unwrap();
        let (_, version) = state_znode_until(&store, &tp, |s, v| s.isr == vec![0] && v > 2).await;
        assert_eq!(version, 3);
    });
}

/// Issue 20, hole 2: an ISR write whose first attempt landed but whose
/// reply was lost meets BadVersion on the client's retry, with the
/// leader's own state in the znode. The leader reads it back and takes it
/// as written (ISR, version, notification for the controller) instead of
/// reverting to the old ISR and freezing; its next ISR change is written.
/// The znode here holds that state before the leader writes, which is what
/// the retry finds.
#[test]
fn an_isr_write_whose_reply_was_lost_counts_as_written() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "lost", store.clone(), 1_000).await;
        let tp = TopicPartition::new("lost", 0);
        let path = TopicPartitionStateZNode::path(&tp);
        let landed = LeaderAndIsr {
            leader: 0,
            leader_epoch: 1,
            isr: vec![0],
            controller_epoch: 1,
        };
        store
            .set(&path, TopicPartitionStateZNode::encode(&landed), Some(0))
            .await
            .unwrap();
        let mut isr = Vec::new();
        for _ in 0..150 {
            isr = leader.addr.send(GetReplicaState).await.unwrap().isr;
            if isr == vec![0] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(isr, vec![0], "the leader did not take its own landed write");
        assert_eq!(
            store
                .children("/isr_change_notification")
                .await
                .unwrap()
                .len(),
            1,
            "the controller was not told of the change"
        );

        // Not frozen: the follower catches up and is written back at
        // version 2, conditionally on the version read back (1).
        let offsets = leader.addr.send(GetState).await.unwrap();
        follower_fetches(&leader, offsets.log_end_offset, 1).await;
        let (state, version) = state_znode_until(&store, &tp, |s, _| s.isr == vec![0, 1]).await;
        assert_eq!((state.isr, version), (vec![0, 1], 2));
    });
}

/// Issue 20, hole 5: a follower fetching above the leader's log end (its
/// own log runs past it, after an unclean election) is answered
/// OFFSET_OUT_OF_RANGE and counted for nothing: the high watermark does not
/// move on records it does not have. A fetch inside the log counts.
#[test]
fn a_follower_fetch_past_the_leaders_log_end_counts_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "past", store.clone(), 60_000).await;
        leader
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch_v2(5, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        let fetch = |offset| ReplicaFetch {
            replica_id: 1,
            offset,
            max_bytes: 1 << 20,
            current_leader_epoch: 1,
            log_start_offset: 0,
        };
        match leader.addr.send(fetch(100)).await.unwrap() {
            Err(PartitionError::Log(LogManagerError::Log(LogError::OffsetOutOfRange {
                offset: 100,
                ..
            }))) => {}
            other => panic!("expected OFFSET_OUT_OF_RANGE, got {other:?}"),
        }
        let state = leader.addr.send(GetState).await.unwrap();
        assert_eq!(
            (state.log_end_offset, state.high_watermark),
            (5, 0),
            "the high watermark moved on a fetch outside the log"
        );
        leader.addr.send(fetch(5)).await.unwrap().unwrap();
        assert_eq!(leader.addr.send(GetState).await.unwrap().high_watermark, 5);
    });
}

/// Issue 20: an append on the shard while the controller moves the leader
/// epoch on without moving the leader (an ISR shrink after a broker died)
/// is answered, as in Kafka; only a lost leadership fails it.
#[test]
fn an_append_survives_a_new_leader_epoch_of_the_same_leader() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "bump", store.clone(), 60_000).await;
        let append = leader.addr.send(AppendRecords {
            current_leader_epoch: -1,
            records: batch_v2(5, 10, Compression::None),
            acks: Acks::Leader,
        });
        let bump = leader.addr.send(ApplyAssignment(PartitionAssignment {
            leader: 0,
            leader_epoch: 2,
            isr: vec![0],
            replicas: vec![0, 1],
            zk_version: 1,
            controller_epoch: 1,
        }));
        let (appended, bumped) = futures_util::future::join(append, bump).await;
        bumped.unwrap().unwrap();
        let Produced { info, .. } = appended.unwrap().expect("the append is answered");
        assert_eq!(info.log_end_offset, 5);
        let state = leader.addr.send(GetReplicaState).await.unwrap();
        assert_eq!((state.leader_epoch, state.offsets.high_watermark), (2, 5));
    });
}

/// Issue 20: a follower's truncation names the leader epoch its fetcher
/// decided it in; one decided under an older assignment is refused
/// (FENCED_LEADER_EPOCH) and the log is left as it is.
#[test]
fn a_truncation_from_an_older_leader_epoch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let follower = new_partition(
            &log,
            "cut",
            PartitionAssignment {
                leader: 1,
                leader_epoch: 3,
                isr: vec![0, 1],
                replicas: vec![0, 1],
                zk_version: 0,
                controller_epoch: 1,
            },
        )
        .await;
        let truncate = |leader_epoch| TruncateReplica {
            offset: 0,
            start_over: false,
            leader_epoch,
        };
        match follower.addr.send(truncate(2)).await.unwrap() {
            Err(PartitionError::Replication(ReplicationError::FencedLeaderEpoch {
                requested: 2,
                current: 3,
            })) => {}
            other => panic!("expected FENCED_LEADER_EPOCH, got {other:?}"),
        }
        follower.addr.send(truncate(3)).await.unwrap().unwrap();
    });
}

/// ListOffsets' view of a leader (issue 20): a consumer asking the latest
/// offset is answered OFFSET_NOT_AVAILABLE while a new leader's high
/// watermark is below the start of its epoch (KIP-207), a replica gets the
/// log end; an old
/// `current_leader_epoch` is FENCED_LEADER_EPOCH; once the follower has
/// caught up, the consumer gets the high watermark.
#[test]
fn list_offsets_waits_for_a_new_leaders_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "kip207", store.clone(), 60_000).await;
        leader
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch_v2(5, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        leader
            .addr
            .send(ApplyAssignment(PartitionAssignment {
                leader: 0,
                leader_epoch: 2,
                isr: vec![0, 1],
                replicas: vec![0, 1],
                zk_version: 1,
                controller_epoch: 1,
            }))
            .await
            .unwrap()
            .unwrap();
        let offsets = |current_leader_epoch, for_replica: bool| LeaderOffsets {
            current_leader_epoch,
            consumer_latest: !for_replica,
        };
        match leader.addr.send(offsets(2, false)).await.unwrap() {
            Err(PartitionError::Replication(ReplicationError::OffsetNotAvailable {
                high_watermark: 0,
                epoch_start_offset: 5,
            })) => {}
            other => panic!("expected OFFSET_NOT_AVAILABLE, got {other:?}"),
        }
        let replica = leader.addr.send(offsets(-1, true)).await.unwrap().unwrap();
        assert_eq!((replica.log_end_offset, replica.high_watermark), (5, 0));
        match leader.addr.send(offsets(1, true)).await.unwrap() {
            Err(PartitionError::Replication(ReplicationError::FencedLeaderEpoch { .. })) => {}
            other => panic!("expected FENCED_LEADER_EPOCH, got {other:?}"),
        }
        follower_fetches(&leader, 5, 2).await;
        let consumer = leader.addr.send(offsets(2, false)).await.unwrap().unwrap();
        assert_eq!(consumer.high_watermark, 5);
    });
}

/// Every offset a read returned, batch by batch, decoded with kafka-protocol.
fn offsets_read(read: &ferrolog::storage::ReadInfo) -> Vec<i64> {
    let Some(region) = &read.region else {
        return Vec::new();
    };
    let mut bytes = bytes::Bytes::from(region.read_to_vec().unwrap());
    let mut offsets = Vec::new();
    while !bytes.is_empty() {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        offsets.extend(set.records.iter().map(|r| r.offset));
    }
    offsets
}

/// Consumers never see records above the high watermark: a leader's
/// appends that its in-sync follower has not fetched are read by the
/// consumer only once the follower's fetch commits them, and a batch above
/// the high watermark is left out whole; a coordinator loading its groups
/// (`to_log_end`) reads to the log end.
#[test]
fn consumers_never_read_above_the_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let log = log_manager_on(dir.path()).await;
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let leader = leader_with_a_silent_follower(&log, "hw-reads", store, 60_000).await;
        let append = |count| AppendRecords {
            current_leader_epoch: -1,
            records: batch_v2(count, 10, Compression::None),
            acks: Acks::Leader,
        };
        leader.addr.send(append(5)).await.unwrap().unwrap();
        let consumer = || ReadRecords::committed(0, 1 << 20);
        let read = leader.addr.send(consumer()).await.unwrap().unwrap();
        assert_eq!(
            (read.state.high_watermark, offsets_read(&read.read)),
            (0, vec![]),
            "nothing is committed before the follower fetches"
        );
        let loading = ReadRecords {
            to_log_end: true,
            ..consumer()
        };
        let read = leader.addr.send(loading).await.unwrap().unwrap();
        assert_eq!(offsets_read(&read.read), (0..5).collect::<Vec<_>>());

        follower_fetches(&leader, 5, 1).await;
        leader.addr.send(append(3)).await.unwrap().unwrap();
        let read = leader.addr.send(consumer()).await.unwrap().unwrap();
        assert_eq!(read.state.high_watermark, 5);
        assert_eq!(
            offsets_read(&read.read),
            (0..5).collect::<Vec<_>>(),
            "the batch at 5..8 is above the high watermark"
        );
        let read = leader
            .addr
            .send(ReadRecords::committed(5, 1 << 20))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(offsets_read(&read.read), Vec::<i64>::new());
    });
}

/// The high watermark reaches `replication-offset-checkpoint` on the
/// `replica.high.watermark.checkpoint.interval.ms` timer, while the
/// partition keeps running (no stop, no close).
#[test]
fn the_high_watermark_checkpoint_timer_writes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let mut config =
            LogManagerConfig::new(vec![dir.path().to_path_buf()], LogConfig::default());
        config.checkpoint_interval_ms = 100;
        let log = LogManager::start(config, Arc::new(SystemClock))
            .await
            .unwrap()
            .0;
        let partition = new_partition_in(
            &log,
            "ticking",
            PartitionAssignment::sole_replica(0),
            ReplicaContext {
                high_watermark_checkpoint_interval_ms: 100,
                ..ReplicaContext::standalone(0, Arc::new(SystemClock))
            },
        )
        .await;
        partition
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch_v2(7, 10, Compression::None),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let checkpoint =
                std::fs::read_to_string(dir.path().join("replication-offset-checkpoint"))
                    .unwrap_or_default();
            if checkpoint.contains("ticking 0 7") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the timer never wrote the high watermark: {checkpoint:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(partition.addr.connected(), "the partition is still running");
    });
}

/// Sends `message()` with `try_send`, without yielding, until the mailbox
/// refuses one; the actor cannot run meanwhile (it shares this thread), so
/// the count is exactly what its mailbox holds.
fn fill_mailbox<A, M>(addr: &Addr<A>, message: impl Fn() -> M) -> usize
where
    A: actix::Actor<Context = actix::Context<A>> + actix::Handler<M>,
    M: actix::Message + Send + 'static,
    M::Result: Send,
{
    let mut queued = 0;
    while queued <= 100_000 {
        match addr.try_send(message()) {
            Ok(()) => queued += 1,
            Err(actix::prelude::SendError::Full(_)) => return queued,
            Err(actix::prelude::SendError::Closed(_)) => panic!("mailbox closed"),
        }
    }
    panic!("the mailbox took {queued} messages without refusing one");
}

/// The mailboxes of the partition actor and the log manager are bounded
/// (1,024 each): a sender that does not wait is refused past the bound, a
/// sender that waits (`send`, as every caller does) is held until the actor
/// has drained room, and none of the queued messages is lost.
#[test]
fn partition_and_log_manager_mailboxes_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        let (log, _, partition) = partition_on_a_new_log(dir.path(), "bounded").await;
        // Both have run `started`, where the capacity is set.
        partition.addr.send(GetState).await.unwrap();
        log.send(GetShards).await.unwrap();

        let queued = fill_mailbox(&partition.addr, || GetState);
        assert_eq!(queued, 1024, "partition actor mailbox");
        let mut held = Box::pin(partition.addr.send(GetState));
        assert!(
            futures_util::FutureExt::now_or_never(&mut held).is_none(),
            "a waiting sender is held while the mailbox is full"
        );
        let answered = tokio::time::timeout(Duration::from_secs(30), held).await;
        assert!(
            matches!(answered, Ok(Ok(_))),
            "a waiting sender gets its answer once there is room"
        );
        // Drained: room again.
        assert!(partition.addr.try_send(GetState).is_ok());

        let queued = fill_mailbox(&log, || GetShards);
        assert_eq!(queued, 1024, "log manager mailbox");
        let answered = tokio::time::timeout(Duration::from_secs(30), log.send(GetShards)).await;
        assert!(matches!(answered, Ok(Ok(_))));
    });
}

/// Keeps the last `HighWatermarkAdvanced` it handled, slowly, from a
/// mailbox of one: it drops most events of a fast writer.
struct SlowCommitWatcher(Arc<std::sync::Mutex<Option<BrokerEvent>>>);

impl actix::Actor for SlowCommitWatcher {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut actix::Context<Self>) {
        ctx.set_mailbox_capacity(1);
    }
}

impl actix::Handler<BrokerEvent> for SlowCommitWatcher {
    type Result = ();

    fn handle(&mut self, event: BrokerEvent, _ctx: &mut actix::Context<Self>) {
        std::thread::sleep(Duration::from_millis(2));
        *self.0.lock().unwrap() = Some(event);
    }
}

/// `HighWatermarkAdvanced` carries running totals: a subscriber that
/// dropped most events (a full mailbox) still reads the exact records and
/// bytes this leadership committed from the next event it gets.
#[test]
fn commit_events_carry_running_totals_a_lagging_subscriber_can_trust() {
    let dir = tempfile::tempdir().unwrap();
    actix_rt::System::new().block_on(async {
        use actix::Actor;
        let log = log_manager_on(dir.path()).await;
        let shards = log.send(GetShards).await.unwrap();
        let events = EventBus::new();
        let seen = Arc::new(std::sync::Mutex::new(None));
        let watcher_seen = seen.clone();
        // Its own thread, so its slowness does not slow the writer.
        let arbiter = actix::Arbiter::new();
        let watcher = SlowCommitWatcher::start_in_arbiter(&arbiter.handle(), move |_| {
            SlowCommitWatcher(watcher_seen)
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        events.subscribe(watcher.recipient(), &[EventKind::HighWatermarkAdvanced]);
        let tp = TopicPartition::new("totals", 0);
        let offsets = log
            .send(CreateLog {
                tp: tp.clone(),
                config: LogConfig::default(),
            })
            .await
            .unwrap()
            .unwrap();
        let partition = PartitionActor::start(
            tp.clone(),
            shards.for_partition(&tp),
            offsets,
            events.clone(),
            ReplicaContext::standalone(0, Arc::new(SystemClock)),
            PartitionAssignment::sole_replica(0),
            None,
        );
        const APPENDS: usize = 300;
        let batch = batch_v2(2, 10, Compression::None);
        let answers = futures_util::future::join_all((0..APPENDS).map(|_| {
            partition.addr.send(AppendRecords {
                current_leader_epoch: -1,
                records: batch.clone(),
                acks: Acks::Leader,
            })
        }))
        .await;
        for answer in answers {
            answer.unwrap().unwrap();
        }
        assert!(events.dropped() > 0, "the watcher must have dropped events");
        // Let it drain; the next event then reaches it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        partition
            .addr
            .send(AppendRecords {
                current_leader_epoch: -1,
                records: batch.clone(),
                acks: Acks::Leader,
            })
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let last = seen.lock().unwrap().clone();
        let Some(BrokerEvent::HighWatermarkAdvanced {
            high_watermark,
            committed,
            ..
        }) = last
        else {
            panic!("no commit event reached the watcher: {last:?}");
        };
        let appends = APPENDS as u64 + 1;
        assert_eq!(high_watermark, 2 * appends as i64);
        assert_eq!(committed.since_offset, 0);
        assert_eq!(committed.records, 2 * appends as i64);
        assert_eq!(committed.bytes, appends * batch.len() as u64);
        arbiter.stop();
    });
}
