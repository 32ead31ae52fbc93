#!/usr/bin/env bash
# How long a coordinator takes to load __consumer_offsets at start-up, before
# and after the log cleaner compacted it: GROUP_COUNT groups commit every one of
# PARTITIONS partitions ROUNDS times (100 x 100 x 100 = 1,000,000 commits by
# default) into one offsets partition; the broker is restarted LOADS times
# with the cleaner off and the load times (the coordinator's "loaded ... in N
# ms" line) recorded; then the cleaner compacts the partition and the
# restarts are measured again. Medians are printed with their ratio.
#
#   scripts/bench-offsets-load.sh
#   GROUP_COUNT=10 ROUNDS=10 SEGMENT_BYTES=102400 scripts/bench-offsets-load.sh    # a quick run
#
# Only whole segments are compacted: SEGMENT_BYTES (offsets.topic.segment.bytes,
# 10 MiB by default) must be well under what the commits write.
#
# The machine is shared and noisy: compare the ratio, not absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
groups="${GROUP_COUNT:-100}"
partitions="${PARTITIONS:-100}"
rounds="${ROUNDS:-100}"
loads="${LOADS:-3}"
segment_bytes="${SEGMENT_BYTES:-10485760}"

# shellcheck source=scripts/bench-common.sh
source scripts/bench-common.sh
build_broker_and_perf
data="$(mktemp -d "$PWD/target/bench-offsets.XXXXXX")"
port=$(free_port)
bootstrap="127.0.0.1:$port"
broker=""
trap '[ -n "$broker" ] && kill $broker 2>/dev/null; wait 2>/dev/null; rm -rf "$data"' EXIT

# start LOGFILE OVERRIDES...: a broker on $data/logs, waiting for its port.
start() {
  local logfile=$1; shift
  local args=()
  for o in "$@"; do args+=(--override "$o"); done
  target/release/ferrolog --config config/server.properties \
    --override "listeners=PLAINTEXT://$bootstrap" \
    --override "log.dirs=$data/logs" \
    --override offsets.topic.num.partitions=1 \
    --override "offsets.topic.segment.bytes=$segment_bytes" \
    "${args[@]}" >"$logfile" 2>&1 &
  broker=$!
  wait_for_port "$port" 600 && return
  echo "the broker did not start: $(tail -5 "$logfile")" >&2
  exit 1
}

stop() { kill -TERM "$broker"; wait "$broker" || true; broker=""; }

# wait_line LOGFILE TEXT SECONDS
wait_line() {
  for _ in $(seq 1 $(($3 * 10))); do
    grep -q "$2" "$1" && return
    sleep 0.1
  done
  echo "no '$2' in $1 after $3 s" >&2
  exit 1
}

# Load times (ms) of LOADS restarts with the cleaner off.
measure_loads() {
  local times=()
  for i in $(seq 1 "$loads"); do
    start "$data/load-$1-$i.log" log.cleaner.enable=false
    wait_line "$data/load-$1-$i.log" "loaded .* from __consumer_offsets-0" 600
    times+=("$(grep -o 'loaded .* from __consumer_offsets-0.*' "$data/load-$1-$i.log" | sed -E 's/.* in ([0-9]+) ms.*/\1/')")
    grep -o 'loaded .* from __consumer_offsets-0.*' "$data/load-$1-$i.log" >&2
    stop
  done
  median "${times[@]}"
}

start "$data/fill.log" log.cleaner.enable=false
$perf create-topic --bootstrap "$bootstrap" --topic commits --partitions "$partitions" >/dev/null
echo "committing $((groups * partitions * rounds)) offsets..." >&2
$perf commit-offsets --bootstrap "$bootstrap" --topic commits --groups "$groups" --rounds "$rounds" >&2
stop
size_before=$(du -sb "$data/logs/__consumer_offsets-0" | cut -f1)
before=$(measure_loads before)

start "$data/clean.log" log.cleaner.enable=true log.cleaner.backoff.ms=500
wait_line "$data/clean.log" "log cleaner: cleaned __consumer_offsets-0" 600
grep -o 'log cleaner: cleaned __consumer_offsets-0.*' "$data/clean.log" >&2
sleep 2
stop
size_after=$(du -sb "$data/logs/__consumer_offsets-0" | cut -f1)
after=$(measure_loads after)

printf '%-18s %12s %14s\n' "" "load_ms" "bytes_on_disk"
printf '%-18s %12s %14s\n' "before_compaction" "$before" "$size_before"
printf '%-18s %12s %14s\n' "after_compaction" "$after" "$size_after"
python3 -c "import sys; print('after/before: %.3f' % (float(sys.argv[2]) / max(float(sys.argv[1]), 1e-9)))" "$before" "$after"
