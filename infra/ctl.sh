#!/usr/bin/env bash
# Control one service of the local stack, for fault-injection tests and by hand:
#   infra/ctl.sh stop|start|restart|kill|prepare <kafka|dynamodb|s3|toxiproxy|registry|moto>
# stop = SIGTERM and wait; kill = SIGKILL (a crash); start waits until the service answers;
# restart = stop + start; prepare = only fetch what the service needs (Kafka jars, the Node release dynalite runs on, moto's venv (s3, moto), the Toxiproxy build, the registry build and its consumers' venv). Data survives (Kafka and dynalite keep it on disk; see infra/README.md for S3), except the registry's schemas (in memory).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { die "usage: infra/ctl.sh stop|start|restart|kill|prepare <kafka|dynamodb|s3|toxiproxy|registry|moto>"; }
[[ $# -eq 2 ]] || usage
action="$1"
svc="$2"
service_port "$svc" >/dev/null
# Preparing only fetches or builds what lanes share, under its own locks (prepare_service, one_at_a_time): it does
# not hold the stack's lock, so .ci/run can prepare several services side by side.
if [[ "$action" == prepare ]]; then
  prepare_service "$svc"
  exit 0
fi
exec 9>"$DATA_DIR/up.lock"
flock -w 300 9 || die "another infra script holds $DATA_DIR/up.lock for more than 300 s"

do_start() {
  if pid="$(service_pid "$svc")"; then
    log "$svc already running (pid $pid)"
  else
    port_open "$(service_port "$svc")" && die "port $(service_port "$svc") is taken by a process this checkout did not start"
    prepare_service "$svc"
    start_service "$svc"
  fi
  wait_ready "$svc" "$(ready_timeout "$svc")"
  log "$svc ready at $(service_endpoint "$svc")"
}

# A silent no-op would let a fault-injection test pass without any fault: refuse instead.
require_ours() {
  if ! service_pid "$svc" >/dev/null && port_open "$(service_port "$svc")"; then
    die "$svc on port $(service_port "$svc") was not started by this checkout ($ROOT_DIR); cannot $action it"
  fi
}

case "$action" in
  stop)
    require_ours
    stop_service "$svc" TERM
    ;;
  kill)
    require_ours
    stop_service "$svc" KILL
    ;;
  start) do_start ;;
  restart)
    require_ours
    stop_service "$svc" TERM
    do_start
    ;;
  *) usage ;;
esac
