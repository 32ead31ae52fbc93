#!/usr/bin/env bash
# Produce throughput and delivery latency of a 3-broker cluster (release
# build, real ZooKeeper) with replication, against a baseline measured in
# the same run on the same cluster: RF=1 with acks=1. Then RF=3 acks=1 and
# RF=3 acks=all. Each configuration runs ROUNDS times on a fresh topic
# (warmed up with 1000 acks=all records first); the
# medians are printed with their ratio to the baseline's median.
#
#   scripts/bench-replication.sh            # COUNT=300000 SIZE=100 PARTITIONS=6 ROUNDS=3
#   COUNT=1000000 ROUNDS=5 scripts/bench-replication.sh
#
# The machine is shared and noisy: compare ratios, not absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-300000}"
size="${SIZE:-100}"
partitions="${PARTITIONS:-6}"
rounds="${ROUNDS:-3}"

cargo build --release --quiet --bin ferrolog --example perf
perf=target/release/examples/perf
export FERROLOG_BIN="$PWD/target/release/ferrolog"
export FERROLOG_CLUSTER_DIR
FERROLOG_CLUSTER_DIR="$(mktemp -d /tmp/ferrolog-bench.XXXXXX)"
scripts/cluster.sh start 3 >/dev/null
trap 'scripts/cluster.sh stop >/dev/null' EXIT
bootstrap="$(cat "$FERROLOG_CLUSTER_DIR/bootstrap")"

# shellcheck source=scripts/bench-common.sh
source scripts/bench-common.sh

# One produce run of configuration $1 ("RF=<rf> acks=<acks>"), round $2.
run() {
  local rf acks
  read -r rf acks < <(sed -E 's/RF=([0-9]+) acks=(.*)/\1 \2/' <<<"$1")
  local topic="bench-rf$rf-acks$acks-$2"
  "$perf" create-topic --bootstrap "$bootstrap" --topic "$topic" \
    --partitions "$partitions" --replication-factor "$rf" >/dev/null
  # Warm up: a new topic's followers start fetching within
  # replica.fetch.backoff.ms; time the steady state, not the start.
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count 1000 \
    --size "$size" --partitions "$partitions" --acks all >/dev/null 2>&1
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count "$count" \
    --size "$size" --partitions "$partitions" --acks "$acks" 2>/dev/null | perf_summary
}

measure "RF=1 acks=1" "RF=3 acks=1" "RF=3 acks=all"
print_table "RF=1 acks=1" "RF=3 acks=1" "RF=3 acks=all"
echo "($count records of $size bytes, $partitions partitions, median of $rounds rounds)"
