#!/usr/bin/env bash
# Stop the services this checkout started (found by their pid files).
#   --purge   also delete their data (Kafka log dirs, dynalite's LevelDB store, the S3 state file) and the endpoints file
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    *) die "unknown option $arg (usage: infra/down.sh [--purge])" ;;
  esac
done

for svc in "${SERVICES[@]}"; do
  if pid="$(service_pid "$svc")"; then
    stop_service "$svc" &
  else
    rm -f "$(pid_file "$svc")"
    log "$svc not running (from this checkout)"
  fi
done
wait

if ((purge == 1)); then
  rm -rf "$KAFKA_DIR" "$DYNAMODB_DATA" "$S3_DATA" "$STATE_DIR/endpoints.json"
  log "purged Kafka, DynamoDB and S3 data and the endpoints file (jars, venvs, the Toxiproxy and registry builds kept; the registry keeps nothing)"
fi
