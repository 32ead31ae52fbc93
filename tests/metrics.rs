//! The HTTP listener (`http.listener`): `/metrics` read by the Prometheus
//! project's own parser (prometheus_client, strict OpenMetrics) after real
//! clients produced and consumed, with the names the JMX exporter gives
//! Kafka's MBeans; `/healthz` and `/readyz`; bad HTTP (unknown paths, a
//! huge request head) answered with HTTP's codes while the broker serves on;
//! and in a 3-broker cluster the ISR gauges following a SIGKILLed follower.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::cluster::{consume, create_replicated_topic, produce, Cluster};
use common::BrokerProcess;

type Labels = BTreeMap<String, String>;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Every sample `/metrics` at `address` answered, parsed by
/// tests/python/scrape.py.
fn scrape(address: &str) -> Vec<(String, Labels, f64)> {
    let out = std::process::Command::new(common::require_tool("python3"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/scrape.py"
        ))
        .arg(format!("http://{address}/metrics"))
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, Labels, f64)> =
        serde_json::from_str(stdout.trim()).expect("the scrape's JSON");
    samples
}

/// Whether a sample's labels include every one of `labels`.
fn labelled(sample: &Labels, labels: &[(&str, &str)]) -> bool {
    labels
        .iter()
        .all(|(k, v)| sample.get(*k).map(String::as_str) == Some(*v))
}

/// The value of `name` whose labels include `labels` (and, with an empty
/// `labels`, the series without a `topic` label: the broker-wide one).
fn value(samples: &[(String, Labels, f64)], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name && labelled(l, labels) && (!labels.is_empty() || !l.contains_key("topic"))
        })
        .map(|(_, _, v)| *v)
}

/// The sum over every series of `name` whose labels include `labels`.
fn sum(samples: &[(String, Labels, f64)], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| n == name && labelled(l, labels))
        .map(|(_, _, v)| *v)
        .sum()
}

/// One raw HTTP/1.1 exchange: the status code and the body.
fn http(address: &str, request: &[u8]) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream.write_all(request).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(address: &str, path: &str) -> (u16, String) {
    http(
        address,
        format!("GET {path} HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn http_address(broker: &mut BrokerProcess) -> String {
    let line = broker.wait_for_line("HTTP listener (http) bound to ", Duration::from_secs(30));
    // "... bound to 127.0.0.1:PORT: /metrics, /healthz, /readyz"
    line.split("bound to ")
        .nth(1)
        .and_then(|rest| rest.split(": ").next())
        .map(str::to_string)
        .expect("the line names the address")
}

/// librdkafka produces 100 records to a 2-partition topic and reads them
/// back; `/metrics` then counts exactly those appends, the reads, the
/// requests by API and version with latency quantiles, the partitions this
/// lone broker leads, their log end offsets, the controller and the
/// process, every line accepted by Prometheus's own parser.
#[test]
fn metrics_count_what_real_clients_did_under_kafkas_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(dir.path(), &[]);
    let address = http_address(&mut broker);
    let bootstrap = broker.bootstrap.clone();
    create_replicated_topic(&bootstrap, "counted", 2, 1);
    produce(&bootstrap, "counted", 0..100);
    let read = consume(&bootstrap, "counted", 100);
    assert_eq!(read.len(), 100, "every record read back");
    // A group that committed offsets 1 and 2: its lag is the rest.
    {
        use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
        let group: BaseConsumer = common::client_config(&bootstrap)
            .set("group.id", "lagging")
            .create()
            .expect("consumer");
        let mut committed = rdkafka::TopicPartitionList::new();
        for (partition, offset) in [(0, 1), (1, 2)] {
            committed
                .add_partition_offset("counted", partition, rdkafka::Offset::Offset(offset))
                .expect("offset");
        }
        group
            .commit(&committed, CommitMode::Sync)
            .expect("the commit is acknowledged");
    }

    let samples = scrape(&address);
    let topic = [("topic", "counted")];
    let counter = |name: &str, labels: &[(&str, &str)]| {
        value(
            &samples,
            &format!("kafka_server_brokertopicmetrics_{name}_total"),
            labels,
        )
        .unwrap_or_else(|| panic!("{name} {labels:?} is exported"))
    };
    assert_eq!(counter("messagesin", &topic), 100.0);
    assert!(counter("messagesin", &[]) >= 100.0);
    let bytes_in = counter("bytesin", &topic);
    assert!(bytes_in > 100.0 * "record-99".len() as f64, "{bytes_in}");
    assert!(counter("totalproducerequests", &topic) >= 1.0);
    assert_eq!(counter("failedproducerequests", &topic), 0.0);
    // Every batch went out at least once to the consumer.
    assert!(counter("bytesout", &topic) >= bytes_in);
    assert!(counter("totalfetchrequests", &topic) >= 1.0);
    assert_eq!(counter("failedfetchrequests", &topic), 0.0);

    let requests = |request: &str| {
        sum(
            &samples,
            "kafka_network_requestmetrics_requests_total",
            &[("request", request)],
        )
    };
    for request in [
        "Produce",
        "Fetch",
        "FetchConsumer",
        "Metadata",
        "ApiVersions",
    ] {
        assert!(requests(request) >= 1.0, "{request} requests counted");
    }
    assert!(
        samples.iter().any(
            |(n, l, _)| n == "kafka_network_requestmetrics_requests_total"
                && l.get("request").map(String::as_str) == Some("Produce")
                && l.contains_key("version")
        ),
        "requests carry their version"
    );
    for quantile in ["0.50", "0.99", "0.999"] {
        let p = value(
            &samples,
            "kafka_network_requestmetrics_totaltimems",
            &[("request", "Produce"), ("quantile", quantile)],
        )
        .expect("Produce's total time quantile");
        assert!(p > 0.0, "Produce p{quantile} = {p}");
    }
    // The parts of a request's time, each with its quantiles and count;
    // a Fetch's also under FetchConsumer.
    for part in [
        "requestqueuetimems",
        "localtimems",
        "responsequeuetimems",
        "responsesendtimems",
        "totaltimems",
    ] {
        for request in ["Produce", "FetchConsumer"] {
            let name = format!("kafka_network_requestmetrics_{part}");
            let count = value(&samples, &format!("{name}_count"), &[("request", request)])
                .unwrap_or_else(|| panic!("{name}_count for {request}"));
            assert!(count >= 1.0, "{name} {request}: {count}");
            assert!(
                value(
                    &samples,
                    &name,
                    &[("request", request), ("quantile", "0.99")]
                )
                .is_some(),
                "{name} {request} p99"
            );
        }
    }
    let total = |request: &str| {
        value(
            &samples,
            "kafka_network_requestmetrics_totaltimems",
            &[("request", request), ("quantile", "0.50")],
        )
        .expect("a median")
    };
    let local = value(
        &samples,
        "kafka_network_requestmetrics_localtimems",
        &[("request", "Produce"), ("quantile", "0.50")],
    )
    .expect("a median");
    assert!(
        local <= total("Produce") * 1.1,
        "local {local} within total"
    );

    // A lone broker leads everything it holds: the topic's 2 partitions
    // and the offsets topic's.
    let gauge = |name: &str| value(&samples, name, &[]).unwrap_or_else(|| panic!("{name}"));
    let partitions = gauge("kafka_server_replicamanager_partitioncount");
    assert!(partitions >= 2.0, "{partitions}");
    assert_eq!(gauge("kafka_server_replicamanager_leadercount"), partitions);
    assert_eq!(
        gauge("kafka_server_replicamanager_underreplicatedpartitions"),
        0.0
    );
    assert_eq!(
        gauge("kafka_server_replicamanager_underminisrpartitioncount"),
        0.0
    );
    assert_eq!(
        gauge("kafka_controller_kafkacontroller_activecontrollercount"),
        1.0
    );
    assert_eq!(
        gauge("kafka_controller_kafkacontroller_offlinepartitionscount"),
        0.0
    );
    assert_eq!(
        gauge("kafka_controller_kafkacontroller_globalpartitioncount"),
        partitions
    );
    assert!(gauge("kafka_controller_kafkacontroller_globaltopiccount") >= 1.0);
    assert_eq!(gauge("kafka_server_kafkaserver_brokerstate"), 3.0);
    assert_eq!(
        sum(&samples, "kafka_log_log_logendoffset", &topic),
        100.0,
        "the log end offsets add up to what was produced"
    );
    assert!(sum(&samples, "kafka_log_log_size", &topic) >= bytes_in);
    assert_eq!(sum(&samples, "kafka_log_log_numlogsegments", &topic), 2.0);
    assert_eq!(sum(&samples, "kafka_log_log_logstartoffset", &topic), 0.0);
    let group = |name: &str, labels: &[(&str, &str)]| {
        let mut all = vec![("consumergroup", "lagging"), ("topic", "counted")];
        all.extend_from_slice(labels);
        value(&samples, name, &all).unwrap_or_else(|| panic!("{name} {all:?}"))
    };
    let mut lag_sum = 0.0;
    for (partition, committed) in [("0", 1.0), ("1", 2.0)] {
        let at = [("partition", partition)];
        let end = value(&samples, "kafka_log_log_logendoffset", &[topic[0], at[0]])
            .expect("the partition's log end");
        assert_eq!(group("kafka_consumergroup_current_offset", &at), committed);
        assert_eq!(group("kafka_consumergroup_lag", &at), end - committed);
        lag_sum += end - committed;
    }
    assert_eq!(group("kafka_consumergroup_lag_sum", &[]), lag_sum);
    assert!(gauge("kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1.0);
    assert!(gauge("process_open_fds") > 0.0);
    assert!(gauge("process_resident_memory_bytes") > 1e6);
    assert!(gauge("process_cpu_seconds_total") > 0.0);

    assert_eq!(get(&address, "/healthz"), (200, "ok\n".to_string()));
    assert_eq!(get(&address, "/readyz"), (200, "ready\n".to_string()));

    // A deleted topic's series go, as Kafka removes its topic metrics;
    // the broker-wide ones keep their counts.
    let deleted = common::block_on(
        common::admin(&bootstrap).delete_topics(&["counted"], &common::admin_options(TIMEOUT)),
    )
    .expect("DeleteTopics answered");
    assert!(deleted.iter().all(Result::is_ok), "{deleted:?}");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let samples = scrape(&address);
        let name = "kafka_server_brokertopicmetrics_messagesin_total";
        if value(&samples, name, &topic).is_none() {
            assert!(value(&samples, name, &[]).is_some_and(|v| v >= 100.0));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the deleted topic's series stayed"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Unknown paths get 404, a request head past the 64 KiB bound 431, bytes
/// that are not HTTP 400, and a client that connects and says nothing is
/// dropped; the broker serves `/metrics` and Kafka clients throughout.
#[test]
fn bad_http_gets_http_errors_and_the_broker_serves_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(dir.path(), &[]);
    let address = http_address(&mut broker);
    let silent = std::net::TcpStream::connect(&address).expect("a silent client");
    assert_eq!(get(&address, "/nothing-here").0, 404);
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nHost: broker\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(200 * 1024)
    );
    assert_eq!(http(&address, huge.as_bytes()).0, 431);
    assert_eq!(
        http(&address, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").0,
        400
    );
    let samples = scrape(&address);
    assert!(value(&samples, "kafka_server_kafkaserver_brokerstate", &[]).is_some());
    assert!(common::RawConnection::open(&broker.bootstrap).api_versions_answered());
    // The silent client is cut off after the head timeout (10 s).
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let started = Instant::now();
    let mut byte = [0u8; 1];
    let read = (&silent).read(&mut byte);
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "the silent client was answered: {read:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(25));
}

/// Three brokers, a topic of one partition on all three, led by a broker
/// that is not the controller: with the other follower SIGKILLed, the
/// leader's `underreplicatedpartitions` goes to 1 and `isrshrinks_total`
/// counts the shrink; once it is back both recover and `isrexpands_total`
/// counts. Then the leader is SIGKILLed and the controller's
/// `leaderelectionrateandtimems_count` counts the election. Exactly one
/// broker reports itself the active controller; a follower exports its
/// fetchers' `maxlag`.
#[test]
fn isr_gauges_and_the_election_timer_follow_killed_brokers() {
    use rdkafka::admin::{NewTopic, TopicReplication};
    // The leader drops the dead follower from the ISR (1.5 s without a
    // fetch) before its ZooKeeper session ends (4 s) and the controller
    // would: the shrink is the leader's, which isrshrinks counts.
    let extra = ["replica.lag.time.max.ms=1500"];
    let mut cluster = Cluster::start_with(3, &extra);
    let mut addresses = BTreeMap::new();
    for (&id, broker) in cluster.brokers.iter_mut() {
        addresses.insert(id, http_address(broker));
    }
    let scrape_of = |id: i32, name: &str, labels: &[(&str, &str)]| -> f64 {
        value(&scrape(&addresses[&id]), name, labels)
            .unwrap_or_else(|| panic!("broker {id} exports {name}"))
    };
    let wait = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ok() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let active = "kafka_controller_kafkacontroller_activecontrollercount";
    wait("one active controller", &|| {
        (0..3).map(|id| scrape_of(id, active, &[])).sum::<f64>() == 1.0
    });
    let controller = (0..3)
        .find(|&id| scrape_of(id, active, &[]) == 1.0)
        .expect("the controller");
    let others: Vec<i32> = (0..3).filter(|&id| id != controller).collect();
    let (leader, follower) = (others[0], others[1]);
    let bootstrap = cluster.bootstrap(leader);
    let assignment: &[&[i32]] = &[&[leader, follower, controller]];
    let created = common::block_on(common::admin(&bootstrap).create_topics(
        &[NewTopic::new(
            "watched",
            1,
            TopicReplication::Variable(assignment),
        )],
        &common::admin_options(Duration::from_secs(30)),
    ))
    .expect("CreateTopics answered");
    assert!(created.iter().all(Result::is_ok), "{created:?}");
    wait("a full ISR", &|| {
        cluster.isrs(leader, "watched").get(&0).map(Vec::len) == Some(3)
    });
    produce(&bootstrap, "watched", 0..10);
    let under = "kafka_server_replicamanager_underreplicatedpartitions";
    assert_eq!(scrape_of(leader, under, &[]), 0.0);
    let lag = scrape_of(
        follower,
        "kafka_server_replicafetchermanager_maxlag",
        &[("clientid", "Replica")],
    );
    assert!(lag >= 0.0);
    let shrinks = scrape_of(leader, "kafka_server_replicamanager_isrshrinks_total", &[]);
    cluster.brokers.remove(&follower).expect("running").kill();
    wait("under-replicated after the follower's kill", &|| {
        scrape_of(leader, under, &[]) == 1.0
    });
    assert!(scrape_of(leader, "kafka_server_replicamanager_isrshrinks_total", &[]) > shrinks);
    let expands = scrape_of(leader, "kafka_server_replicamanager_isrexpands_total", &[]);
    cluster.start_broker(follower);
    wait("fully replicated after the restart", &|| {
        scrape_of(leader, under, &[]) == 0.0
    });
    assert!(scrape_of(leader, "kafka_server_replicamanager_isrexpands_total", &[]) > expands);
    let timer = "kafka_controller_controllerstats_leaderelectionrateandtimems_count";
    let elected = scrape_of(controller, timer, &[]);
    cluster.brokers.remove(&leader).expect("running").kill();
    wait("the controller timing the election", &|| {
        scrape_of(controller, timer, &[]) > elected
    });
    let quantile = scrape_of(
        controller,
        "kafka_controller_controllerstats_leaderelectionrateandtimems",
        &[("quantile", "0.99")],
    );
    assert!(quantile > 0.0, "the election took {quantile} ms");
}
