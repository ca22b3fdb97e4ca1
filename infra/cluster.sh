#!/usr/bin/env bash
# A three-broker Kafka cluster (KRaft), as MSK runs one: three brokers and a controller of their own, replication 3
# and min.insync.replicas 2 by default. For the fault suite that kills brokers (test/integration/faults/cluster.test.ts);
# beside the lanes, on ports of its own, shared by whichever lane runs that suite.
#
#   infra/cluster.sh up | down [--purge] | status | prepare
#   infra/cluster.sh kill|stop|start <broker 1-3>       kill = SIGKILL; stop = SIGTERM and wait; start waits until the
#                                                      broker is back in the cluster's metadata
#
# Settings (environment, with defaults; the Kafka release, jars, JVM flags and host are infra/lib.sh's):
#   TTLSTREAM_CLUSTER_PORT        21090   the controller listens here, broker N on this + N (21091-21093): clear of
#                                         every lane (lane N takes 18000-18999 and 19000-19999 shifted by 100 x N)
#   TTLSTREAM_CLUSTER_HEAP        -Xms64m -Xmx256m   each broker's heap
#   TTLSTREAM_CLUSTER_CONTROLLER_HEAP  -Xms32m -Xmx128m
#   TTLSTREAM_CLUSTER_SESSION_MS  4000    broker.session.timeout.ms: how long the controller waits for a dead broker's
#                                         heartbeat before it moves its leaders (Kafka's default, MSK's too, is 9000)
# Data, logs and pid files: infra/run/cluster/ (test/support/cluster.ts reads the same variables).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER_PORT="${TTLSTREAM_CLUSTER_PORT:-21090}"
CLUSTER_HEAP="${TTLSTREAM_CLUSTER_HEAP:--Xms64m -Xmx256m}"
CLUSTER_CONTROLLER_HEAP="${TTLSTREAM_CLUSTER_CONTROLLER_HEAP:--Xms32m -Xmx128m}"
CLUSTER_SESSION_MS="${TTLSTREAM_CLUSTER_SESSION_MS:-4000}"
CLUSTER_DIR="$RUN_DIR/cluster"
CLUSTER_BROKERS=(1 2 3)
CONTROLLER_ID=100
# spawn and stop_service (lib.sh) keep their pid files and logs here.
LOG_DIR="$CLUSTER_DIR/logs"
PID_DIR="$CLUSTER_DIR/pids"
mkdir -p "$LOG_DIR" "$PID_DIR"

node_name() { if [[ "$1" == "$CONTROLLER_ID" ]]; then echo controller; else echo "broker-$1"; fi; }
node_port() { if [[ "$1" == "$CONTROLLER_ID" ]]; then echo "$CLUSTER_PORT"; else echo $((CLUSTER_PORT + $1)); fi; }
node_dir() { echo "$CLUSTER_DIR/$(node_name "$1")"; }
bootstrap() {
  local n out=()
  for n in "${CLUSTER_BROKERS[@]}"; do out+=("$STACK_HOST:$(node_port "$n")"); done
  (IFS=,; echo "${out[*]}")
}

# The node's pid when this checkout's process runs it (its properties file on the command line: a recycled pid or
# another checkout's cluster is not ours).
node_pid() {
  local f pid
  f="$PID_DIR/$(node_name "$1").pid"
  [[ -s "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$(node_dir "$1")/server.properties" || return 1
  echo "$pid"
}

write_node_config() {
  local id="$1" dir
  dir="$(node_dir "$id")"
  mkdir -p "$dir/data"
  write_kafka_log_config "$dir"
  {
    echo "# Written by infra/cluster.sh on every start; edit it there."
    echo "node.id=$id"
    echo "controller.quorum.voters=$CONTROLLER_ID@$STACK_HOST:$CLUSTER_PORT"
    echo "controller.listener.names=CONTROLLER"
    echo "log.dirs=$dir/data"
    if [[ "$id" == "$CONTROLLER_ID" ]]; then
      echo "process.roles=controller"
      echo "listeners=CONTROLLER://$STACK_HOST:$CLUSTER_PORT"
      echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT"
      # A broker whose heartbeats stop is fenced after this long and its partitions get other leaders.
      echo "broker.session.timeout.ms=$CLUSTER_SESSION_MS"
    else
      cat <<EOF
process.roles=broker
listeners=PLAINTEXT://$STACK_HOST:$(node_port "$id")
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
broker.heartbeat.interval.ms=$((CLUSTER_SESSION_MS / 4))
EOF
    fi
    # MSK's defaults for three brokers in three zones: every topic, internal ones too, three replicas, two in sync.
    cat <<EOF
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
num.partitions=3
auto.create.topics.enable=false
offsets.topic.num.partitions=10
group.initial.rebalance.delay.ms=0
# A restarted broker takes its preferred leaderships back within seconds (MSK: the same, after minutes), so the suite
# sees leaders move twice: away at the kill, back after the restart.
auto.leader.rebalance.enable=true
leader.imbalance.check.interval.seconds=5
leader.imbalance.per.broker.percentage=0
EOF
  } >"$dir/server.properties"
}

format_node() {
  local id="$1" dir
  dir="$(node_dir "$id")"
  [[ -f "$dir/data/meta.properties" ]] && return 0
  # shellcheck disable=SC2086 # STACK_JVM_FLAGS is a list of JVM flags
  java $STACK_JVM_FLAGS -Xmx128m -cp "$KAFKA_LIBS/*" "$(kafka_log_flags "$dir")" -Dkafka.logs.dir="$LOG_DIR" \
    kafka.tools.StorageTool format -t "$(cat "$CLUSTER_DIR/cluster-id")" -c "$dir/server.properties" \
    >>"$LOG_DIR/$(node_name "$id").out" 2>&1 || die "formatting $(node_name "$id")'s storage failed; see $LOG_DIR/$(node_name "$id").out"
}

start_node() {
  local id="$1" name dir heap="$CLUSTER_HEAP"
  name="$(node_name "$id")"
  dir="$(node_dir "$id")"
  [[ "$id" == "$CONTROLLER_ID" ]] && heap="$CLUSTER_CONTROLLER_HEAP"
  if node_pid "$id" >/dev/null; then
    log "$name already running (pid $(node_pid "$id"))"
    return 0
  fi
  port_open "$(node_port "$id")" && die "port $(node_port "$id") ($name) is taken by a process this checkout did not start; set TTLSTREAM_CLUSTER_PORT"
  write_node_config "$id"
  format_node "$id"
  # shellcheck disable=SC2086 # the heap and STACK_JVM_FLAGS are lists of JVM flags
  spawn "$name" "$LOG_DIR/$name.out" java $heap $STACK_JVM_FLAGS -XX:+ExitOnOutOfMemoryError \
    "$(kafka_log_flags "$dir")" -Dkafka.logs.dir="$dir" -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties"
}

# wait_cluster <count> [bootstrap]: ready once the metadata names that many brokers (a restarted one is unfenced once it
# has caught up with the metadata log). A restarted broker is asked itself: until the controller fences the killed
# process, the others still name it.
wait_cluster() {
  local rc=0
  (cd "$ROOT_DIR" && node --no-warnings "$INFRA_DIR/probe.mjs" kafka "${2:-$(bootstrap)}" --timeout-ms 120000 \
    --brokers "$1") || rc=$?
  if ((rc != 0)); then
    local n
    for n in "$CONTROLLER_ID" "${CLUSTER_BROKERS[@]}"; do
      echo "----- last 20 lines of $(node_dir "$n")/kafka-server.log -----" >&2
      tail -n 20 "$(node_dir "$n")/kafka-server.log" 2>/dev/null >&2 || true
    done
    die "the cluster has not $1 broker(s) ready at $(bootstrap) within 120 s"
  fi
}

stop_node() { # stop_node <id> TERM|KILL
  local id="$1" sig="$2" name pid
  name="$(node_name "$id")"
  pid="$(node_pid "$id")" || {
    log "$name not running (from this checkout)"
    return 0
  }
  kill -s "$sig" "$pid"
  local i
  for i in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -s KILL "$pid"
  # The port can linger a moment after the process is gone; a start right after would take it for another's.
  for i in $(seq 1 50); do
    port_open "$(node_port "$id")" || break
    sleep 0.1
  done
  rm -f "$PID_DIR/$name.pid"
  log "$name stopped (pid $pid, SIG$sig)"
}

broker_arg() {
  [[ "${1:-}" =~ ^[1-3]$ ]] || die "expected a broker number from 1 to 3, got '${1:-}'"
  echo "$1"
}

cluster_up() {
  local t0 n
  t0="$(now_ms)"
  exec 9>"$CLUSTER_DIR/up.lock"
  flock -w 300 9 || die "another infra/cluster.sh holds $CLUSTER_DIR/up.lock"
  prepare_service kafka
  [[ -s "$CLUSTER_DIR/cluster-id" ]] || new_kafka_cluster_id >"$CLUSTER_DIR/cluster-id"
  # Formatting is one short JVM per node: side by side.
  for n in "$CONTROLLER_ID" "${CLUSTER_BROKERS[@]}"; do start_node "$n" & done
  wait
  wait_cluster "${#CLUSTER_BROKERS[@]}"
  log "cluster ready in $(($(now_ms) - t0)) ms: brokers $(bootstrap), controller $STACK_HOST:$CLUSTER_PORT"
}

cluster_status() {
  local n rc=0 pid
  for n in "$CONTROLLER_ID" "${CLUSTER_BROKERS[@]}"; do
    if pid="$(node_pid "$n")"; then
      printf '%-10s up    port %-6s pid %s\n' "$(node_name "$n")" "$(node_port "$n")" "$pid"
    else
      printf '%-10s down  port %-6s pid -\n' "$(node_name "$n")" "$(node_port "$n")"
      rc=1
    fi
  done
  return "$rc"
}

mkdir -p "$CLUSTER_DIR"
action="${1:-}"
case "$action" in
  up) cluster_up ;;
  prepare) prepare_service kafka ;;
  status) cluster_status ;;
  down)
    for n in "${CLUSTER_BROKERS[@]}"; do stop_node "$n" TERM & done
    wait
    stop_node "$CONTROLLER_ID" TERM
    if [[ "${2:-}" == --purge ]]; then
      rm -rf "${CLUSTER_DIR:?}"/{controller,broker-1,broker-2,broker-3,cluster-id}
      log "purged the cluster's data"
    fi
    ;;
  kill) stop_node "$(broker_arg "${2:-}")" KILL ;;
  stop) stop_node "$(broker_arg "${2:-}")" TERM ;;
  start)
    n="$(broker_arg "${2:-}")"
    node_pid "$CONTROLLER_ID" >/dev/null || die "the cluster's controller is not running: bash infra/cluster.sh up"
    start_node "$n"
    # Every broker that runs, this one among them (another may be down on purpose).
    running=0
    for b in "${CLUSTER_BROKERS[@]}"; do node_pid "$b" >/dev/null && running=$((running + 1)); done
    wait_cluster "$running" "$STACK_HOST:$(node_port "$n")"
    ;;
  *) die "usage: infra/cluster.sh up | down [--purge] | status | prepare | kill|stop|start <broker 1-3>" ;;
esac
