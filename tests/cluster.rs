//! Several brokers in one cluster over a real ZooKeeper: one controller,
//! elected through `/controller`, places partitions on every broker and
//! tells each broker (LeaderAndIsr, UpdateMetadata over the wire) what it
//! leads; every broker answers Metadata for the whole cluster, and clients
//! bootstrapped anywhere produce and consume everywhere. Controller death
//! elects another; a dead leader's single-replica partitions are offline
//! and come back with it. Replication itself is `tests/replication.rs`.

#[path = "common/acks.rs"]
mod acks;
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::{consume, create_replicated_topic, create_topic, produce, Cluster};
use common::{admin, admin_options, alter_retention, block_on, client_config, described_retention};
use rdkafka::consumer::{BaseConsumer, Consumer};

/// Three brokers in two racks: one controller; a 6-partition topic
/// created through any broker has two leaders per broker, every broker's
/// Metadata says so, and clients bootstrapped on one broker produce to and
/// consume from all. Replicated topics (RF 2 and 3) put each partition's
/// replicas on distinct brokers spanning both racks, leaders still two per
/// broker.
#[test]
fn three_brokers_share_a_topic() {
    let cluster = Cluster::start_in_racks(3, &["rack-a", "rack-a", "rack-b"]);
    cluster.wait_for(
        &[0, 1, 2],
        "",
        "3 brokers and a controller",
        |_, brokers, controller| brokers == 3 && (0..3).contains(&controller),
    );
    let (_, _, controller) = cluster.view(0, "");
    // Created through a broker that is not the controller.
    let via = (controller + 1) % 3;
    create_topic(&cluster.bootstrap(via), "spread", 6);
    cluster.wait_for(&[0, 1, 2], "spread", "6 led partitions", |leaders, _, _| {
        leaders.len() == 6 && leaders.values().all(|&l| l >= 0)
    });
    let (leaders, _, _) = cluster.view(2, "spread");
    let mut per_broker = BTreeMap::new();
    for leader in leaders.values() {
        *per_broker.entry(*leader).or_insert(0) += 1;
    }
    assert_eq!(
        per_broker,
        BTreeMap::from([(0, 2), (1, 2), (2, 2)]),
        "{leaders:?}"
    );
    for (topic, replication) in [("two-racks", 2), ("everywhere", 3)] {
        create_replicated_topic(&cluster.bootstrap(via), topic, 6, replication);
        cluster.wait_for(&[0, 1, 2], topic, "6 led partitions", |leaders, _, _| {
            leaders.len() == 6 && leaders.values().all(|&l| l >= 0)
        });
        let replicas = cluster.replicas(1, topic);
        let mut leaders = BTreeMap::new();
        for (partition, set) in &replicas {
            assert_eq!(
                set.len(),
                replication as usize,
                "{topic}-{partition}: {set:?}"
            );
            let distinct: std::collections::BTreeSet<_> = set.iter().collect();
            assert_eq!(distinct.len(), set.len(), "{topic}-{partition}: {set:?}");
            assert!(
                set.contains(&2) && set.iter().any(|&b| b < 2),
                "{topic}-{partition} spans both racks: {set:?}"
            );
            *leaders.entry(set[0]).or_insert(0) += 1;
        }
        assert_eq!(
            leaders,
            BTreeMap::from([(0, 2), (1, 2), (2, 2)]),
            "{topic}: {replicas:?}"
        );
    }
    produce(&cluster.bootstrap(2), "spread", 0..120);
    assert_eq!(consume(&cluster.bootstrap(1), "spread", 120).len(), 120);

    // Partitions added by an admin client bootstrapped on a broker that is
    // not the controller (librdkafka sends it to the controller).
    let added = block_on(admin(&cluster.bootstrap(via)).create_partitions(
        &[rdkafka::admin::NewPartitions::new("spread", 9)],
        &admin_options(Duration::from_secs(30)),
    ))
    .expect("CreatePartitions answered");
    assert!(added[0].is_ok(), "{added:?}");
    cluster.wait_for(&[0, 1, 2], "spread", "9 led partitions", |leaders, _, _| {
        leaders.len() == 9 && leaders.values().all(|&l| l >= 0)
    });

    // A topic deleted by an admin client bootstrapped on a broker that is
    // not the controller disappears from every broker.
    let deleted = block_on(
        admin(&cluster.bootstrap(via))
            .delete_topics(&["two-racks"], &admin_options(Duration::from_secs(30))),
    )
    .expect("DeleteTopics answered");
    assert!(deleted[0].is_ok(), "{deleted:?}");
    cluster.wait_for(
        &[0, 1, 2],
        "two-racks",
        "the topic gone",
        |leaders, _, _| leaders.is_empty(),
    );

    // A config altered through one broker reaches every broker
    // (/config/changes notifications, as Kafka does).
    alter_retention(&cluster.bootstrap(via), "spread", "1234000");
    for id in 0..3 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while described_retention(&cluster.bootstrap(id), "spread").as_deref() != Some("1234000") {
            assert!(
                Instant::now() < deadline,
                "broker {id} never saw the new retention.ms"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Each broker holds exactly the logs of the partitions it leads.
    for (&partition, &leader) in &leaders {
        for id in 0..3 {
            let log = cluster.dirs[id as usize]
                .path()
                .join(format!("spread-{partition}"));
            assert_eq!(
                log.exists(),
                id == leader,
                "spread-{partition} on broker {id}"
            );
        }
    }
}

/// SIGKILL the controller: another broker is elected (a new controller
/// epoch) and serves; the dead broker's partitions are offline (leader -1,
/// no in-sync replica left) and come back, records intact, when it returns.
#[test]
fn controller_death_elects_another_and_partitions_return_with_their_broker() {
    let mut cluster = Cluster::start(3);
    cluster.wait_for(&[0, 1, 2], "", "3 brokers", |_, brokers, controller| {
        brokers == 3 && controller >= 0
    });
    let (_, _, controller) = cluster.view(0, "");
    let survivor = (controller + 1) % 3;
    create_topic(&cluster.bootstrap(survivor), "durable", 3);
    cluster.wait_for(
        &[0, 1, 2],
        "durable",
        "3 led partitions",
        |leaders, _, _| leaders.len() == 3 && leaders.values().all(|&l| l >= 0),
    );
    produce(&cluster.bootstrap(survivor), "durable", 0..60);

    let killed = cluster
        .brokers
        .remove(&controller)
        .expect("controller process");
    let died = Instant::now();
    killed.kill();
    let others: Vec<i32> = (0..3).filter(|&id| id != controller).collect();
    cluster.wait_for(
        &others,
        "durable",
        "a new controller and an offline partition",
        |leaders, brokers, new_controller| {
            brokers == 2
                && new_controller >= 0
                && new_controller != controller
                && leaders.values().filter(|&&l| l == -1).count() == 1
        },
    );
    eprintln!("controller failover observed after {:?}", died.elapsed());

    cluster.start_broker(controller);
    cluster.wait_for(
        &[0, 1, 2],
        "durable",
        "every partition led again",
        |leaders, brokers, _| {
            brokers == 3 && leaders.len() == 3 && leaders.values().all(|&l| l >= 0)
        },
    );
    produce(&cluster.bootstrap(controller), "durable", 60..90);
    assert_eq!(
        consume(&cluster.bootstrap(survivor), "durable", 90).len(),
        90
    );
}

/// `scripts/cluster.sh start 3` (the README's "Run a cluster") starts
/// ZooKeeper and three brokers that form one cluster; `stop` ends them.
#[test]
fn cluster_script_starts_and_stops_a_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh");
    let run = |args: &[&str]| {
        let output = std::process::Command::new(script)
            .args(args)
            .env("FERROLOG_BIN", env!("CARGO_BIN_EXE_ferrolog"))
            .env("FERROLOG_CLUSTER_DIR", dir.path())
            .output()
            .expect("the script runs");
        let said = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{args:?}: {said}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        said
    };
    // Stops whatever started, even when an assertion fails.
    struct StopOnDrop<'a>(&'a dyn Fn(&[&str]) -> String);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                let _ =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.0)(&["stop"])));
            }
        }
    }
    let _guard = StopOnDrop(&run);
    let said = run(&["start", "3"]);
    let bootstrap = said
        .lines()
        .find_map(|l| l.strip_prefix("bootstrap: "))
        .expect("the bootstrap list is printed")
        .to_string();
    assert_eq!(bootstrap.split(',').count(), 3);
    let client: BaseConsumer = client_config(&bootstrap).create().expect("client");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let brokers = client
            .fetch_metadata(None, Duration::from_secs(10))
            .map(|m| m.brokers().len())
            .unwrap_or(0);
        if brokers == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the brokers never formed a cluster"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    run(&["stop"]);
    let first = bootstrap
        .split(',')
        .next()
        .expect("one address")
        .to_string();
    assert!(
        std::net::TcpStream::connect(&first).is_err(),
        "the brokers are stopped"
    );
}

/// Figures for the issue notes, run by hand (several minutes):
/// `FERROLOG_MEASURE=1 cargo test --release --test cluster measure -- --nocapture`.
/// Controller failover (SIGKILL of the controller until a survivor names a
/// new one), the time until the dead broker's partitions are reported
/// offline, the time from its restart until they serve again, with 100
/// partitions; and how long CreateTopics takes for 1,000 partitions.
#[test]
fn measure_failover_and_creation() {
    if std::env::var("FERROLOG_MEASURE").is_err() {
        eprintln!("skipped: set FERROLOG_MEASURE=1 to measure");
        return;
    }
    let mut cluster = Cluster::start(3);
    cluster.wait_for(&[0, 1, 2], "", "3 brokers", |_, brokers, controller| {
        brokers == 3 && controller >= 0
    });
    let (_, _, controller) = cluster.view(0, "");
    let survivor = (controller + 1) % 3;
    create_topic(&cluster.bootstrap(survivor), "hundred", 100);
    cluster.wait_for(
        &[0, 1, 2],
        "hundred",
        "100 led partitions",
        |leaders, _, _| leaders.len() == 100 && leaders.values().all(|&l| l >= 0),
    );
    let led_by_victim = cluster
        .view(survivor, "hundred")
        .0
        .values()
        .filter(|&&l| l == controller)
        .count();
    let killed = cluster.brokers.remove(&controller).expect("controller");
    let died = Instant::now();
    killed.kill();
    let mut elected = None;
    let mut offline = None;
    while (elected.is_none() || offline.is_none()) && died.elapsed() < Duration::from_secs(120) {
        let (leaders, _, now_controller) = cluster.view(survivor, "hundred");
        if elected.is_none() && now_controller >= 0 && now_controller != controller {
            elected = Some(died.elapsed());
        }
        if offline.is_none() && leaders.values().filter(|&&l| l == -1).count() == led_by_victim {
            offline = Some(died.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let restarted = Instant::now();
    cluster.start_broker(controller);
    cluster.wait_for(
        &[survivor],
        "hundred",
        "every partition led",
        |leaders, _, _| leaders.len() == 100 && leaders.values().all(|&l| l >= 0),
    );
    let back = restarted.elapsed();
    let created = Instant::now();
    create_topic(&cluster.bootstrap(survivor), "thousand", 1000);
    cluster.wait_for(
        &[0, 1, 2],
        "thousand",
        "1000 led partitions",
        |leaders, _, _| leaders.len() == 1000 && leaders.values().all(|&l| l >= 0),
    );
    let creation = created.elapsed();
    let LeaderFailover {
        failover,
        serving,
        handover,
        longest_silence,
        longest_partition_silence,
    } = measure_leader_failover(&mut cluster);
    println!(
        "zookeeper.session.timeout.ms=4000, 3 brokers, 100 partitions ({led_by_victim} on the killed controller):\n\
         controller failover (SIGKILL -> new controller in Metadata): {elected:?}\n\
         dead leader's partitions reported offline: {offline:?}\n\
         restart -> its partitions served again (includes process start): {back:?}\n\
         CreateTopics of 1,000 partitions until every broker reports every leader: {creation:?}\n\
         leader failover, RF=3, 100 partitions, a leader SIGKILLed: new leaders in Metadata \
         {failover:?}, a record acknowledged (acks=all) by each new leader {serving:?}\n\
         controlled shutdown (SIGTERM) of a leader: new leaders in Metadata {handover:?}; \
         under acks=all load (idempotent, ~400 records/s over the 100 partitions) the longest \
         gap between acknowledgements {longest_silence:?}, on one of its partitions \
         {longest_partition_silence:?} (their usual spacing is about 250 ms)"
    );
    assert!(elected.is_some() && offline.is_some());
}

/// What [`measure_leader_failover`] measured.
struct LeaderFailover {
    /// SIGKILL of a leader until Metadata names a new leader for each of
    /// its partitions.
    failover: Duration,
    /// SIGKILL until each of those new leaders acknowledged a record.
    serving: Duration,
    /// SIGTERM (controlled shutdown) until Metadata names new leaders.
    handover: Duration,
    /// During the controlled shutdown, under load: the longest time
    /// without any acknowledgement, and without one on a single partition
    /// the stopping broker led.
    longest_silence: Duration,
    longest_partition_silence: Duration,
}

/// Leader failover with replication: 100 partitions of 3 replicas; a
/// broker other than `controller` is SIGKILLed, and later, once it is
/// back and in sync, stopped with SIGTERM under an acks=all load.
fn measure_leader_failover(cluster: &mut Cluster) -> LeaderFailover {
    let (_, _, controller) = cluster.view(0, "");
    let observer = (controller + 1).rem_euclid(3);
    let topic = "failover";
    create_replicated_topic(&cluster.bootstrap(observer), topic, 100, 3);
    let in_sync = |cluster: &Cluster, at: i32| {
        let isrs = cluster.isrs(at, topic);
        isrs.len() == 100 && isrs.values().all(|isr| isr.len() == 3)
    };
    wait_until_true("a full ISR", || in_sync(cluster, observer));
    // The victim is the broker other than the controller that leads the
    // most partitions: a victim leading none would measure nothing.
    // Metadata can leave the topic out for a moment after the ISRs are
    // whole (it answers an error for it): wait for every leader.
    let mut leaders = BTreeMap::new();
    wait_until_true("every leader in Metadata", || {
        leaders = cluster.view(observer, topic).0;
        leaders.len() == 100
    });
    let led_by = |broker: i32| -> Vec<i32> {
        leaders
            .iter()
            .filter_map(|(&partition, &leader)| (leader == broker).then_some(partition))
            .collect()
    };
    let victim = (0..3)
        .filter(|&b| b != controller)
        .max_by_key(|&b| led_by(b).len())
        .expect("two brokers besides the controller");
    let survivor = (0..3)
        .find(|&b| b != controller && b != victim)
        .expect("a third broker");
    let led = led_by(victim);
    assert!(
        !led.is_empty(),
        "no broker besides the controller {controller} leads a partition: {leaders:?}"
    );
    let in_sync = |cluster: &Cluster| in_sync(cluster, survivor);
    let moved = |cluster: &Cluster| {
        let leaders = cluster.view(survivor, topic).0;
        led.iter()
            .all(|p| leaders.get(p).is_some_and(|&l| l >= 0 && l != victim))
    };
    let killed = cluster.brokers.remove(&victim).expect("victim");
    let died = Instant::now();
    killed.kill();
    wait_until_true("new leaders", || moved(cluster));
    let failover = died.elapsed();
    let producer: rdkafka::producer::BaseProducer = client_config(&cluster.bootstrap(survivor))
        .set("acks", "all")
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    for &partition in &led {
        let record = rdkafka::producer::BaseRecord::to(topic)
            .partition(partition)
            .payload("after the failover")
            .key("k");
        producer.send(record).map_err(|(e, _)| e).expect("queued");
    }
    rdkafka::producer::Producer::flush(&producer, Duration::from_secs(60))
        .expect("every new leader acknowledged");
    let serving = died.elapsed();
    let complaints_seen = print_fetcher_complaints(cluster, &BTreeMap::new());

    cluster.start_broker(victim);
    wait_until_true("a full ISR again", || in_sync(cluster));
    // Preferred elections at whichever broker is the controller now,
    // again while a leader's concurrent ISR write makes one fail.
    let all: Vec<i32> = (0..100).collect();
    let preferred: BTreeMap<i32, i32> = cluster
        .replicas(survivor, topic)
        .into_iter()
        .map(|(partition, replicas)| (partition, replicas[0]))
        .collect();
    wait_until_true("every partition led by its preferred replica", || {
        let (leaders, _, now_controller) = cluster.view(survivor, topic);
        if leaders == preferred {
            return true;
        }
        if now_controller >= 0 {
            elect(&cluster.bootstrap(now_controller), 0, topic, &all);
        }
        false
    });
    let now_led = cluster.view(survivor, topic).0;
    let stopping_led: Vec<i32> = now_led
        .iter()
        .filter_map(|(&partition, &leader)| (leader == victim).then_some(partition))
        .collect();
    let timeline = acks::Timeline::new();
    let load = acks::AckedProducer::start(
        &cluster.bootstrap(survivor),
        topic,
        100,
        Duration::from_secs(60),
        timeline.clone(),
    );
    assert!(
        load.wait_for_acks(&all, 2, Duration::ZERO, Duration::from_secs(60)),
        "the load never reached every partition"
    );
    let mut stopping = cluster.brokers.remove(&victim).expect("victim");
    let asked = Instant::now();
    let asked_at = timeline.now();
    if std::env::var("FERROLOG_MEASURE_DETAIL").is_ok() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let of_day = wall.as_millis() % 86_400_000;
        println!(
            "SIGTERM at {:02}:{:02}:{:02}.{:03} UTC = {:.3}s of the timeline",
            of_day / 3_600_000,
            of_day / 60_000 % 60,
            of_day / 1000 % 60,
            of_day % 1000,
            asked_at.as_secs_f64()
        );
    }
    // SAFETY: signalling a child process of this test.
    unsafe { libc::kill(stopping.pid() as i32, libc::SIGTERM) };
    wait_until_true("leaders moved by the controlled shutdown", || {
        let leaders = cluster.view(survivor, topic).0;
        leaders.len() == 100 && leaders.values().all(|&l| l >= 0 && l != victim)
    });
    let handover = asked.elapsed();
    assert!(stopping.wait_for_exit(Duration::from_secs(60)).success());
    std::thread::sleep(Duration::from_secs(3));
    let window = asked_at..timeline.now();
    print_fetcher_complaints(cluster, &complaints_seen);
    load.finish().expect("the load's producer");
    let (failed, _) = timeline.failures();
    assert_eq!(
        failed, 0,
        "deliveries failed during the controlled shutdown"
    );
    let longest_gap = |times: Vec<Duration>| {
        let mut times: Vec<Duration> = times.into_iter().filter(|at| window.contains(at)).collect();
        times.sort();
        times.insert(0, window.start);
        times.push(window.end);
        times
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .max()
            .unwrap_or_default()
    };
    let acknowledged = timeline.acks();
    let longest_silence = longest_gap(acknowledged.iter().map(|a| a.at).collect());
    let longest_partition_silence = stopping_led
        .iter()
        .map(|&p| {
            longest_gap(
                acknowledged
                    .iter()
                    .filter(|a| a.partition == p)
                    .map(|a| a.at)
                    .collect(),
            )
        })
        .max()
        .unwrap_or_default();
    if std::env::var("FERROLOG_MEASURE_DETAIL").is_ok() {
        print_worst_partition(
            cluster,
            &mut stopping,
            &stopping_led,
            &acknowledged,
            &window,
            topic,
        );
    }
    for line in stopping.log_lines() {
        if line.contains("controlled shutdown") {
            println!("broker {victim}: {line}");
        }
    }
    println!(
        "broker {victim} led {} partitions when killed and {} when stopped; the controller is {controller}",
        led.len(),
        stopping_led.len()
    );
    LeaderFailover {
        failover,
        serving,
        handover,
        longest_silence,
        longest_partition_silence,
    }
}

/// The measure's diagnostic (`FERROLOG_MEASURE_DETAIL`): the partition
/// the stopping broker led with the longest silence, its
/// acknowledgements in the window, and every broker's log lines that name
/// it (wall clock, milliseconds; the window's start is printed beside).
fn print_worst_partition(
    cluster: &mut Cluster,
    stopping: &mut common::BrokerProcess,
    stopping_led: &[i32],
    acknowledged: &[acks::Ack],
    window: &std::ops::Range<Duration>,
    topic: &str,
) {
    let silence = |p: i32| {
        let mut times: Vec<Duration> = acknowledged
            .iter()
            .filter(|a| a.partition == p && window.contains(&a.at))
            .map(|a| a.at)
            .collect();
        times.insert(0, window.start);
        times
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or_default()
    };
    let Some(&worst) = stopping_led.iter().max_by_key(|&&p| silence(p)) else {
        return;
    };
    println!(
        "worst partition {topic}-{worst}: silence {:?}; window starts at {:.3}s of the timeline",
        silence(worst),
        window.start.as_secs_f64()
    );
    for ack in acknowledged
        .iter()
        .filter(|a| a.partition == worst && window.contains(&a.at))
        .take(20)
    {
        println!(
            "  ack offset {} at {:.3}s",
            ack.offset,
            ack.at.as_secs_f64()
        );
    }
    let name = format!("{topic}-{worst}");
    let mut lines: Vec<String> = stopping
        .log_lines()
        .into_iter()
        .filter(|l| l.contains(&name) || l.contains("controlled shutdown"))
        .map(|l| format!("stopping: {l}"))
        .collect();
    for (id, broker) in cluster.brokers.iter_mut() {
        lines.extend(
            broker
                .log_lines()
                .into_iter()
                .filter(|l| l.contains(&name) || l.contains(&format!("\"{topic}\", {worst})")))
                .map(|l| format!("broker {id}: {l}")),
        );
    }
    for line in lines.iter().rev().take(60).rev() {
        println!("  {line}");
    }
    // Every broker's whole log, for reading side by side.
    let dir = std::env::temp_dir();
    let mut logs: Vec<(String, Vec<String>)> = vec![("stopping".into(), stopping.log_lines())];
    for (id, broker) in cluster.brokers.iter_mut() {
        logs.push((format!("broker-{id}"), broker.log_lines()));
    }
    for (name, lines) in logs {
        let path = dir.join(format!("ferrolog-measure-{name}.log"));
        if std::fs::write(&path, lines.join("\n")).is_ok() {
            println!("  {name}'s log: {}", path.display());
        }
    }
}

/// Prints what the brokers' replica fetchers met since `seen` (a count of
/// log lines per broker; a backoff after each refusal is
/// replica.fetch.backoff.ms): the lines explain a failover figure.
/// Returns the new counts.
fn print_fetcher_complaints(
    cluster: &mut Cluster,
    seen: &BTreeMap<i32, usize>,
) -> BTreeMap<i32, usize> {
    let mut now_seen = BTreeMap::new();
    for (&broker, process) in cluster.brokers.iter_mut() {
        let lines = process.log_lines();
        let from = seen.get(&broker).copied().unwrap_or(0).min(lines.len());
        let complaints: Vec<&String> = lines[from..]
            .iter()
            .filter(|l| {
                l.contains("replica ") && (l.contains("failed") || l.contains("answered error"))
            })
            .collect();
        println!("broker {broker}: {} fetcher complaints", complaints.len());
        for line in complaints.iter().rev().take(8) {
            println!("  {line}");
        }
        now_seen.insert(broker, lines.len());
    }
    now_seen
}

fn wait_until_true(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn elect(
    bootstrap: &str,
    election_type: i8,
    topic: &str,
    partitions: &[i32],
) -> (i16, BTreeMap<i32, i16>) {
    common::cluster::elect_leaders(bootstrap, election_type, topic, partitions)
        .unwrap_or_else(|e| panic!("ElectLeaders to {bootstrap}: {e}"))
}

/// ElectLeaders (KIP-460) at the controller: preferred election where the
/// preferred replica leads already is ELECTION_NOT_NEEDED; a standby says
/// NOT_CONTROLLER; after the leader of a 2-replica partition dies, unclean
/// election gives the partition its other (live, out-of-sync) replica and
/// it serves again.
#[test]
fn elect_leaders_preferred_and_unclean() {
    let mut cluster = Cluster::start(3);
    cluster.wait_for(&[0, 1, 2], "", "3 brokers", |_, brokers, controller| {
        brokers == 3 && controller >= 0
    });
    let (_, _, controller) = cluster.view(0, "");
    let standby = (controller + 1) % 3;
    create_replicated_topic(&cluster.bootstrap(controller), "electable", 3, 2);
    cluster.wait_for(
        &[0, 1, 2],
        "electable",
        "3 led partitions",
        |leaders, _, _| leaders.len() == 3 && leaders.values().all(|&l| l >= 0),
    );
    let (top, results) = elect(&cluster.bootstrap(controller), 0, "electable", &[0, 1, 2]);
    assert_eq!(top, 0);
    assert_eq!(
        results,
        BTreeMap::from([(0, 84), (1, 84), (2, 84)]),
        "ELECTION_NOT_NEEDED"
    );
    let (top, _) = elect(&cluster.bootstrap(standby), 0, "electable", &[0]);
    assert_eq!(top, 41, "NOT_CONTROLLER");

    // The partition whose replicas are both not the controller: kill its
    // follower (the controller takes it out of the ISR), then its leader
    // (offline: no live ISR member), then bring the follower back. Only an
    // unclean election may make it lead.
    let replicas = cluster.replicas(controller, "electable");
    let (&partition, pair) = replicas
        .iter()
        .find(|(_, r)| !r.contains(&controller))
        .expect("a partition without the controller");
    let (leaders, _, _) = cluster.view(controller, "electable");
    let leader = leaders[&partition];
    let follower = pair.iter().copied().find(|&r| r != leader).expect("RF 2");
    cluster.brokers.remove(&follower).expect("follower").kill();
    std::thread::sleep(std::time::Duration::from_secs(6));
    cluster.brokers.remove(&leader).expect("leader").kill();
    cluster.wait_for(
        &[controller],
        "electable",
        "the partition offline",
        |leaders, _, _| leaders.get(&partition) == Some(&-1),
    );
    cluster.start_broker(follower);
    cluster.wait_for(&[controller], "", "the follower back", |_, brokers, _| {
        brokers == 2
    });
    let (top, results) = elect(&cluster.bootstrap(controller), 0, "electable", &[partition]);
    assert_eq!(
        (top, results.get(&partition).copied()),
        (0, Some(80)),
        "PREFERRED_LEADER_NOT_AVAILABLE: the preferred replica is dead or out of the ISR"
    );
    let (top, results) = elect(&cluster.bootstrap(controller), 1, "electable", &[partition]);
    assert_eq!((top, results.get(&partition).copied()), (0, Some(0)));
    cluster.wait_for(
        &[controller],
        "electable",
        "the follower leading",
        |leaders, _, _| leaders.get(&partition) == Some(&follower),
    );
    produce(&cluster.bootstrap(controller), "electable", 0..30);
}

/// `wait_until_true` for checks that open connections: every 250 ms.
fn wait_slowly(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Whether `path` exists under the cluster's chroot in ZooKeeper.
fn znode_exists(cluster: &Cluster, path: &str) -> bool {
    cluster.read_znodes(&[path.to_string()])[0].is_some()
}

fn partition_metadata_of(cluster: &Cluster, broker: i32, dir: &str) -> Option<String> {
    std::fs::read_to_string(
        cluster.dirs[broker as usize]
            .path()
            .join(dir)
            .join("partition.metadata"),
    )
    .ok()
}

/// Issue 20, hole 6: a topic deleted while a broker holding replicas of it
/// is down stays marked (`/admin/delete_topics/<t>` and its znodes kept,
/// Kafka's TopicDeletionManager: those replicas are "ineligible"), is
/// served nowhere and cannot be created again; when the broker returns,
/// the deletion resumes, deletes its replicas, and completes. Each
/// partition directory names its topic id in Kafka's `partition.metadata`;
/// the re-created topic has a new one, and its records are the only ones
/// any replica serves. A log whose `partition.metadata` names another
/// topic id is refused (INCONSISTENT_TOPIC_ID) and left untouched, while
/// the broker's other replicas serve on.
#[test]
fn a_deletion_waits_for_offline_replicas_and_topic_ids_guard_the_logs() {
    let mut cluster = Cluster::start(3);
    let boot = cluster.bootstrap(0);
    create_replicated_topic(&boot, "again", 2, 3);
    produce(&boot, "again", 0..50);
    wait_slowly("broker 2 has both replicas in sync", || {
        cluster
            .isrs(0, "again")
            .values()
            .all(|isr| isr == &[0, 1, 2])
    });
    let old_id = partition_metadata_of(&cluster, 2, "again-0").expect("partition.metadata");
    assert!(old_id.starts_with("version: 0\ntopic_id: "), "{old_id:?}");
    assert_eq!(
        partition_metadata_of(&cluster, 0, "again-0"),
        Some(old_id.clone())
    );

    // Broker 2 dies; the topic is deleted meanwhile.
    cluster.brokers.remove(&2).expect("broker 2").kill();
    let deleted =
        block_on(admin(&boot).delete_topics(&["again"], &admin_options(Duration::from_secs(30))))
            .expect("DeleteTopics answered");
    assert!(deleted[0].is_ok(), "{deleted:?}");
    wait_slowly("brokers 0 and 1 delete their replicas", || {
        (0..2).all(|b| !cluster.dirs[b].path().join("again-0").exists())
    });
    assert!(znode_exists(&cluster, "/admin/delete_topics/again"));
    assert!(znode_exists(&cluster, "/brokers/topics/again"));
    assert!(cluster.dirs[2].path().join("again-0").exists());
    let recreated = block_on(admin(&boot).create_topics(
        &[rdkafka::admin::NewTopic::new(
            "again",
            2,
            rdkafka::admin::TopicReplication::Fixed(3),
        )],
        &admin_options(Duration::from_secs(30)),
    ))
    .expect("CreateTopics answered");
    assert!(
        matches!(
            recreated[0],
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists))
        ),
        "a topic whose deletion waits cannot be created again: {recreated:?}"
    );

    // Broker 2 returns: the deletion resumes there and completes.
    cluster.start_broker(2);
    wait_slowly("the deletion completes", || {
        !cluster.dirs[2].path().join("again-0").exists()
            && !znode_exists(&cluster, "/admin/delete_topics/again")
            && !znode_exists(&cluster, "/brokers/topics/again")
    });

    create_replicated_topic(&boot, "again", 2, 3);
    produce(&boot, "again", 100..130);
    wait_slowly("the new topic's replicas are in sync", || {
        cluster
            .isrs(0, "again")
            .values()
            .all(|isr| isr == &[0, 1, 2])
    });
    let new_id = partition_metadata_of(&cluster, 2, "again-0").expect("partition.metadata");
    assert_ne!(new_id, old_id, "the re-created topic has a new id");
    let seen = consume(&boot, "again", 30);
    let expected: Vec<String> = (100..130).map(|i| format!("record-{i}")).collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(seen, expected_sorted, "only the new topic's records");

    // A log of another topic id on broker 2: refused and left as it is.
    let log_dir = cluster.brokers.remove(&2).expect("broker 2").terminate();
    let foreign = "version: 0\ntopic_id: BwcHBwcHBwcHBwcHBwcHBw\n";
    std::fs::write(log_dir.join("again-0").join("partition.metadata"), foreign).expect("write");
    cluster.start_broker(2);
    cluster
        .brokers
        .get_mut(&2)
        .expect("broker 2")
        .wait_for_line("is not taken up here", Duration::from_secs(30));
    wait_slowly("partition 1 is whole again", || {
        cluster.isrs(0, "again").get(&1) == Some(&vec![0, 1, 2])
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(cluster.isrs(0, "again").get(&0), Some(&vec![0, 1]));
    assert_eq!(
        std::fs::read_to_string(log_dir.join("again-0").join("partition.metadata")).ok(),
        Some(foreign.to_string())
    );
}

/// What a broker answers to Metadata for a topic, classified.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    /// Every partition, each with a leader.
    Whole,
    /// The topic error code (LEADER_NOT_AVAILABLE is Kafka's answer for a
    /// topic that exists but is not in this broker's cache yet).
    Error(i16),
    /// No error, but fewer partitions than the topic has, or one without a
    /// leader: librdkafka fails queued records for partitions that vanish.
    Partial(usize),
}

/// Polls broker `address` with Metadata for `topic` (auto-creation
/// allowed, as librdkafka's producer asks) from before it listens until it
/// answers `Whole`, and counts each kind of answer.
fn poll_metadata(address: String, topic: &str, partitions: usize) -> BTreeMap<Answer, usize> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let mut answers = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let response: Result<MetadataResponse, String> = common::try_raw_request(
            &address,
            ApiKey::Metadata,
            9,
            &MetadataRequest::default()
                .with_allow_auto_topic_creation(true)
                .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
                    TopicName(StrBytes::from_string(topic.to_string())),
                ))])),
            Duration::from_secs(5),
        );
        let Ok(response) = response else {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        let Some(t) = response.topics.first() else {
            continue;
        };
        let answer = if t.error_code != 0 {
            Answer::Error(t.error_code)
        } else if t.partitions.len() == partitions
            && t.partitions.iter().all(|p| p.leader_id.0 >= 0)
        {
            Answer::Whole
        } else {
            Answer::Partial(t.partitions.len())
        };
        *answers.entry(answer.clone()).or_default() += 1;
        if answer == Answer::Whole {
            break;
        }
    }
    answers
}

/// A broker that restarts knows no topic until the controller's first
/// UpdateMetadata reaches it. Asked meanwhile for an existing topic (with
/// auto-creation allowed, as librdkafka's producer asks), it answers as
/// Kafka does: LEADER_NOT_AVAILABLE (the creation finds the topic exists;
/// clients retry). UNKNOWN_TOPIC_OR_PARTITION there made librdkafka fail
/// the records it had queued for that topic (the soak saw thousands), and
/// a partial topic would fail those of the partitions missing.
#[test]
fn a_restarted_broker_answers_an_existing_topic_it_does_not_know_yet_as_kafka_does() {
    let mut cluster = Cluster::start(3);
    create_replicated_topic(&cluster.bootstrap(0), "known", 6, 3);
    cluster.wait_for(&[0, 1, 2], "known", "6 led partitions", |leaders, _, _| {
        leaders.len() == 6 && leaders.values().all(|&l| l >= 0)
    });
    let (_, _, controller) = cluster.view(0, "known");
    let mut seen: BTreeMap<Answer, usize> = BTreeMap::new();
    for round in 0..4 {
        let victim = (controller + 1 + round % 2) % 3;
        let address = cluster.addresses[&victim].clone();
        let _ = cluster.brokers.remove(&victim).expect("running").kill();
        let poller = std::thread::spawn(move || poll_metadata(address, "known", 6));
        cluster.start_broker(victim);
        for (answer, count) in poller.join().expect("poller") {
            *seen.entry(answer).or_default() += count;
        }
    }
    eprintln!("answers while restarting: {seen:?}");
    assert!(seen.contains_key(&Answer::Whole), "{seen:?}");
    for answer in seen.keys() {
        assert!(
            matches!(answer, Answer::Whole | Answer::Error(5)),
            "a restarted broker answered {answer:?} for an existing topic: {seen:?}"
        );
    }
}

/// A broker that joins while the controller has not yet told it who is
/// alive (the controller here SIGSTOPped, inside its ZooKeeper session)
/// names the controller in Metadata together with its endpoint, read from
/// the controller's registration: an answer never names a controller
/// missing from its brokers. Told of such a controller, librdkafka's admin
/// client waited for a connection to a broker it could not know, and told
/// of no controller it waited for a broker state change: either way
/// CreateTopics timed out (examples.rs saw it under load in CI; this test
/// timed out both ways). An admin client bootstrapped on the joiner alone,
/// asked to create a replicated topic while the controller is stopped,
/// creates it once the controller runs again.
#[test]
fn a_joining_broker_names_a_controller_clients_can_reach() {
    let mut cluster = Cluster::start_with(1, &["zookeeper.session.timeout.ms=20000"]);
    let controller_pid = cluster.brokers[&0].pid() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(controller_pid, libc::SIGSTOP) };
    cluster.dirs.push(tempfile::tempdir().expect("tempdir"));
    cluster.start_broker(1);
    let joined = cluster
        .brokers
        .get_mut(&1)
        .expect("started")
        .wait_for_line("joined cluster", Duration::from_secs(10));
    assert!(joined.contains("broker 0 is the controller"), "{joined}");
    let (brokers, controller) = metadata_brokers_and_controller(&cluster.bootstrap(1));
    // Asked now, the admin client's first Metadata comes from the joiner.
    let joiner = cluster.bootstrap(1);
    let creation = std::thread::spawn(move || {
        create_replicated_topic(&joiner, "after-join", 2, 2);
    });
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: as above.
    unsafe { libc::kill(controller_pid, libc::SIGCONT) };
    assert_eq!(
        (brokers.clone(), controller),
        (vec![0, 1], 0),
        "the joiner names the controller among its brokers, read from its registration"
    );
    creation
        .join()
        .expect("CreateTopics through the joiner succeeds once the controller runs");
    assert_eq!(
        metadata_brokers_and_controller(&cluster.bootstrap(1)),
        (vec![0, 1], 0)
    );
}

/// The broker ids and the controller id of a Metadata v9 answer.
fn metadata_brokers_and_controller(bootstrap: &str) -> (Vec<i32>, i32) {
    use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
    let response: MetadataResponse = common::raw_request(
        bootstrap,
        ApiKey::Metadata,
        9,
        &MetadataRequest::default().with_topics(Some(Vec::new())),
        Duration::from_secs(10),
    );
    let mut brokers: Vec<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    brokers.sort_unstable();
    (brokers, response.controller_id.0)
}

/// Off the active controller, CreateTopics, CreatePartitions and
/// DeleteTopics answer NOT_CONTROLLER and write nothing, as Kafka's
/// `KafkaApis` answers them (before, a standby wrote the topic itself, as
/// `AdminZkClient` would). Clients whose metadata still names an old
/// controller retry at the new one: the controller is SIGSTOPped past its
/// ZooKeeper session, the standby takes over, the old one comes back as a
/// standby, and librdkafka, kafka-python and KafkaJS admin clients, each
/// started against the old controller before the move, create a topic.
#[test]
fn only_the_active_controller_creates_and_deletes_topics() {
    use kafka_protocol::error::ResponseError;
    let mut cluster = Cluster::start(2);
    let mut controller = -1;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(0..2).contains(&controller) {
        assert!(Instant::now() < deadline, "no controller elected");
        std::thread::sleep(Duration::from_millis(200));
        let (brokers, named) = metadata_brokers_and_controller(&cluster.bootstrap(0));
        if brokers == [0, 1]
            && metadata_brokers_and_controller(&cluster.bootstrap(1)) == (vec![0, 1], named)
        {
            controller = named;
        }
    }
    let standby = 1 - controller;
    create_replicated_topic(&cluster.bootstrap(controller), "kept", 1, 2);
    cluster.wait_for(&[0, 1], "kept", "kept led", |leaders, _, _| {
        leaders.len() == 1 && leaders.values().all(|&l| l >= 0)
    });

    let at_standby = cluster.bootstrap(standby);
    let not_controller = ResponseError::NotController.code();
    assert_eq!(
        raw_topic_request(&at_standby, RawTopicRequest::Create("refused")),
        not_controller
    );
    assert_eq!(
        raw_topic_request(&at_standby, RawTopicRequest::AddPartitions("kept", 3)),
        not_controller
    );
    assert_eq!(
        raw_topic_request(&at_standby, RawTopicRequest::Delete("kept")),
        not_controller
    );
    assert_eq!(
        cluster.read_znodes(&[
            "/brokers/topics/refused".to_string(),
            "/admin/delete_topics/kept".to_string(),
        ]),
        vec![None, None],
        "a standby writes no topic and no deletion mark"
    );
    assert_eq!(
        cluster.replicas(controller, "kept").len(),
        1,
        "kept keeps 1 partition"
    );
    // At the controller the same requests succeed.
    let at_controller = cluster.bootstrap(controller);
    assert_eq!(
        raw_topic_request(&at_controller, RawTopicRequest::AddPartitions("kept", 3)),
        0
    );

    // Admin clients that learn the controller now, and act after it moved.
    let old = controller;
    let at_old = cluster.bootstrap(old);
    let rdkafka_admin = admin(&at_old);
    rdkafka_admin
        .inner()
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("librdkafka learns the cluster");
    let python = Interactive::start(
        common::require_tool("python3"),
        &[
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/python/stale_controller_admin.py"
            ),
            "--bootstrap",
            &at_old,
            "via-kafka-python",
        ],
        None,
    );
    let node = Interactive::start(
        common::require_tool("node"),
        &["stale_controller_admin.js", &at_old, "via-kafkajs"],
        Some(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node")),
    );
    let ready = format!("READY {old}");
    assert_eq!(python.line(Duration::from_secs(30)), ready, "kafka-python");
    assert_eq!(node.line(Duration::from_secs(30)), ready, "KafkaJS");

    let old_pid = cluster.brokers[&old].pid() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(old_pid, libc::SIGSTOP) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while metadata_brokers_and_controller(&cluster.bootstrap(standby)).1 != standby {
        assert!(
            Instant::now() < deadline,
            "broker {standby} never took over"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: as above.
    unsafe { libc::kill(old_pid, libc::SIGCONT) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while metadata_brokers_and_controller(&at_old) != (vec![0, 1], standby)
        || metadata_brokers_and_controller(&cluster.bootstrap(standby)) != (vec![0, 1], standby)
    {
        assert!(
            Instant::now() < deadline,
            "broker {old} never came back as a standby"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused_before = cluster
        .brokers
        .get_mut(&old)
        .expect("running")
        .count_lines("this broker is not the controller");

    python.go();
    node.go();
    // librdkafka hands NOT_CONTROLLER to the application instead of
    // retrying (as against Kafka, whose answer this is); its metadata
    // refresh finds the new controller and the application's retry
    // creates the topic.
    let mut attempts = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let created = block_on(rdkafka_admin.create_topics(
            &[rdkafka::admin::NewTopic::new(
                "via-librdkafka",
                1,
                rdkafka::admin::TopicReplication::Fixed(2),
            )],
            &admin_options(Duration::from_secs(30)),
        ))
        .expect("CreateTopics answered");
        let outcome = created[0].clone().map(|_| ()).map_err(|(_, code)| code);
        attempts.push(outcome);
        match outcome {
            Ok(()) => break,
            Err(rdkafka::types::RDKafkaErrorCode::NotController) if Instant::now() < deadline => {
                let _ = rdkafka_admin
                    .inner()
                    .fetch_metadata(None, Duration::from_secs(10));
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(code) => panic!("librdkafka: {code:?} after {attempts:?}"),
        }
    }
    eprintln!("librdkafka's attempts: {attempts:?}");
    assert_eq!(
        python.line(Duration::from_secs(60)),
        "OK via-kafka-python",
        "kafka-python"
    );
    assert_eq!(
        node.line(Duration::from_secs(60)),
        "OK via-kafkajs",
        "KafkaJS"
    );
    for topic in ["via-librdkafka", "via-kafka-python", "via-kafkajs"] {
        cluster.wait_for(&[0, 1], topic, "the topic led", |leaders, _, _| {
            leaders.len() == 1 && leaders.values().all(|&l| l >= 0)
        });
    }
    // Which clients went to the old controller first is theirs to decide
    // (KafkaJS refreshes its metadata before each attempt); each refusal
    // is a retry that ended in a created topic.
    let refused = cluster
        .brokers
        .get_mut(&old)
        .expect("running")
        .count_lines("this broker is not the controller")
        - refused_before;
    eprintln!("the old controller refused {refused} CreateTopics; every client created its topic");
}

enum RawTopicRequest<'a> {
    Create(&'a str),
    AddPartitions(&'a str, i32),
    Delete(&'a str),
}

/// One raw CreateTopics, CreatePartitions or DeleteTopics (so that an error
/// comes back as it is: a client library would retry NOT_CONTROLLER);
/// answers the topic's error code.
fn raw_topic_request(bootstrap: &str, request: RawTopicRequest<'_>) -> i16 {
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let name = |topic: &str| TopicName(StrBytes::from_string(topic.to_owned()));
    let timeout = Duration::from_secs(30);
    match request {
        RawTopicRequest::Create(topic) => {
            let response: CreateTopicsResponse = common::raw_request(
                bootstrap,
                ApiKey::CreateTopics,
                5,
                &CreateTopicsRequest::default()
                    .with_timeout_ms(10_000)
                    .with_topics(vec![CreatableTopic::default()
                        .with_name(name(topic))
                        .with_num_partitions(1)
                        .with_replication_factor(2)]),
                timeout,
            );
            response.topics[0].error_code
        }
        RawTopicRequest::AddPartitions(topic, count) => {
            let response: CreatePartitionsResponse = common::raw_request(
                bootstrap,
                ApiKey::CreatePartitions,
                2,
                &CreatePartitionsRequest::default()
                    .with_timeout_ms(10_000)
                    .with_topics(vec![CreatePartitionsTopic::default()
                        .with_name(name(topic))
                        .with_count(count)
                        .with_assignments(None)]),
                timeout,
            );
            response.results[0].error_code
        }
        RawTopicRequest::Delete(topic) => {
            let response: DeleteTopicsResponse = common::raw_request(
                bootstrap,
                ApiKey::DeleteTopics,
                4,
                &DeleteTopicsRequest::default()
                    .with_timeout_ms(10_000)
                    .with_topic_names(vec![name(topic)]),
                timeout,
            );
            response.responses[0].error_code
        }
    }
}

/// A client process driven line by line: its stdout lines arrive on a
/// channel; `go` writes a line to its stdin. Killed when dropped.
struct Interactive {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    stdin: std::sync::Mutex<Option<std::process::ChildStdin>>,
}

impl Interactive {
    fn start(program: std::path::PathBuf, args: &[&str], dir: Option<&str>) -> Interactive {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut command = Command::new(program);
        command
            .env_remove("LD_LIBRARY_PATH")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        let mut child = command.spawn().expect("the client starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Interactive {
            child,
            lines,
            stdin: std::sync::Mutex::new(stdin),
        }
    }

    /// The next line it prints (bounded).
    fn line(&self, timeout: Duration) -> String {
        self.lines
            .recv_timeout(timeout)
            .unwrap_or_else(|e| panic!("no line from the client in {timeout:?}: {e}"))
    }

    fn go(&self) {
        use std::io::Write;
        let mut stdin = self.stdin.lock().expect("stdin lock");
        if let Some(stdin) = stdin.as_mut() {
            stdin
                .write_all(b"go\n")
                .expect("the client reads its stdin");
            stdin.flush().expect("flush");
        }
    }
}

impl Drop for Interactive {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
