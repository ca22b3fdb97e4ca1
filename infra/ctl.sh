#!/usr/bin/env bash
# Control one service of the local stack, for fault-injection tests and by hand:
#   infra/ctl.sh stop|start|restart|kill <kafka|dynamodb|s3>
# stop = SIGTERM and wait; kill = SIGKILL (a crash); start waits until the service answers;
# restart = stop + start. Data survives (Kafka and dynalite keep it on disk; see infra/README.md for S3).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { die "usage: infra/ctl.sh stop|start|restart|kill <kafka|dynamodb|s3>"; }
[[ $# -eq 2 ]] || usage
action="$1"
svc="$2"
service_port "$svc" >/dev/null

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

case "$action" in
  stop) stop_service "$svc" TERM ;;
  kill) stop_service "$svc" KILL ;;
  start) do_start ;;
  restart)
    stop_service "$svc" TERM
    do_start
    ;;
  *) usage ;;
esac
