//! The controller killed in the middle of an operation (issue 20): a
//! 1,000-partition creation, a topic deletion, CreatePartitions, a
//! preferred election and a controlled shutdown. Each test runs ZooKeeper
//! and three real broker processes; broker 0 is started first, so it is the
//! controller, and only it has the operation's fail point armed. The fail
//! point SIGKILLs the process at an exact step (`crate::crash_for_test`),
//! so the cut falls where a random kill rarely does. The next controller
//! must then complete the operation or cleanly abandon it:
//! - creation killed before the store write: no trace of the topic, and
//!   creating it again works; killed after the write (every partition's
//!   state in ZooKeeper, no broker told): every one of the 1,000
//!   partitions gets a live leader and takes an acks=all record;
//! - deletion killed right after the deletion mark: the next controller
//!   deletes the live replicas and waits for the dead broker's, so the
//!   topic's znodes go only once broker 0 is back and has deleted its logs;
//!   the name can then be created afresh;
//! - CreatePartitions killed after the write: every new partition is led
//!   and takes records;
//! - a preferred election killed after one new state is written: what
//!   every broker serves agrees with ZooKeeper (the new controller sends
//!   the written state), and the election asked again completes;
//! - a controlled shutdown killed after one partition moved: the stopping
//!   broker asks the next controller, leaves every leadership, and exits
//!   cleanly.
//!
//! Built only with `--features failpoints` (`scripts/test.sh` runs it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{client_config, try_raw_request};
use kafka_protocol::messages::{ApiKey, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const ELECTION_NOT_NEEDED: i16 = 84;
const PREFERRED_LEADER_NOT_AVAILABLE: i16 = 80;

/// One partition as a broker's Metadata answers it.
#[derive(Clone, Debug, PartialEq)]
struct Served {
    leader: i32,
    leader_epoch: i32,
    replicas: Vec<i32>,
    isr: BTreeSet<i32>,
}

/// One partition's state znode.
#[derive(Clone, Debug, PartialEq)]
struct Stored {
    leader: i32,
    leader_epoch: i32,
    isr: BTreeSet<i32>,
}

/// What broker `id` answers to Metadata for `topic`: (controller id, topic
/// error code, partitions); `None` when it does not answer.
fn metadata(cluster: &Cluster, id: i32, topic: &str) -> Option<(i32, i16, BTreeMap<i32, Served>)> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
    let response: MetadataResponse = try_raw_request(
        &cluster.addresses[&id],
        ApiKey::Metadata,
        9,
        &MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name(topic)))
            ])),
        Duration::from_secs(10),
    )
    .ok()?;
    let answer = response.topics.first()?;
    let partitions = answer
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                Served {
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                    isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                },
            )
        })
        .collect();
    Some((response.controller_id.0, answer.error_code, partitions))
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// Waits (bounded) until `done` holds; `what` names it in the failure.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Which of `paths` exist in ZooKeeper.
fn znodes_exist(cluster: &Cluster, paths: &[String]) -> Vec<bool> {
    cluster
        .read_znodes(paths)
        .iter()
        .map(Option::is_some)
        .collect()
}

/// Every partition state of `topic` in ZooKeeper (partitions 0..count;
/// missing states are absent from the map).
fn stored_states(cluster: &Cluster, topic: &str, count: i32) -> BTreeMap<i32, Stored> {
    let paths: Vec<String> = (0..count)
        .map(|p| format!("/brokers/topics/{topic}/partitions/{p}/state"))
        .collect();
    cluster
        .read_znodes(&paths)
        .into_iter()
        .enumerate()
        .filter_map(|(p, bytes)| {
            let json: serde_json::Value = serde_json::from_slice(&bytes?).expect("state JSON");
            let isr = json["isr"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|b| b.as_i64())
                        .map(|b| b as i32)
                        .collect()
                })
                .unwrap_or_default();
            Some((
                p as i32,
                Stored {
                    leader: json["leader"].as_i64().unwrap_or(-2) as i32,
                    leader_epoch: json["leader_epoch"].as_i64().unwrap_or(-2) as i32,
                    isr,
                },
            ))
        })
        .collect()
}

/// Three brokers over one ZooKeeper; broker 0 starts first and is the
/// controller, and only it has `failpoint` armed (it SIGKILLs itself
/// there). Replicas drop out of the ISR after 5 s without fetching, so
/// acks=all answers soon after a broker dies; no automatic rebalance
/// moves leaders behind a test's back.
fn cluster_with_doomed_controller(failpoint: &str) -> Cluster {
    let armed = format!("{failpoint}=return");
    let mut cluster = Cluster::start_with_env(
        0,
        &[],
        &[
            "replica.lag.time.max.ms=5000",
            "auto.leader.rebalance.enable=false",
        ],
        &[("FAILPOINTS", armed.as_str())],
    );
    cluster.dirs.push(tempfile::tempdir().expect("tempdir"));
    cluster.start_broker(0);
    wait_until(
        "broker 0 to be the controller",
        Duration::from_secs(60),
        || metadata(&cluster, 0, "none").is_some_and(|(controller, _, _)| controller == 0),
    );
    cluster.env.clear();
    for id in 1..3 {
        cluster.dirs.push(tempfile::tempdir().expect("tempdir"));
        cluster.start_broker(id);
    }
    cluster
}

/// Waits until broker 0 has killed itself at its fail point (SIGKILL),
/// and until brokers 1 and 2 name the same new controller; returns it.
fn wait_for_new_controller(cluster: &mut Cluster) -> i32 {
    let mut doomed = cluster.brokers.remove(&0).expect("broker 0");
    let status = doomed.wait_for_exit(Duration::from_secs(60));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "broker 0 died at its fail point: {status}"
    );
    let mut controller = -1;
    wait_until("a new controller", Duration::from_secs(60), || {
        let seen: Vec<i32> = cluster
            .brokers
            .keys()
            .filter_map(|&id| metadata(cluster, id, "none").map(|(c, _, _)| c))
            .collect();
        controller = seen.first().copied().unwrap_or(-1);
        controller > 0
            && seen.len() == cluster.brokers.len()
            && seen.iter().all(|&c| c == controller)
    });
    controller
}

/// Creates `topic` (RF 3) at the controller `at`, and waits until every
/// running broker serves it whole.
fn create(cluster: &Cluster, at: i32, topic: &str, partitions: i32) -> i16 {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
    let response: Result<CreateTopicsResponse, String> = try_raw_request(
        &cluster.addresses[&at],
        ApiKey::CreateTopics,
        5,
        &CreateTopicsRequest::default()
            .with_timeout_ms(60_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(3)]),
        Duration::from_secs(90),
    );
    match response {
        Ok(response) => response.topics[0].error_code,
        Err(e) => {
            eprintln!("CreateTopics {topic} at broker {at}: {e}");
            -1
        }
    }
}

/// Waits until every running broker serves `topic` with `count`
/// partitions, each led by one of `leaders` with an ISR of exactly `isr`
/// (when given).
fn wait_served(
    cluster: &Cluster,
    topic: &str,
    count: i32,
    leaders: &[i32],
    isr: Option<&[i32]>,
) -> BTreeMap<i32, Served> {
    let mut last = BTreeMap::new();
    for &id in cluster.brokers.keys() {
        wait_until(
            &format!("broker {id} to serve {topic} whole"),
            Duration::from_secs(120),
            || {
                let Some((_, 0, partitions)) = metadata(cluster, id, topic) else {
                    return false;
                };
                let ok = partitions.len() == count as usize
                    && partitions.values().all(|p| {
                        leaders.contains(&p.leader)
                            && isr.is_none_or(|isr| p.isr.iter().copied().eq(isr.iter().copied()))
                    });
                last = partitions;
                ok
            },
        );
    }
    last
}

/// Every partition of `topic` served by the running brokers agrees with
/// its state znode (leader and leader epoch), within a bounded wait.
fn wait_agrees_with_zookeeper(cluster: &Cluster, topic: &str, count: i32) {
    let mut report = String::new();
    wait_until(
        &format!("{topic} served as ZooKeeper says"),
        Duration::from_secs(60),
        || {
            let stored = stored_states(cluster, topic, count);
            report.clear();
            for &id in cluster.brokers.keys() {
                let Some((_, 0, served)) = metadata(cluster, id, topic) else {
                    report = format!("broker {id} does not serve {topic}");
                    return false;
                };
                for (p, state) in &stored {
                    let Some(s) = served.get(p) else {
                        report = format!("broker {id} lacks partition {p}");
                        return false;
                    };
                    if (s.leader, s.leader_epoch) != (state.leader, state.leader_epoch) {
                        report = format!(
                            "broker {id}, partition {p}: serves leader {} epoch {}, ZooKeeper \
                             says {} epoch {}",
                            s.leader, s.leader_epoch, state.leader, state.leader_epoch
                        );
                        return false;
                    }
                }
            }
            stored.len() == count as usize
        },
    );
    eprintln!("{topic}: served as ZooKeeper says {report}");
}

/// One acks=all record to each of `topic`'s partitions `0..count`, through
/// broker `via`; every one acknowledged.
fn produce_to_each(cluster: &Cluster, via: i32, topic: &str, count: i32) {
    let producer: BaseProducer = client_config(&cluster.addresses[&via])
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .create()
        .expect("producer");
    for p in 0..count {
        let payload = format!("record-{p}");
        loop {
            match producer.send(
                BaseRecord::<(), _>::to(topic)
                    .partition(p)
                    .payload(&payload),
            ) {
                Ok(()) => break,
                Err(_) => {
                    producer.poll(Duration::from_millis(50));
                }
            }
        }
    }
    producer
        .flush(Duration::from_secs(90))
        .expect("every record acknowledged");
}

/// `topic`'s partition directories in broker `id`'s log dir.
fn partition_dirs(cluster: &Cluster, id: i32, topic: &str) -> Vec<String> {
    let prefix = format!("{topic}-");
    let mut dirs: Vec<String> = std::fs::read_dir(cluster.dirs[id as usize].path())
        .expect("log dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix(&prefix)
                .is_some_and(|rest| rest.parse::<i32>().is_ok())
        })
        .collect();
    dirs.sort();
    dirs
}

/// Kafka's CreateTopics killed before anything is written: the topic is
/// abandoned without a trace, and created again at the next controller.
#[test]
fn a_creation_killed_before_its_write_leaves_nothing_behind() {
    let mut cluster = cluster_with_doomed_controller("controller.create_topic.before_write");
    let answered = create(&cluster, 0, "never", 1000);
    assert_eq!(answered, -1, "the controller died before answering");
    let controller = wait_for_new_controller(&mut cluster);
    assert_eq!(
        znodes_exist(
            &cluster,
            &[
                "/brokers/topics/never".to_string(),
                "/config/topics/never".to_string()
            ]
        ),
        [false, false],
        "no trace of the abandoned creation"
    );
    for &id in cluster.brokers.keys() {
        let (_, code, _) = metadata(&cluster, id, "never").expect("metadata");
        assert_eq!(code, UNKNOWN_TOPIC_OR_PARTITION, "broker {id}");
    }
    // Three replicas need three live brokers.
    cluster.start_broker(0);
    assert_eq!(create(&cluster, controller, "never", 1000), 0);
    wait_served(&cluster, "never", 1000, &[0, 1, 2], Some(&[0, 1, 2]));
}

/// A 1,000-partition creation killed after the store write (the topic,
/// its config and every partition's first state are in ZooKeeper) and
/// before any broker was told: the next controller takes the topic up, so
/// every partition is led by a live broker, agrees with ZooKeeper, and
/// takes an acks=all record; once broker 0 is back, every ISR is whole.
#[test]
fn a_creation_killed_after_its_write_is_completed_by_the_next_controller() {
    let mut cluster = cluster_with_doomed_controller("controller.create_topic.written");
    assert_eq!(create(&cluster, 0, "thousand", 1000), -1);
    let controller = wait_for_new_controller(&mut cluster);
    wait_served(&cluster, "thousand", 1000, &[1, 2], None);
    wait_agrees_with_zookeeper(&cluster, "thousand", 1000);
    produce_to_each(&cluster, controller, "thousand", 1000);
    cluster.start_broker(0);
    wait_served(&cluster, "thousand", 1000, &[0, 1, 2], Some(&[0, 1, 2]));
    assert_eq!(partition_dirs(&cluster, 0, "thousand").len(), 1000);
}

/// DeleteTopics killed right after the deletion mark: the next controller
/// resumes the deletion, deletes the live brokers' replicas at once, and
/// keeps the topic's znodes (and the mark) until broker 0, which holds
/// replicas, is back and has deleted them. The name is then created
/// afresh: empty partitions.
#[test]
fn a_deletion_killed_after_its_mark_is_resumed_by_the_next_controller() {
    let mut cluster = cluster_with_doomed_controller("controller.delete_topic.marked");
    assert_eq!(create(&cluster, 0, "doomed", 6), 0);
    wait_served(&cluster, "doomed", 6, &[0, 1, 2], Some(&[0, 1, 2]));
    produce_to_each(&cluster, 1, "doomed", 6);
    use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
    let deleted: Result<DeleteTopicsResponse, String> = try_raw_request(
        &cluster.addresses[&0],
        ApiKey::DeleteTopics,
        4,
        &DeleteTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topic_names(vec![name("doomed")]),
        Duration::from_secs(60),
    );
    assert!(deleted.is_err(), "the controller died before answering");
    let controller = wait_for_new_controller(&mut cluster);
    let marks = [
        "/brokers/topics/doomed".to_string(),
        "/admin/delete_topics/doomed".to_string(),
    ];
    wait_until("the live replicas deleted", Duration::from_secs(60), || {
        [1, 2].iter().all(|&id| {
            partition_dirs(&cluster, id, "doomed").is_empty()
                && metadata(&cluster, id, "doomed")
                    .is_some_and(|(_, code, _)| code == UNKNOWN_TOPIC_OR_PARTITION)
        })
    });
    assert_eq!(
        znodes_exist(&cluster, &marks),
        [true, true],
        "the deletion waits for broker 0's replicas"
    );
    assert_eq!(partition_dirs(&cluster, 0, "doomed").len(), 6);
    cluster.start_broker(0);
    wait_until("the deletion to complete", Duration::from_secs(60), || {
        znodes_exist(&cluster, &marks) == [false, false]
    });
    assert!(partition_dirs(&cluster, 0, "doomed").is_empty());
    assert_eq!(create(&cluster, controller, "doomed", 6), 0);
    wait_served(&cluster, "doomed", 6, &[0, 1, 2], Some(&[0, 1, 2]));
    let consumer: rdkafka::consumer::BaseConsumer = client_config(&cluster.addresses[&1])
        .create()
        .expect("client");
    use rdkafka::consumer::Consumer;
    for p in 0..6 {
        let (low, high) = consumer
            .fetch_watermarks("doomed", p, Duration::from_secs(10))
            .expect("watermarks");
        assert_eq!((low, high), (0, 0), "partition {p} is new and empty");
    }
}

/// CreatePartitions (4 to 40) killed after the store write: the next
/// controller gives every new partition a live leader; each takes a
/// record, and once broker 0 is back every ISR is whole.
#[test]
fn create_partitions_killed_after_its_write_is_completed_by_the_next_controller() {
    let mut cluster = cluster_with_doomed_controller("controller.create_partitions.written");
    assert_eq!(create(&cluster, 0, "growing", 4), 0);
    wait_served(&cluster, "growing", 4, &[0, 1, 2], Some(&[0, 1, 2]));
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
    let grown: Result<CreatePartitionsResponse, String> = try_raw_request(
        &cluster.addresses[&0],
        ApiKey::CreatePartitions,
        3,
        &CreatePartitionsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(name("growing"))
                .with_count(40)
                .with_assignments(None)]),
        Duration::from_secs(60),
    );
    assert!(grown.is_err(), "the controller died before answering");
    let controller = wait_for_new_controller(&mut cluster);
    wait_served(&cluster, "growing", 40, &[1, 2], None);
    wait_agrees_with_zookeeper(&cluster, "growing", 40);
    produce_to_each(&cluster, controller, "growing", 40);
    cluster.start_broker(0);
    wait_served(&cluster, "growing", 40, &[0, 1, 2], Some(&[0, 1, 2]));
}

/// ElectLeaders (preferred) to the controller; per partition, its code.
fn elect_preferred(
    cluster: &Cluster,
    at: i32,
    topic: &str,
    count: i32,
) -> Option<BTreeMap<i32, i16>> {
    let partitions: Vec<i32> = (0..count).collect();
    common::cluster::elect_leaders(&cluster.addresses[&at], 0, topic, &partitions)
        .ok()
        .map(|(_, results)| results)
}

/// A preferred election killed after one partition's new state is
/// written: nothing is served against ZooKeeper (the next controller
/// sends the written state; the others keep theirs), and the election
/// asked again of the next controller puts every partition whose
/// preferred replica is live back on it.
#[test]
fn a_preferred_election_killed_midway_leaves_the_cluster_consistent() {
    let mut cluster = cluster_with_doomed_controller("controller.elect_leaders.one_written");
    assert_eq!(create(&cluster, 0, "elect", 12), 0);
    wait_served(&cluster, "elect", 12, &[0, 1, 2], Some(&[0, 1, 2]));
    // Broker 1 restarts: its leaderships move to brokers 0 and 2 and stay
    // there (no automatic rebalance).
    let _ = cluster.brokers.remove(&1).expect("broker 1").kill();
    wait_until(
        "broker 1's partitions led elsewhere",
        Duration::from_secs(60),
        || {
            metadata(&cluster, 0, "elect").is_some_and(|(_, _, partitions)| {
                partitions.values().all(|p| p.leader == 0 || p.leader == 2)
            })
        },
    );
    cluster.start_broker(1);
    let served = wait_served(&cluster, "elect", 12, &[0, 2], Some(&[0, 1, 2]));
    let preferred: BTreeMap<i32, i32> = served.iter().map(|(&p, s)| (p, s.replicas[0])).collect();
    assert!(
        preferred.values().any(|&b| b == 1),
        "some partition prefers broker 1: {preferred:?}"
    );
    assert_eq!(
        elect_preferred(&cluster, 0, "elect", 12),
        None,
        "the controller died before answering"
    );
    let controller = wait_for_new_controller(&mut cluster);
    wait_agrees_with_zookeeper(&cluster, "elect", 12);
    let answers = elect_preferred(&cluster, controller, "elect", 12).expect("an answer");
    for (p, code) in &answers {
        let expected: &[i16] = if preferred[p] == 0 {
            &[PREFERRED_LEADER_NOT_AVAILABLE]
        } else {
            &[0, ELECTION_NOT_NEEDED]
        };
        assert!(
            expected.contains(code),
            "partition {p} (preferred {}): {code}",
            preferred[p]
        );
    }
    wait_agrees_with_zookeeper(&cluster, "elect", 12);
    let (_, _, now) = metadata(&cluster, controller, "elect").expect("metadata");
    for (p, s) in &now {
        if preferred[p] != 0 {
            assert_eq!(
                s.leader, preferred[p],
                "partition {p} is led by its preferred replica"
            );
        }
    }
    cluster.start_broker(0);
    wait_served(&cluster, "elect", 12, &[0, 1, 2], Some(&[0, 1, 2]));
}

/// A controlled shutdown of broker 1 with the controller killed after one
/// partition moved: broker 1 asks again (controlled.shutdown.max.retries),
/// the next controller moves the rest, and broker 1 exits cleanly with no
/// leadership left to it.
#[test]
fn a_controlled_shutdown_killed_midway_is_completed_by_the_next_controller() {
    let mut cluster = cluster_with_doomed_controller("controller.controlled_shutdown.one_moved");
    assert_eq!(create(&cluster, 0, "stay", 12), 0);
    let served = wait_served(&cluster, "stay", 12, &[0, 1, 2], Some(&[0, 1, 2]));
    assert!(served.values().filter(|p| p.leader == 1).count() >= 2);
    let mut stopping = cluster.brokers.remove(&1).expect("broker 1");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(stopping.pid() as i32, libc::SIGTERM) };
    wait_for_new_controller(&mut cluster);
    let status = stopping.wait_for_exit(Duration::from_secs(60));
    assert!(status.success(), "broker 1 exited cleanly: {status}");
    assert!(
        stopping.count_lines("controlled shutdown of broker 1 succeeded") == 1,
        "broker 1's controlled shutdown succeeded: {:?}",
        stopping.log_lines()
    );
    // Broker 2 is the only live broker left: it controls and leads
    // everything (broker 1 may have been the controller while stopping).
    wait_until(
        "broker 2 to be the controller",
        Duration::from_secs(60),
        || metadata(&cluster, 2, "none").is_some_and(|(c, _, _)| c == 2),
    );
    wait_served(&cluster, "stay", 12, &[2], None);
    wait_agrees_with_zookeeper(&cluster, "stay", 12);
    for id in [0, 1] {
        cluster.start_broker(id);
    }
    wait_served(&cluster, "stay", 12, &[0, 1, 2], Some(&[0, 1, 2]));
}
