#!/usr/bin/env bash
# Bring up the local stack: Kafka 4.4.0 (KRaft, one node; TTLSTREAM_STACK_KAFKA_VERSION selects another), dynalite (DynamoDB API), moto (S3), Toxiproxy
# (network faults between the pipeline and Kafka or DynamoDB, for tests) and Apicurio Registry (a Confluent-compatible
# schema registry, in memory).
# Idempotent: starts only what is not already running, then waits until every service answers a
# real request, and writes the endpoints to .ttlstream/endpoints.json (read by core/config.ts).
# Ports and paths are set by environment variables documented at the top of infra/lib.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

started_at="$(now_ms)"
# Two test runs (or engineers) may call this at once: one at a time, the second finds all up.
exec 9>"$DATA_DIR/up.lock"
flock -w 300 9 || die "another infra/up.sh holds $DATA_DIR/up.lock for more than 300 s"
to_start=()
for svc in "${SERVICES[@]}"; do
  port="$(service_port "$svc")"
  if pid="$(service_pid "$svc")"; then
    log "$svc already running (pid $pid, port $port)"
    # Tests would silently run against another release than the one asked for.
    if [[ "$svc" == kafka && "$(running_kafka_version)" != "$KAFKA_VERSION" ]]; then
      die "Kafka ${KAFKA_VERSION} was asked for (TTLSTREAM_STACK_KAFKA_VERSION), but this checkout runs $(running_kafka_version || true) (pid $pid): bash infra/ctl.sh stop kafka first"
    fi
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
if [[ "${to_start[*]}" == *kafka* ]]; then
  port_open "$KAFKA_CONTROLLER_PORT" && die "Kafka controller port $KAFKA_CONTROLLER_PORT is taken; set TTLSTREAM_STACK_KAFKA_CONTROLLER_PORT"
  port_open "$KAFKA_PROXIED_PORT" && die "Kafka PROXIED listener port $KAFKA_PROXIED_PORT is taken; set TTLSTREAM_STACK_KAFKA_PROXIED_PORT"
  port_open "$KAFKA_SCRAM_PORT" && die "Kafka SASL_SCRAM listener port $KAFKA_SCRAM_PORT is taken; set TTLSTREAM_STACK_KAFKA_SCRAM_PORT"
  port_open "$KAFKA_MTLS_PORT" && die "Kafka MTLS listener port $KAFKA_MTLS_PORT is taken; set TTLSTREAM_STACK_KAFKA_MTLS_PORT"
  port_open "$KAFKA_OAUTH_PORT" && die "Kafka SASL_OAUTH listener port $KAFKA_OAUTH_PORT is taken; set TTLSTREAM_STACK_KAFKA_OAUTH_PORT"
fi
if [[ "${to_start[*]}" == *toxiproxy* ]]; then
  port_open "$TOXIPROXY_KAFKA_PORT" && die "Toxiproxy's kafka proxy port $TOXIPROXY_KAFKA_PORT is taken; set TTLSTREAM_STACK_TOXIPROXY_KAFKA_PORT"
  port_open "$TOXIPROXY_DYNAMODB_PORT" && die "Toxiproxy's dynamodb proxy port $TOXIPROXY_DYNAMODB_PORT is taken; set TTLSTREAM_STACK_TOXIPROXY_DYNAMODB_PORT"
fi

# Fetching jars, building and making venvs are the slow parts of a cold start: side by side, and each service starts
# as soon as its own preparation is done, so Kafka (the slowest to become ready) does not wait for the moto venv.
start_pids=()
for svc in "${to_start[@]}"; do
  {
    prepare_service "$svc" || exit 1
    log "starting $svc on port $(service_port "$svc")"
    start_service "$svc"
  } &
  start_pids+=("$!")
done
start_failed=0
for p in "${start_pids[@]}"; do
  wait "$p" || start_failed=1
done
((start_failed == 0)) || die "a preparation or start failed (see messages above; services that did start keep running)"

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
# A broker started by an older checkout has no PROXIED listener: everything works but the network-fault tests.
if port_open "$KAFKA_SCRAM_PORT"; then
  ensure_scram_user
else
  log "WARNING: Kafka has no SASL_SCRAM/MTLS/SASL_OAUTH listeners (started before they were configured?); test/integration/security needs them: bash infra/ctl.sh restart kafka"
fi
port_open "$KAFKA_PROXIED_PORT" ||
  log "WARNING: Kafka has no PROXIED listener on port $KAFKA_PROXIED_PORT (started before it was configured?); the network-fault tests need it: bash infra/ctl.sh restart kafka"

file="$(write_endpoints)"
log "stack ready in $(( ($(now_ms) - started_at) )) ms; endpoints written to $file"
cat "$file"
log "commands use it only when told: export TTLSTREAM_LOCAL_STACK=$(dirname "$file") (or ttlstream --local-stack $(dirname "$file") ...); npm test and npm run demo do so themselves"
