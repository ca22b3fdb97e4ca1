#!/usr/bin/env bash
# One line per service: up/down, port, pid. Exit 0 when all are up, 1 otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

all_up=0
for svc in "${SERVICES[@]}"; do
  port="$(service_port "$svc")"
  if pid="$(service_pid "$svc")"; then
    if port_open "$port"; then state=up; else state="starting"; all_up=1; fi
    printf '%-9s %-9s port %-6s pid %s\n' "$svc" "$state" "$port" "$pid"
  elif port_open "$port"; then
    printf '%-9s %-9s port %-6s pid -  (not started by this checkout)\n' "$svc" up "$port"
  else
    printf '%-9s %-9s port %-6s pid -\n' "$svc" down "$port"
    all_up=1
  fi
done
exit "$all_up"
