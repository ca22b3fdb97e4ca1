#!/usr/bin/env bash
# Bring up the local stack: Kafka 3.9.1 (KRaft, one node), dynalite (DynamoDB API) and moto (S3).
# Idempotent: starts only what is not already running, then waits until every service answers a
# real request, and writes the endpoints to .ttlstream/endpoints.json (read by core/config.ts).
# Ports and paths are set by environment variables documented at the top of infra/lib.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

started_at="$(now_ms)"
# Two test runs (or engineers) may call this at once: one at a time, the second finds all up.
exec 9>"$RUN_DIR/up.lock"
flock -w 300 9 || die "another infra/up.sh holds $RUN_DIR/up.lock for more than 300 s"
to_start=()
for svc in "${SERVICES[@]}"; do
  port="$(service_port "$svc")"
  if pid="$(service_pid "$svc")"; then
    log "$svc already running (pid $pid, port $port)"
  elif port_open "$port"; then
    # Something else holds the port: accept it only if it is the right kind of server.
    if probe "$svc" 3000; then
      log "$svc already served on port $port by a process this checkout did not start; leaving it alone"
    else
      die "port $port is taken by a process that is not a working $svc; free it or set TTLSTREAM_STACK_$(echo "$svc" | tr '[:lower:]' '[:upper:]')_PORT"
    fi
  else
    to_start+=("$svc")
  fi
done
if [[ "${to_start[*]}" == *kafka* ]] && port_open "$KAFKA_CONTROLLER_PORT"; then
  die "Kafka controller port $KAFKA_CONTROLLER_PORT is taken; set TTLSTREAM_STACK_KAFKA_CONTROLLER_PORT"
fi

# Fetching jars and building the venv are the slow parts of a cold start: do them side by side.
prep_pids=()
for svc in "${to_start[@]}"; do
  prepare_service "$svc" &
  prep_pids+=("$!")
done
for p in "${prep_pids[@]}"; do
  wait "$p" || die "preparation failed (see messages above)"
done

for svc in "${to_start[@]}"; do
  log "starting $svc on port $(service_port "$svc")"
  start_service "$svc"
done

wait_pids=()
for svc in "${SERVICES[@]}"; do
  wait_ready "$svc" "$(ready_timeout "$svc")" &
  wait_pids+=("$!")
done
failed=0
for p in "${wait_pids[@]}"; do
  wait "$p" || failed=1
done
((failed == 0)) || die "the stack is not fully up (services that did start keep running; stop them with npm run infra:down)"

file="$(write_endpoints)"
log "stack ready in $(( ($(now_ms) - started_at) )) ms; endpoints written to $file"
cat "$file"
