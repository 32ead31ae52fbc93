# Shared by the benchmark scripts (sourced, not run). For `measure`, the
# caller defines `run NAME ROUND`, which prints one line
# "records_per_sec p50_ms p99_ms", and sets `rounds`.

# Builds the release broker and the perf client; sets $perf.
build_broker_and_perf() {
  cargo build --release --quiet --bin ferrolog --example perf
  perf=target/release/examples/perf
}

# A free port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to $2 tenths of a second for 127.0.0.1:$1 to accept a connection.
wait_for_port() {
  for _ in $(seq 1 "$2"); do
    python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1)))" && return 0
    sleep 0.1
  done
  return 1
}

# perf's result line on stdin -> "records_per_sec p50_ms p99_ms".
perf_summary() {
  python3 -c '
import sys
fields = dict(kv.split("=") for kv in sys.stdin.read().split())
print(fields["records_per_sec"], fields.get("latency_p50_ms", "nan"), fields.get("latency_p99_ms", "nan"))'
}

median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

declare -A rate p50 p99

# Runs each named configuration `rounds` times; keeps the medians.
measure() {
  local name round r l50 l99
  for name in "$@"; do
    local rates=() p50s=() p99s=()
    for round in $(seq 1 "$rounds"); do
      read -r r l50 l99 < <(run "$name" "$round")
      rates+=("$r") p50s+=("$l50") p99s+=("$l99")
    done
    rate[$name]=$(median "${rates[@]}")
    p50[$name]=$(median "${p50s[@]}")
    p99[$name]=$(median "${p99s[@]}")
  done
}

# The medians as a table, each rate also as a ratio to the first's.
print_table() {
  local base="${rate[$1]}" name ratio
  printf '%-14s %14s %8s %10s %10s\n' config records/s ratio p50_ms p99_ms
  for name in "$@"; do
    ratio=$(python3 -c "print(f'{${rate[$name]} / $base:.2f}')")
    printf '%-14s %14.0f %8s %10s %10s\n' "$name" "${rate[$name]}" "$ratio" \
      "${p50[$name]}" "${p99[$name]}"
  done
}
