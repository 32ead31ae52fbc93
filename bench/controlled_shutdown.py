#!/usr/bin/env python3
"""A controlled shutdown under acks=all load: ferrolog against Kafka 3.9.1,
same client, same run (issue 20's baseline). See bench/README.md.

For every repeat and every broker kind, one after the other: a fresh
ZooKeeper and three fresh brokers (bench/cluster.py's Cluster), a topic of
100 partitions, RF=3, min.insync.replicas=2, and an idempotent acks=all
producer (confluent-kafka, librdkafka) sending RATE records/s spread over
every partition, each delivery report timed. After WARMUP seconds the
broker leading the most partitions gets SIGTERM (Kafka's and ferrolog's
controlled shutdown: leadership moves before it stops); the load goes on
for AFTER seconds. Then, from the delivery reports:

  longest gap          the longest time between two acknowledgements of
                       any partition, from the SIGTERM on
  per-partition gap    for each partition the stopped broker led, the
                       longest time between two of its acknowledgements
                       around the SIGTERM: median and max over partitions
  failed deliveries    must be 0

and the medians over repeats, with the ferrolog/Kafka ratios.

Environment (all optional):
  FERROLOG_BENCH_REPEATS=3          repeats
  FERROLOG_BENCH_BROKERS="ferrolog kafka"
  FERROLOG_BENCH_RATE=400           records/s over the 100 partitions
  FERROLOG_BENCH_FERROLOG_BIN=PATH  the broker binary (default target/release/ferrolog,
                                    built unless FERROLOG_BENCH_NO_BUILD=1)
  FERROLOG_BENCH_LOG_DIR=DIR        keep every broker's log there

Everything listens on 127.0.0.1; every process it starts is stopped and
every file it writes is removed on exit (bounded waits throughout).
"""

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as bench  # noqa: E402  (the Cluster of bench/cluster.py)

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

REPEATS = int(os.environ.get("FERROLOG_BENCH_REPEATS", "3"))
BROKERS = os.environ.get("FERROLOG_BENCH_BROKERS", "ferrolog kafka").split()
RATE = float(os.environ.get("FERROLOG_BENCH_RATE", "400"))
PARTITIONS = 100
WARMUP = 8.0
AFTER = 10.0
TOPIC = "shutdown"


def create_topic(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    deadline = time.time() + 60
    while True:
        futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
                                      request_timeout=30)
        try:
            futures[TOPIC].result(60)
            break
        except Exception as e:  # RF=3 is refused until every broker registered
            if time.time() > deadline:
                raise RuntimeError(f"CreateTopics: {e}")
            time.sleep(1)
    # Until every partition has a leader and a full ISR.
    deadline = time.time() + 60
    while time.time() < deadline:
        topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        if len(topic.partitions) == PARTITIONS and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values()):
            return admin
        time.sleep(0.2)
    raise RuntimeError("the topic never had a leader and a full ISR everywhere")


def leaders(admin):
    topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p.id: p.leader for p in topic.partitions.values()}


def run_one(kind, rep, ferrolog_bin, kafka_classpath, log4j, work, rows):
    cluster = bench.Cluster(kind, work, kafka_classpath, ferrolog_bin, log4j)
    try:
        cluster.start()
        admin = create_topic(cluster.bootstrap)
        acked = {p: [] for p in range(PARTITIONS)}
        failed = []

        def report(err, msg):
            if err is not None:
                failed.append(str(err))
            else:
                acked[msg.partition()].append(time.monotonic())

        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 0, "message.timeout.ms": 120000,
                             "log_level": 2})
        interval = 1.0 / RATE
        started = time.monotonic()
        stop_at = started + WARMUP
        end_at = stop_at + AFTER
        sent = 0
        stopped_id = None
        stopped_leads = []
        sigterm_at = None
        while True:
            now = time.monotonic()
            if now >= end_at:
                break
            if stopped_id is None and now >= stop_at:
                led = leaders(admin)
                counts = {}
                for leader in led.values():
                    counts[leader] = counts.get(leader, 0) + 1
                stopped_id = max(counts, key=counts.get)
                stopped_leads = [p for p, leader in led.items() if leader == stopped_id]
                sigterm_at = time.monotonic()
                cluster.brokers[stopped_id].send_signal(signal.SIGTERM)
            due = started + sent * interval
            if now < due:
                producer.poll(min(due - now, 0.01))
                continue
            producer.produce(TOPIC, value=b"x" * 100, partition=sent % PARTITIONS, on_delivery=report)
            sent += 1
            producer.poll(0)
        producer.flush(120)
        cluster.brokers[stopped_id].wait(60)
        if failed:
            raise RuntimeError(f"{kind}: {len(failed)} failed deliveries, first {failed[0]}")

        def longest_gap(times):
            window = [t for t in times if t >= sigterm_at - 1.0]
            gaps = [b - a for a, b in zip(window, window[1:])]
            return max(gaps) if gaps else float("inf")

        every = sorted(t for times in acked.values() for t in times)
        overall = longest_gap(every)
        per_partition = [longest_gap(acked[p]) for p in stopped_leads]
        row = {"longest_gap_s": overall, "partition_gap_median_s": statistics.median(per_partition),
               "partition_gap_max_s": max(per_partition), "partitions_moved": len(stopped_leads),
               "acknowledged": sum(len(t) for t in acked.values()), "sent": sent}
        rows.append((rep, kind, row))
        bench.log(f"rep {rep} {kind}: broker {stopped_id} (led {len(stopped_leads)}) stopped; longest gap"
                  f" {overall * 1000:.0f} ms; per partition median {row['partition_gap_median_s'] * 1000:.0f} ms,"
                  f" max {row['partition_gap_max_s'] * 1000:.0f} ms; {row['acknowledged']}/{sent} acknowledged")
        if row["acknowledged"] != sent:
            raise RuntimeError(f"{kind}: {sent} sent, {row['acknowledged']} acknowledged")
    finally:
        cluster.stop()


def main():
    os.chdir(bench.ROOT)
    ferrolog_bin = os.environ.get("FERROLOG_BENCH_FERROLOG_BIN", f"{bench.ROOT}/target/release/ferrolog")
    if "ferrolog" in BROKERS and not os.environ.get("FERROLOG_BENCH_NO_BUILD") \
            and "FERROLOG_BENCH_FERROLOG_BIN" not in os.environ:
        bench.log("cargo build --release --bin ferrolog")
        subprocess.run(["cargo", "build", "--release", "--bin", "ferrolog"], check=True)
    work = tempfile.mkdtemp(prefix="ferrolog-shutdown-bench.")
    try:
        if "ferrolog" in BROKERS:
            ferrolog_bin = shutil.copy(ferrolog_bin, work)
        kafka_classpath = ""
        log4j = f"{work}/log4j.properties"
        if "kafka" in BROKERS:
            if not os.path.exists(bench.ZOOKEEPER_JAR):
                sys.exit("kafka needs Debian's zookeeper package (apt-get install zookeeper)")
            bench.log("Kafka 3.9.1's jars from Maven Central (tests/java/tools/pom.xml)")
            subprocess.run(["mvn", "-B", "-q", "-f", "tests/java/tools/pom.xml", "dependency:build-classpath",
                            f"-Dmdep.outputFile={work}/kafka.classpath"], check=True)
            kafka_classpath = open(f"{work}/kafka.classpath").read().strip()
            with open(log4j, "w") as f:
                f.write("log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                        "log4j.logger.kafka.request.logger=WARN\nlog4j.logger.state.change.logger=WARN\n")
        rows = []
        for rep in range(1, REPEATS + 1):
            for kind in sorted(BROKERS, key=lambda k: k != "ferrolog"):
                run_one(kind, rep, ferrolog_bin, kafka_classpath, log4j, work, rows)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
        print(f"\ncontrolled shutdown, {REPEATS} repeats, {RATE:.0f} records/s over {PARTITIONS} partitions"
              f" (ferrolog {commit}), medians over repeats:")
        medians = {}
        for kind in BROKERS:
            mine = [row for _, k, row in rows if k == kind]
            medians[kind] = {key: statistics.median(r[key] for r in mine) for key in mine[0]}
            print(f"  {kind:9} longest gap {medians[kind]['longest_gap_s'] * 1000:6.0f} ms"
                  f"  per partition median {medians[kind]['partition_gap_median_s'] * 1000:6.0f} ms"
                  f"  max {medians[kind]['partition_gap_max_s'] * 1000:6.0f} ms")
        if "ferrolog" in medians and "kafka" in medians:
            for key in ("longest_gap_s", "partition_gap_median_s", "partition_gap_max_s"):
                print(f"  ferrolog/kafka {key}: {medians['ferrolog'][key] / medians['kafka'][key]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
