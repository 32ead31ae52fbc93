#!/usr/bin/env python3
"""Three brokers, RF=3, acks=all: ferrolog against Kafka 3.9.1, same client,
same run (issue 21). See bench/README.md.

For every repeat and every broker kind, one after the other: a fresh
ZooKeeper (Debian's) and three fresh brokers on it (ids 0, 1, 2, free
127.0.0.1 ports), then with examples/perf (librdkafka):

  throughput  a topic of PARTITIONS partitions, RF=3, min.insync.replicas=2,
              COUNT records of 1 KiB with acks=all as fast as the client
              goes (after 1,000 warm-up records), timed to the last delivery
              report; the three brokers' CPU seconds over the phase, and the
              sum of their peak RSS.
  latency     a second such topic, records of 1 KiB handed to the client at
              a fixed rate (half of ferrolog's acks=all throughput in the
              same repeat, so both brokers get the same load) for
              LATENCY_SECONDS, with acks=1 and with acks=all: p50, p99 and
              p99.9 of send-to-delivery-report, linger.ms=0.

Then the medians, and the ferrolog/Kafka ratios of the medians of per-repeat
ratios against the issue's goals (throughput >= 1, CPU per GB <= 0.5,
peak RSS <= 0.25, p99 latency <= 1).

Environment (all optional):
  FERROLOG_BENCH_REPEATS=3          repeats (default 3)
  FERROLOG_BENCH_SCALE=1            scales COUNT (300,000) and LATENCY_SECONDS (20)
  FERROLOG_BENCH_BROKERS="ferrolog kafka"
  FERROLOG_BENCH_PARTITIONS=8
  FERROLOG_BENCH_LATENCY_RATE=N     latency runs at N records/s instead of half
                                    ferrolog's throughput (below both brokers'
                                    sustained rates, latency is not queueing)
  FERROLOG_BENCH_NO_BUILD=1         use target/release as it is
  FERROLOG_BENCH_LOG_DIR=DIR        keep every broker's log there

Everything listens on 127.0.0.1; every process it starts is stopped and
every file it writes is removed on exit (bounded waits throughout).
"""

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPEATS = int(os.environ.get("FERROLOG_BENCH_REPEATS", "3"))
SCALE = float(os.environ.get("FERROLOG_BENCH_SCALE", "1"))
BROKERS = os.environ.get("FERROLOG_BENCH_BROKERS", "ferrolog kafka").split()
PARTITIONS = int(os.environ.get("FERROLOG_BENCH_PARTITIONS", "8"))
COUNT = max(1000, int(300_000 * SCALE))
LATENCY_SECONDS = max(2.0, 20 * SCALE)
LATENCY_RATE = float(os.environ.get("FERROLOG_BENCH_LATENCY_RATE", "0")) or None
SIZE = 1024
LOG_DIR = os.environ.get("FERROLOG_BENCH_LOG_DIR")
CLK_TCK = os.sysconf("SC_CLK_TCK")
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
# Kafka's stock config/server.properties (3.9), less what is per broker.
with open(os.path.join(ROOT, "bench", "kafka-stock.properties")) as stock:
    KAFKA_STOCK = "".join(line for line in stock if not line.startswith("#"))
# kafka-server-start.sh's heap and kafka-run-class.sh's JVM flags.
KAFKA_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-Djava.awt.headless=true"]


def log(message):
    print(f"[cluster-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def cpu_ticks(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def peak_rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Cluster:
    """One ZooKeeper and three brokers of one kind, in a temporary directory."""

    def __init__(self, kind, work, kafka_classpath, ferrolog_bin, log4j):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-", dir=work)
        self.processes = []  # (name, Popen, logfile)
        self.brokers = []
        self.kafka_classpath = kafka_classpath
        self.ferrolog_bin = ferrolog_bin
        self.log4j = log4j
        self.bootstrap = ""

    def start(self):
        kind, kafka_classpath, ferrolog_bin, log4j = self.kind, self.kafka_classpath, self.ferrolog_bin, self.log4j
        zk_port = free_port()
        os.makedirs(f"{self.dir}/zk")
        with open(f"{self.dir}/zoo.cfg", "w") as cfg:
            cfg.write(f"tickTime=2000\ndataDir={self.dir}/zk\nclientPort={zk_port}\n"
                      "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n")
        self.spawn("zookeeper", ["java", "-Xmx256m", "-cp", f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}",
                                 "org.apache.zookeeper.server.quorum.QuorumPeerMain", f"{self.dir}/zoo.cfg"])
        self.wait(lambda: accepts(zk_port), "ZooKeeper")
        self.ports = []
        for broker_id in range(3):
            port = free_port()
            data = f"{self.dir}/broker-{broker_id}"
            os.makedirs(data)
            if kind == "ferrolog":
                command = [ferrolog_bin, "--config", f"{ROOT}/config/server.properties"]
                for override in (f"broker.id={broker_id}", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                 f"http.listener=http://127.0.0.1:{free_port()}", f"log.dirs={data}", f"zookeeper.connect=127.0.0.1:{zk_port}",
                                 "group.initial.rebalance.delay.ms=0"):
                    command += ["--override", override]
            else:
                with open(f"{data}.properties", "w") as props:
                    props.write(KAFKA_STOCK + f"broker.id={broker_id}\nlisteners=PLAINTEXT://127.0.0.1:{port}\n"
                                f"log.dirs={data}\nzookeeper.connect=127.0.0.1:{zk_port}\n")
                command = ["java", *KAFKA_JVM, f"-Dlog4j.configuration=file:{log4j}",
                           "-cp", kafka_classpath, "kafka.Kafka", f"{data}.properties"]
            self.brokers.append(self.spawn(f"broker-{broker_id}", command))
            self.ports.append(port)
        for (name, process, logfile), port in zip(self.processes[1:], self.ports):
            def ready(port=port, logfile=logfile):
                if not accepts(port):
                    return False
                # Kafka listens before it has registered.
                return kind != "kafka" or "started (kafka.server.KafkaServer)" in open(logfile).read()
            self.wait(ready, name)
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def spawn(self, name, command):
        logfile = f"{self.dir}/{name}.log"
        env = dict(os.environ, RUST_LOG="info")
        process = subprocess.Popen(command, stdout=open(logfile, "w"), stderr=subprocess.STDOUT, env=env)
        self.processes.append((name, process, logfile))
        return process

    def wait(self, condition, what, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            for name, process, logfile in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{self.kind} {name} exited at start-up:\n" + open(logfile).read()[-2000:])
            if condition():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.kind}: {what} not ready after {seconds} s")

    def cpu_ticks(self):
        return sum(cpu_ticks(p.pid) for p in self.brokers)

    def peak_rss_mib(self):
        return sum(peak_rss_kib(p.pid) for p in self.brokers) / 1024

    def alive(self):
        return all(p.poll() is None for p in self.brokers)

    def stop(self):
        for name, process, logfile in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM if name != "zookeeper" else signal.SIGKILL)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if LOG_DIR:
                os.makedirs(LOG_DIR, exist_ok=True)
                shutil.copy(logfile, f"{LOG_DIR}/{self.kind}-{os.path.basename(self.dir)}-{name}.log")
        shutil.rmtree(self.dir, ignore_errors=True)


def perf(binary, *args, timeout=900):
    """Runs examples/perf; returns its result line as a dict."""
    command = [binary, *map(str, args), "--timeout", str(timeout)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 60)
    if done.returncode != 0:
        raise RuntimeError(f"perf {' '.join(map(str, args))} failed ({done.returncode}):"
                           f" {done.stdout.strip()}\n{done.stderr[-2000:]}")
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in line.split())}


def create_topic(perf_bin, cluster, topic):
    # Until every broker has registered, RF=3 is refused: retry, bounded.
    deadline = time.time() + 60
    while True:
        try:
            perf(perf_bin, "create-topic", "--bootstrap", cluster.bootstrap, "--topic", topic,
                 "--partitions", PARTITIONS, "--replication-factor", 3, "--config", "min.insync.replicas=2",
                 timeout=30)
            break
        except RuntimeError:
            if time.time() > deadline:
                raise
            time.sleep(1)
    # Warm up: followers start fetching within replica.fetch.backoff.ms.
    perf(perf_bin, "produce", "--bootstrap", cluster.bootstrap, "--topic", topic, "--count", 1000,
         "--size", SIZE, "--partitions", PARTITIONS, "--acks", "all")


def run_one(kind, rep, rate, perf_bin, ferrolog_bin, kafka_classpath, log4j, work, rows):
    cluster = Cluster(kind, work, kafka_classpath, ferrolog_bin, log4j)
    try:
        cluster.start()
        create_topic(perf_bin, cluster, "throughput")
        before = cluster.cpu_ticks()
        result = perf(perf_bin, "produce", "--bootstrap", cluster.bootstrap, "--topic", "throughput",
                      "--count", COUNT, "--size", SIZE, "--partitions", PARTITIONS, "--acks", "all")
        cpu = (cluster.cpu_ticks() - before) / CLK_TCK
        gb = result["bytes"] / 2**30
        rows.append((rep, kind, "throughput acks=all", {
            "records_per_sec": result["records_per_sec"], "cpu_s_per_gb": cpu / gb,
            "peak_rss_mib": cluster.peak_rss_mib()}))
        log(f"rep {rep} {kind} throughput: {result['records_per_sec']:,.0f} records/s, {cpu / gb:.1f} CPU s/GB")
        if rate is None:
            rate = result["records_per_sec"] / 2
        create_topic(perf_bin, cluster, "latency")
        count = int(rate * LATENCY_SECONDS)
        for acks in ("1", "all"):
            result = perf(perf_bin, "produce", "--bootstrap", cluster.bootstrap, "--topic", "latency",
                          "--count", count, "--size", SIZE, "--partitions", PARTITIONS, "--acks", acks,
                          "--rate", f"{rate:.0f}", "--set", "linger.ms=0")
            # The delivered rate: below the offered one, the broker could not
            # keep up and the latencies are queueing.
            rows.append((rep, kind, f"latency acks={acks}", {
                "rate": rate, "delivered": result["records_per_sec"], "p50_ms": result["latency_p50_ms"],
                "p99_ms": result["latency_p99_ms"], "p999_ms": result["latency_p999_ms"]}))
            log(f"rep {rep} {kind} latency acks={acks} at {rate:,.0f}/s (delivered"
                f" {result['records_per_sec']:,.0f}/s): p50 {result['latency_p50_ms']} ms,"
                f" p99 {result['latency_p99_ms']} ms, p99.9 {result['latency_p999_ms']} ms")
        if not cluster.alive():
            raise RuntimeError(f"{kind}: a broker died during the run")
    finally:
        cluster.stop()
    return rate


def report(rows, commit):
    by = defaultdict(list)
    for rep, kind, case, values in rows:
        by[(kind, case)].append(values)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores, ferrolog {commit};"
          f" 3 brokers, RF=3, min.insync.replicas=2, {PARTITIONS} partitions, 1 KiB records;"
          f" {COUNT:,} records for throughput, {LATENCY_SECONDS:.0f} s per latency run; medians of {REPEATS}\n")
    print(f"{'broker':<9} {'case':<20} {'records/s':>10} {'delivered':>10} {'CPU s/GB':>9} {'RSS MiB':>8}"
          f" {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9}")
    for (kind, case), values in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        def med(key, digits):
            found = [v[key] for v in values if key in v]
            return f"{statistics.median(found):,.{digits}f}" if found else ""
        rate = "rate" if "rate" in values[0] else "records_per_sec"
        print(f"{kind:<9} {case:<20} {med(rate, 0):>10} {med('delivered', 0):>10} {med('cpu_s_per_gb', 1):>9}"
              f" {med('peak_rss_mib', 0):>8}"
              f" {med('p50_ms', 2):>8} {med('p99_ms', 2):>8} {med('p999_ms', 2):>9}")
    goals = {"records_per_sec": (">=", 1.0), "cpu_s_per_gb": ("<=", 0.5), "peak_rss_mib": ("<=", 0.25),
             "p99_ms": ("<=", 1.0)}
    reps = defaultdict(dict)
    for rep, kind, case, values in rows:
        reps[(rep, case)][kind] = values
    print("\nferrolog / Kafka (median of per-repeat ratios) against issue 21's goals\n")
    for case in sorted({case for _, case in reps}):
        for key, (op, goal) in goals.items():
            ratios = [pair["ferrolog"][key] / pair["kafka"][key] for (rep, c), pair in reps.items()
                      if c == case and "ferrolog" in pair and "kafka" in pair
                      and key in pair["ferrolog"] and pair["kafka"].get(key)]
            if not ratios:
                continue
            ratio = statistics.median(ratios)
            met = ratio >= goal if op == ">=" else ratio <= goal
            print(f"  {case:<20} {key:<16} {ratio:6.2f}  (goal {op} {goal}: {'met' if met else 'NOT met'})")


def main():
    os.chdir(ROOT)
    if not os.environ.get("FERROLOG_BENCH_NO_BUILD"):
        log("cargo build --release --bin ferrolog --example perf")
        subprocess.run(["cargo", "build", "--release", "--bin", "ferrolog", "--example", "perf"], check=True)
    work = tempfile.mkdtemp(prefix="ferrolog-cluster-bench.")
    try:
        # Snapshot the binaries: a build elsewhere must not change later runs.
        ferrolog_bin = shutil.copy(f"{ROOT}/target/release/ferrolog", work)
        perf_bin = shutil.copy(f"{ROOT}/target/release/examples/perf", work)
        kafka_classpath = ""
        log4j = f"{work}/log4j.properties"
        if "kafka" in BROKERS:
            if not os.path.exists(ZOOKEEPER_JAR):
                sys.exit("kafka needs Debian's zookeeper package (apt-get install zookeeper)")
            log("Kafka 3.9.1's jars from Maven Central (tests/java/tools/pom.xml)")
            subprocess.run(["mvn", "-B", "-q", "-f", "tests/java/tools/pom.xml", "dependency:build-classpath",
                            f"-Dmdep.outputFile={work}/kafka.classpath"], check=True)
            kafka_classpath = open(f"{work}/kafka.classpath").read().strip()
            with open(log4j, "w") as f:
                f.write("log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                        "log4j.logger.kafka.request.logger=WARN\nlog4j.logger.state.change.logger=WARN\n")
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
        rows = []
        for rep in range(1, REPEATS + 1):
            # ferrolog's first: unless fixed, its throughput sets the latency runs' rate
            rate = LATENCY_RATE
            for kind in sorted(BROKERS, key=lambda k: k != "ferrolog"):
                rate = run_one(kind, rep, rate, perf_bin, ferrolog_bin, kafka_classpath, log4j, work, rows)
        report(rows, commit)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
