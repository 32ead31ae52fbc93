#!/usr/bin/env python3
"""Throughput over TLS: ferrolog against Kafka 3.9.1 with the same SASL_SSL
listener config and the same client, in the same run (issue 23). See
bench/README.md.

One broker of each kind at a time (Kafka in ZooKeeper mode on Debian's
ZooKeeper, with bench/kafka-stock.properties), each with the same lines:

  listeners=PLAINTEXT://127.0.0.1:P1,SASL_SSL://127.0.0.1:P2
  ssl.keystore.type=PEM, ssl.keystore.location=<key + chain, openssl-made>
  sasl.enabled.mechanisms=PLAIN, listener.name.sasl_ssl.plain.sasl.jaas.config=...

The client is Kafka 3.9.1's own perf tools (the Java client):
ProducerPerformance (COUNT records of SIZE bytes, acks=1, as fast as it
goes; records/s and MB/s as it reports them) and ConsumerPerformance
(reading them all back), over SASL_SSL and, on the same broker, over
PLAINTEXT, so the TLS cost of each broker is measured too. The broker's
CPU time (utime + stime from /proc, all threads) over each phase gives its
CPU seconds per GB moved. Then connection set-up: librdkafka
(confluent-kafka) opens CONNECTIONS fresh clients over SASL_SSL, each
authenticating (SCRAM-SHA-512 with 4096 iterations, a user made with
Kafka's kafka-configs through AlterUserScramCredentials, then PLAIN) and
answering one Metadata request; the median per connection and the
broker's CPU per connection. Repeats alternate the brokers; medians, and
ferrolog/Kafka ratios of the medians of per-repeat ratios, are printed at
the end.

Environment (all optional):
  FERROLOG_BENCH_REPEATS=3   repeats
  FERROLOG_BENCH_COUNT=1000000
  FERROLOG_BENCH_SIZE=1024
  FERROLOG_BENCH_CONNECTIONS=30
  FERROLOG_BENCH_NO_BUILD=1  use target/release/ferrolog as it is
  CARGO_TARGET_DIR           where the release build is

Everything listens on 127.0.0.1; every process it starts is stopped and
every file it writes is removed on exit (bounded waits throughout).
"""

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPEATS = int(os.environ.get("FERROLOG_BENCH_REPEATS", "3"))
COUNT = int(os.environ.get("FERROLOG_BENCH_COUNT", "1000000"))
SIZE = int(os.environ.get("FERROLOG_BENCH_SIZE", "1024"))
CONNECTIONS = int(os.environ.get("FERROLOG_BENCH_CONNECTIONS", "30"))
SCRAM_USER, SCRAM_PASSWORD = "scrambench", "scram-bench-secret"
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="bench" password="bench-secret" user_bench="bench-secret";')


def log(text):
    print(text, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, process, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited at start-up ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"not listening on {port} after {seconds} s")


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def make_keystore(work):
    """A CA and a broker key + chain for 127.0.0.1, as one PEM keystore."""
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=bench-ca"], cwd=work)
    with open(os.path.join(work, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key",
         "-out", "broker.csr", "-subj", "/CN=localhost"], cwd=work)
    run(["openssl", "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", "ext", "-out", "broker.pem"], cwd=work)
    keystore = os.path.join(work, "keystore.pem")
    with open(keystore, "w") as out:
        for name in ("broker.key", "broker.pem", "ca.pem"):
            out.write(open(os.path.join(work, name)).read())
    run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
         "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", "trust-secret"],
        cwd=work)
    return keystore, os.path.join(work, "truststore.p12")


def security_lines(plain_port, ssl_port, keystore):
    return [
        f"listeners=PLAINTEXT://127.0.0.1:{plain_port},SASL_SSL://127.0.0.1:{ssl_port}",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={keystore}",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    ]


class Broker:
    def __init__(self, kind, work, keystore, classpath):
        self.kind, self.dir = kind, tempfile.mkdtemp(dir=work, prefix=kind)
        self.plain, self.ssl = free_port(), free_port()
        self.processes = []
        lines = security_lines(self.plain, self.ssl, keystore)
        logfile = open(os.path.join(self.dir, "broker.log"), "w")
        if kind == "ferrolog":
            args = [os.path.join(TARGET, "release", "ferrolog"), "--config",
                    os.path.join(ROOT, "config", "server.properties"),
                    "--override", f"log.dirs={self.dir}/logs"]
            for line in lines:
                args += ["--override", line]
            self.process = subprocess.Popen(args, stdout=logfile, stderr=logfile,
                                            env=dict(os.environ, RUST_LOG="warn"))
        else:
            zk_port = free_port()
            os.makedirs(f"{self.dir}/zk")
            with open(f"{self.dir}/zoo.cfg", "w") as f:
                f.write(f"tickTime=2000\ndataDir={self.dir}/zk\nclientPort={zk_port}\n"
                        "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n")
            zk = subprocess.Popen(["java", "-Xmx256m", "-cp",
                                   "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
                                   "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                   f"{self.dir}/zoo.cfg"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            self.processes.append(zk)
            wait_port(zk_port, zk)
            with open(f"{self.dir}/server.properties", "w") as f:
                f.write("broker.id=0\n")
                f.write(f"log.dirs={self.dir}/logs\nzookeeper.connect=127.0.0.1:{zk_port}\n")
                f.write("inter.broker.listener.name=PLAINTEXT\n")
                for line in lines:
                    f.write(line + "\n")
                for line in open(os.path.join(ROOT, "bench", "kafka-stock.properties")):
                    if not line.startswith("#"):
                        f.write(line)
            self.process = subprocess.Popen(
                ["java", "-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                 "-XX:InitiatingHeapOccupancyPercent=35", "-Djava.awt.headless=true",
                 "-cp", classpath, "kafka.Kafka", f"{self.dir}/server.properties"],
                stdout=logfile, stderr=logfile)
        self.processes.append(self.process)
        wait_port(self.plain, self.process)
        wait_port(self.ssl, self.process)
        time.sleep(3 if kind == "kafka" else 0.5)

    def cpu_seconds(self):
        """The broker process's CPU time so far (every thread)."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        for p in reversed(self.processes):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def client_config(work, protocol, truststore):
    path = os.path.join(work, f"client-{protocol}.properties")
    with open(path, "w") as f:
        if protocol == "SASL_SSL":
            f.write("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                    "ssl.truststore.type=PKCS12\n"
                    f"ssl.truststore.location={truststore}\nssl.truststore.password=trust-secret\n"
                    'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule '
                    'required username="bench" password="bench-secret";\n')
    return path


def tool(classpath, main, args):
    out = run(["java", "-Xmx1G", "-cp", classpath, main] + args, timeout=900)
    return out.stdout


def produce(classpath, bootstrap, topic, config):
    text = tool(classpath, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(COUNT), "--record-size", str(SIZE),
        "--throughput", "-1", "--producer.config", config, "--producer-props",
        f"bootstrap.servers={bootstrap}", "acks=1", "linger.ms=5", "batch.size=1000000"])
    last = [l for l in text.splitlines() if "records sent" in l][-1]
    rate = float(re.search(r"([\d.]+) records/sec", last).group(1))
    mb = float(re.search(r"\(([\d.]+) MB/sec\)", last).group(1))
    p99 = float(re.search(r"([\d.]+) ms 99th", last).group(1))
    return {"records_per_sec": rate, "mb_per_sec": mb, "p99_ms": p99}


def consume(classpath, bootstrap, topic, config):
    text = tool(classpath, "org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(COUNT),
        "--consumer.config", config, "--timeout", "60000", "--hide-header"])
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
    # nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec:
    # the fetch.* rates leave out the group join (ferrolog's default
    # group.initial.rebalance.delay.ms is Kafka's 3 s, the stock Kafka
    # config here sets 0).
    fields = [f.strip() for f in text.strip().splitlines()[-1].split(",")]
    if int(fields[4]) < COUNT:
        raise RuntimeError(f"read {fields[4]} of {COUNT}")
    return {"records_per_sec": float(fields[9]), "mb_per_sec": float(fields[8])}


def add_scram_user(classpath, bootstrap):
    """A SCRAM-SHA-512 user with 4096 iterations, as an operator adds one
    (kafka-configs over AlterUserScramCredentials)."""
    tool(classpath, "kafka.admin.ConfigCommand", [
        "--bootstrap-server", bootstrap, "--alter", "--entity-type", "users",
        "--entity-name", SCRAM_USER, "--add-config",
        f"SCRAM-SHA-512=[iterations=4096,password={SCRAM_PASSWORD}]"])


def connection_setup(broker, ca, mechanism):
    """Median ms per fresh authenticated client (TCP, TLS, SASL, one
    Metadata), and the broker's CPU ms per connection."""
    from confluent_kafka.admin import AdminClient
    user, password = (SCRAM_USER, SCRAM_PASSWORD) if mechanism != "PLAIN" \
        else ("bench", "bench-secret")
    config = {"bootstrap.servers": f"127.0.0.1:{broker.ssl}", "broker.address.family": "v4",
              "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
              "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    times = []
    cpu = broker.cpu_seconds()
    for _ in range(CONNECTIONS):
        started = time.perf_counter()
        client = AdminClient(dict(config))
        client.list_topics(timeout=20)
        times.append((time.perf_counter() - started) * 1000)
        del client
    return {"ms": statistics.median(times),
            "broker_cpu_ms": (broker.cpu_seconds() - cpu) * 1000 / CONNECTIONS}


def main():
    if not shutil.which("openssl") or not shutil.which("keytool"):
        sys.exit("needs openssl and keytool")
    if os.environ.get("FERROLOG_BENCH_NO_BUILD") != "1":
        log("cargo build --release")
        subprocess.run(["cargo", "build", "--release", "--bin", "ferrolog"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="ferrolog-tls-bench")
    try:
        cp_file = os.path.join(work, "kafka.classpath")
        run(["mvn", "-B", "-q", "-f", os.path.join(ROOT, "tests/java/tools/pom.xml"),
             "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"])
        classpath = open(cp_file).read().strip()
        keystore, truststore = make_keystore(work)
        results = defaultdict(list)  # (kind, protocol, phase) -> [figures]
        for repeat in range(REPEATS):
            kinds = ["ferrolog", "kafka"] if repeat % 2 == 0 else ["kafka", "ferrolog"]
            for kind in kinds:
                broker = Broker(kind, work, keystore, classpath)
                gb = COUNT * SIZE / 1e9
                try:
                    for protocol in ("SASL_SSL", "PLAINTEXT"):
                        port = broker.ssl if protocol == "SASL_SSL" else broker.plain
                        bootstrap = f"127.0.0.1:{port}"
                        config = client_config(work, protocol, truststore)
                        topic = f"bench-{protocol.lower()}-{repeat}"
                        cpu = broker.cpu_seconds()
                        p = produce(classpath, bootstrap, topic, config)
                        p["cpu_s_per_gb"] = (broker.cpu_seconds() - cpu) / gb
                        cpu = broker.cpu_seconds()
                        c = consume(classpath, bootstrap, topic, config)
                        c["cpu_s_per_gb"] = (broker.cpu_seconds() - cpu) / gb
                        results[(kind, protocol, "produce")].append(p)
                        results[(kind, protocol, "consume")].append(c)
                        log(f"repeat {repeat} {kind} {protocol}: produce {p} consume {c}")
                    add_scram_user(classpath, f"127.0.0.1:{broker.plain}")
                    for mechanism in ("SCRAM-SHA-512", "PLAIN"):
                        setup = connection_setup(broker, os.path.join(work, "ca.pem"), mechanism)
                        results[(kind, mechanism, "connect")].append(setup)
                        log(f"repeat {repeat} {kind} {mechanism} connection set-up: {setup}")
                finally:
                    broker.stop()
        print(f"\n{COUNT} records of {SIZE} B, acks=1, Kafka 3.9.1's ProducerPerformance and "
              f"ConsumerPerformance, {REPEATS} repeats (medians)\n")
        print(f"{'broker':9} {'protocol':10} {'phase':8} {'records/s':>11} {'MB/s':>8} "
              f"{'p99 ms':>7} {'CPU s/GB':>9}")
        for (kind, protocol, phase), runs in sorted(results.items()):
            if phase == "connect":
                continue
            rate = statistics.median(r["records_per_sec"] for r in runs)
            mb = statistics.median(r["mb_per_sec"] for r in runs)
            p99 = statistics.median(r.get("p99_ms", 0) for r in runs)
            cpu = statistics.median(r["cpu_s_per_gb"] for r in runs)
            print(f"{kind:9} {protocol:10} {phase:8} {rate:11.0f} {mb:8.2f} {p99:7.0f} {cpu:9.2f}")
        print(f"\nconnection set-up over SASL_SSL, {CONNECTIONS} fresh librdkafka clients each "
              "(median ms per connection; broker CPU ms per connection)")
        for kind in ("ferrolog", "kafka"):
            for mechanism in ("SCRAM-SHA-512", "PLAIN"):
                runs = results[(kind, mechanism, "connect")]
                print(f"  {kind:9} {mechanism:14} {statistics.median(r['ms'] for r in runs):7.1f} ms "
                      f"{statistics.median(r['broker_cpu_ms'] for r in runs):7.2f} CPU ms")
        print("\nferrolog / Kafka records/s (median of per-repeat ratios)")
        for protocol in ("SASL_SSL", "PLAINTEXT"):
            for phase in ("produce", "consume"):
                ours = results[("ferrolog", protocol, phase)]
                theirs = results[("kafka", protocol, phase)]
                ratios = [a["records_per_sec"] / b["records_per_sec"] for a, b in zip(ours, theirs)]
                cpu = [a["cpu_s_per_gb"] / b["cpu_s_per_gb"] for a, b in zip(ours, theirs)]
                print(f"  {protocol:10} {phase:8} {statistics.median(ratios):.2f} "
                      f"(min {min(ratios):.2f}, max {max(ratios):.2f}); "
                      f"broker CPU per GB {statistics.median(cpu):.2f}")
        for mechanism in ("SCRAM-SHA-512", "PLAIN"):
            ours = results[("ferrolog", mechanism, "connect")]
            theirs = results[("kafka", mechanism, "connect")]
            ratios = [a["ms"] / b["ms"] for a, b in zip(ours, theirs)]
            print(f"  {mechanism} connection set-up time {statistics.median(ratios):.2f}")
        print("\nSASL_SSL / PLAINTEXT records/s on the same broker (the cost of TLS)")
        for kind in ("ferrolog", "kafka"):
            for phase in ("produce", "consume"):
                tls = results[(kind, "SASL_SSL", phase)]
                plain = results[(kind, "PLAINTEXT", phase)]
                ratios = [a["records_per_sec"] / b["records_per_sec"] for a, b in zip(tls, plain)]
                print(f"  {kind:9} {phase:8} {statistics.median(ratios):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
