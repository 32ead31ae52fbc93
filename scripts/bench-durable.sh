#!/usr/bin/env bash
# Produce throughput and delivery latency of the durable mode (a topic with
# flush.messages=1: every record is fsynced before its acknowledgement, with
# concurrent produces sharing fsyncs) against the default (the page cache,
# flushed by the OS and at segment roll), measured in the same run on one
# release broker (embedded metadata store) whose data sits on the real disk.
# Each configuration runs ROUNDS times on a fresh topic; the medians are
# printed with their ratio to the default's median.
#
#   scripts/bench-durable.sh                # COUNT=200000 SIZE=100 PARTITIONS=6 ROUNDS=3
#   COUNT=1000000 ROUNDS=5 scripts/bench-durable.sh
#   LINGER=0 scripts/bench-durable.sh      # small produce requests, many in flight
#
# The machine is shared and noisy: compare ratios, not absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-200000}"
size="${SIZE:-100}"
partitions="${PARTITIONS:-6}"
rounds="${ROUNDS:-3}"

# shellcheck source=scripts/bench-common.sh
source scripts/bench-common.sh
build_broker_and_perf
# Not /tmp: it may be a tmpfs, where fsync costs nothing.
data="$(mktemp -d "$PWD/target/bench-durable.XXXXXX")"
port=$(free_port)
target/release/ferrolog --config config/server.properties \
  --override "listeners=PLAINTEXT://127.0.0.1:$port" \
  --override "log.dirs=$data/logs" >"$data/broker.log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null; rm -rf "$data"' EXIT
wait_for_port "$port" 300 || { echo "the broker did not start" >&2; exit 1; }
bootstrap="127.0.0.1:$port"

# One produce run of configuration $1 (default or durable), round $2.
run() {
  local name="$1" round="$2" topic="bench-$1-$2" options=()
  [[ $name == durable ]] && options=(--config flush.messages=1)
  "$perf" create-topic --bootstrap "$bootstrap" --topic "$topic" \
    --partitions "$partitions" "${options[@]}" >/dev/null
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count 1000 \
    --size "$size" --partitions "$partitions" >/dev/null 2>&1
  "$perf" produce --bootstrap "$bootstrap" --topic "$topic" --count "$count" \
    --size "$size" --partitions "$partitions" --acks "${ACKS:-1}" \
    --set "linger.ms=${LINGER:-5}" 2>/dev/null | perf_summary
}

measure default durable
print_table default durable
echo "($count records of $size bytes, $partitions partitions, acks=${ACKS:-1}, linger.ms=${LINGER:-5}, median of $rounds rounds)"
