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

# One produce run: prints "records_per_sec p50_ms p99_ms".
run() {
  local rf="$1" acks="$2" round="$3"
  local topic="bench-rf$rf-acks$acks-$round"
  "$perf" create-topic --bootstrap "$bootstrap" --topic "$topic" \
    --partitions "$partitions" --replication-factor "$rf" >/dev/null
  # Warm up: a new topic's followers start fetching within
  # replica.fetch.backoff.ms; time the steady state, not the start.
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count 1000 \
    --size "$size" --partitions "$partitions" --acks all >/dev/null 2>&1
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count "$count" \
    --size "$size" --partitions "$partitions" --acks "$acks" 2>/dev/null |
    python3 -c '
import sys
fields = dict(kv.split("=") for kv in sys.stdin.read().split())
print(fields["records_per_sec"], fields.get("latency_p50_ms", "nan"), fields.get("latency_p99_ms", "nan"))'
}

median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

declare -A rate p50 p99
for config in "1 1" "3 1" "3 all"; do
  read -r rf acks <<<"$config"
  rates=() p50s=() p99s=()
  for round in $(seq 1 "$rounds"); do
    read -r r l50 l99 < <(run "$rf" "$acks" "$round")
    rates+=("$r") p50s+=("$l50") p99s+=("$l99")
  done
  rate[$config]=$(median "${rates[@]}")
  p50[$config]=$(median "${p50s[@]}")
  p99[$config]=$(median "${p99s[@]}")
done

base="${rate[1 1]}"
printf '%-14s %14s %8s %10s %10s\n' config records/s ratio p50_ms p99_ms
for config in "1 1" "3 1" "3 all"; do
  read -r rf acks <<<"$config"
  ratio=$(python3 -c "print(f'{${rate[$config]} / $base:.2f}')")
  printf '%-14s %14.0f %8s %10s %10s\n' "RF=$rf acks=$acks" "${rate[$config]}" "$ratio" \
    "${p50[$config]}" "${p99[$config]}"
done
echo "($count records of $size bytes, $partitions partitions, median of $rounds rounds)"
