#!/usr/bin/env bash
# Runs every test ferrolog has, on a fresh Debian machine as on a developer's.
# Installs what the tests need when it is missing (a C toolchain and make for
# librdkafka, which the rdkafka crate builds from source; kcat; the Python
# clients kafka-python and confluent-kafka; Node.js and KafkaJS; ZooKeeper and
# Java; iproute2 for the network-partition tests), then:
# format check, clippy, and the whole cargo test suite (unit, integration with real clients and real
# broker processes, SIGKILL crash tests, decoder fuzzing), then the
# fault-injection suite built with `--features failpoints`.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_missing=()
command -v cc >/dev/null || apt_missing+=(build-essential)
command -v make >/dev/null || apt_missing+=(make)
command -v perl >/dev/null || apt_missing+=(perl)
command -v kcat >/dev/null || apt_missing+=(kcat)
command -v python3 >/dev/null || apt_missing+=(python3 python3-pip)
# A real ZooKeeper server for the cluster tests (Debian's package, on Java).
[ -f /usr/share/java/zookeeper.jar ] || apt_missing+=(zookeeper)
command -v java >/dev/null || apt_missing+=(default-jre-headless)
# The Java client tests (tests/java): a JDK and Maven, which downloads
# kafka-clients and JUnit from Maven Central.
command -v javac >/dev/null || apt_missing+=(default-jdk-headless)
command -v mvn >/dev/null || apt_missing+=(maven)
# Network namespaces, veth pairs and tc for the network-partition tests.
{ command -v ip >/dev/null && command -v tc >/dev/null; } || apt_missing+=(iproute2)
# The TLS tests make their CA and certificates with openssl (and keytool).
command -v openssl >/dev/null || apt_missing+=(openssl)
command -v node >/dev/null || apt_missing+=(nodejs)
command -v npm >/dev/null || apt_missing+=(npm)
if [ ${#apt_missing[@]} -gt 0 ]; then
  echo "== installing ${apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${apt_missing[@]}"
fi
if ! python3 -c 'import kafka, confluent_kafka, lz4, prometheus_client' 2>/dev/null; then
  echo "== installing the Python Kafka clients"
  # Versions the suite was written against; lz4 gives kafka-python its codec;
  # prometheus-client's parser checks what /metrics serves.
  pips=('kafka-python==3.0.12' 'lz4==4.4.5' 'confluent-kafka==2.16.1' 'prometheus-client==0.23.1')
  python3 -m pip install -q "${pips[@]}" \
    || python3 -m pip install -q --break-system-packages "${pips[@]}"
fi
if [ ! -d tests/node/node_modules/kafkajs ]; then
  echo "== installing KafkaJS"
  # Retried: a registry hiccup once failed a fresh machine's first install.
  for attempt in 1 2 3 4 5; do
    npm install --prefix tests/node --no-audit --no-fund && break
    [ "$attempt" = 5 ] && exit 1
    sleep $((attempt * 10))
  done
fi
if ! command -v cargo >/dev/null; then
  echo "cargo is required (rustup)" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy

echo "== cargo fmt --check"
cargo fmt -- --check
# actors/ is reached through `#[path]`, which `cargo fmt` does not follow.
git ls-files 'actors/*.rs' | xargs rustfmt --edition 2021 --check
echo "== cargo clippy"
cargo clippy --all-targets -- -D warnings
# The library alone, without the `internals` feature the tests turn on:
# the public API must stand on its own, and code only tests use is marked so.
cargo clippy -- -D warnings
cargo clippy --features failpoints --all-targets -- -D warnings
echo "== cargo test"
log=$(mktemp)
set +e
cargo test --no-fail-fast --all-targets 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# Fault injection: the same crate built with its fail points compiled in.
echo "== cargo test --features failpoints --test failpoints"
cargo test --features failpoints --test failpoints 2>&1 | tee -a "$log"
fp_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$fp_status
# The cleaner's crash points: SIGKILL at each step of a swap; a replica
# fetcher's panic in a 3-broker cluster.
cargo test --features failpoints --test compaction a_crash_at_any_cleaning_step 2>&1 | tee -a "$log"
fp_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$fp_status
cargo test --features failpoints --test replication a_panicking_ 2>&1 | tee -a "$log"
fp_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$fp_status
# The controller SIGKILLed in the middle of an operation (a creation, a
# deletion, CreatePartitions, a preferred election, a controlled shutdown).
cargo test --features failpoints --test controller_failover 2>&1 | tee -a "$log"
fp_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$fp_status
# The Java client against real broker processes (tests/java): Kafka 3.9's
# client, then the newest 4.x, which dropped old protocol versions
# (KIP-896). Each surefire summary becomes a "test result:" line below.
# Kafka 3.9's own tools (ToolsTest) run with the 3.9 client only: their
# jars come from tests/java/tools/pom.xml.
target_dir=$(cd "${CARGO_TARGET_DIR:-target}" && pwd)
tools_classpath=$(mktemp)
if ! mvn -B -q -f tests/java/tools/pom.xml dependency:build-classpath \
    -Dmdep.outputFile="$tools_classpath"; then
  echo "test result: Kafka 3.9 tools classpath: 0 passed; 1 failed;" | tee -a "$log"
  status=1
fi
for kafka_version in 3.9.1 4.4.0; do
  echo "== Java client tests, kafka-clients $kafka_version"
  java_log=$(mktemp)
  tools=()
  [ "$kafka_version" = 3.9.1 ] && tools=(-Dkafka.tools.classpath="$(cat "$tools_classpath")")
  mvn -B -f tests/java/pom.xml test -Dkafka.version="$kafka_version" "${tools[@]}" \
    -Dferrolog.bin="$target_dir/debug/ferrolog" 2>&1 | tee "$java_log"
  java_status=${PIPESTATUS[0]}
  [ "$status" -eq 0 ] && status=$java_status
  # Surefire's last "Tests run:" line is the module's total.
  grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$java_log" \
    | tail -1 \
    | awk -v v="$kafka_version" -F'[ ,]+' '{ run = $4; f = $6 + $8; s = $10;
        printf "test result: java kafka-clients %s: %d passed; %d failed; %d skipped\n", v, run - f - s, f, s }' \
    | tee -a "$log"
  if [ "$java_status" -ne 0 ] && ! grep -q "java kafka-clients $kafka_version" "$log"; then
    # Maven failed before any test ran (a download, a compile error).
    echo "test result: java kafka-clients $kafka_version: 0 passed; 1 failed;" | tee -a "$log"
  fi
  rm -f "$java_log"
done
rm -f "$tools_classpath"
set -e
# The last binaries cargo runs (examples, benches) hold no tests; close with
# the totals over every binary instead.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
# Benchmarks are compiled above by --all-targets (and run once as a smoke
# test); measure with `cargo bench --bench storage` and `bench/run.sh`.
exit "$status"
