#!/usr/bin/env bash
# A local ferrolog cluster for trying things out: a ZooKeeper server from
# Debian's `zookeeper` package and N brokers, each on a free 127.0.0.1 port,
# all data under one directory.
#
#   scripts/cluster.sh start [N]   start ZooKeeper and N brokers (default 3)
#   scripts/cluster.sh stop        stop the brokers (SIGTERM), then ZooKeeper
#   scripts/cluster.sh status      what runs, and the bootstrap list
#
# FERROLOG_CLUSTER_DIR (default /tmp/ferrolog-cluster) holds everything;
# FERROLOG_BIN names the broker binary (default: built with cargo --release).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FERROLOG_CLUSTER_DIR:-/tmp/ferrolog-cluster}"
zk_jar=/usr/share/java/zookeeper.jar

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {
  for _ in $(seq 1 300); do
    if python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$1)))"; then
      return 0
    fi
    sleep 0.1
  done
  echo "nothing listens on port $1 after 30 s" >&2
  return 1
}

status() {
  [ -f "$dir/bootstrap" ] || { echo "no cluster in $dir"; return 1; }
  for pidfile in "$dir"/*.pid; do
    name=$(basename "$pidfile" .pid)
    if kill -0 "$(cat "$pidfile")" 2>/dev/null; then echo "$name: running"; else echo "$name: stopped"; fi
  done
  echo "bootstrap: $(cat "$dir/bootstrap")"
  echo "znodes:    /usr/share/zookeeper/bin/zkCli.sh -server $(cat "$dir/zookeeper") ls -R /ferrolog"
}

start() {
  local count="${1:-3}"
  [ -f "$zk_jar" ] || { echo "ZooKeeper is missing: apt-get install zookeeper" >&2; exit 1; }
  if [ -f "$dir/bootstrap" ]; then
    echo "a cluster already lives in $dir; run '$0 stop' first" >&2
    exit 1
  fi
  local bin="${FERROLOG_BIN:-}"
  if [ -z "$bin" ]; then
    cargo build --release --quiet
    bin=target/release/ferrolog
  fi
  mkdir -p "$dir/zookeeper-data"
  local zk_port
  zk_port=$(free_port)
  cat > "$dir/zoo.cfg" <<CFG
tickTime=2000
dataDir=$dir/zookeeper-data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
CFG
  java -cp "/etc/zookeeper/conf:$zk_jar" org.apache.zookeeper.server.quorum.QuorumPeerMain \
    "$dir/zoo.cfg" > "$dir/zookeeper.log" 2>&1 &
  echo $! > "$dir/zookeeper.pid"
  echo "127.0.0.1:$zk_port" > "$dir/zookeeper"
  wait_port "$zk_port"
  local bootstrap=""
  for id in $(seq 0 $((count - 1))); do
    local port
    port=$(free_port)
    mkdir -p "$dir/broker-$id"
    "$bin" --config config/server.properties \
      --override "broker.id=$id" \
      --override "listeners=PLAINTEXT://127.0.0.1:$port" \
      --override "http.listener=http://127.0.0.1:$(free_port)" \
      --override "log.dirs=$dir/broker-$id" \
      --override "zookeeper.connect=127.0.0.1:$zk_port/ferrolog" \
      > "$dir/broker-$id.log" 2>&1 &
    echo $! > "$dir/broker-$id.pid"
    wait_port "$port"
    bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:$port"
  done
  echo "$bootstrap" > "$dir/bootstrap"
  status
}

stop() {
  [ -d "$dir" ] || { echo "no cluster in $dir"; return 0; }
  for pidfile in "$dir"/broker-*.pid; do
    [ -f "$pidfile" ] || continue
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
  done
  for pidfile in "$dir"/broker-*.pid; do
    [ -f "$pidfile" ] || continue
    for _ in $(seq 1 300); do
      kill -0 "$(cat "$pidfile")" 2>/dev/null || break
      sleep 0.1
    done
    rm -f "$pidfile"
  done
  if [ -f "$dir/zookeeper.pid" ]; then
    kill -TERM "$(cat "$dir/zookeeper.pid")" 2>/dev/null || true
    rm -f "$dir/zookeeper.pid"
  fi
  rm -f "$dir/bootstrap"
  echo "stopped; data kept in $dir"
}

case "${1:-}" in
  start) start "${2:-3}" ;;
  stop) stop ;;
  status) status ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
