#!/usr/bin/env bash
# Benchmarks against the local stack: `bash bench/run.sh [name ...|all] [[--] args for each]`,
# e.g. `bash bench/run.sh pipeline --items 50000` (see bench/README.md).
# Each bench/<name>.ts measures a ttlstream rate beside the raw limit of the same run and prints a
# table and one JSON line. Without names, every bench/*.ts runs. Needs `npm run infra:up` first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

names=()
args=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == "--" ]]; then
    shift
    args=("$@")
    break
  fi
  # `bash bench/run.sh pipeline --items 50000`: options may follow the names without `--` (names never start with -).
  if [[ "$1" == -* ]]; then
    args=("$@")
    break
  fi
  # `all` is the same as no names.
  [[ "$1" == all ]] || names+=("$1")
  shift
done
if [[ ${#names[@]} -eq 0 ]]; then
  for f in bench/*.ts; do names+=("$(basename "$f" .ts)"); done
fi

# The benchmarks run against the local stack: its endpoints file is read only when named (core/config.ts). On lane N
# (TTLSTREAM_STACK_LANE, infra/lib.sh) that is the lane's own endpoints file, and bench/proc-cpu.ts reads the lane's
# pid files, so a benchmark on its own lane measures its own servers.
lane="${TTLSTREAM_STACK_LANE:-0}"
default_state=".ttlstream"
[[ "$lane" == 0 ]] || default_state=".ttlstream/lane-$lane"
export TTLSTREAM_LOCAL_STACK="${TTLSTREAM_LOCAL_STACK:-${TTLSTREAM_STATE_DIR:-$default_state}}"

status=0
for name in "${names[@]}"; do
  if [[ ! -f "bench/$name.ts" ]]; then
    echo "bench: no benchmark named '$name' (have: $(ls bench/*.ts | xargs -n1 basename | sed 's/\.ts$//' | tr '\n' ' '))" >&2
    exit 2
  fi
  echo "== bench/$name"
  # --import tsx: run the TypeScript directly, in this process (no wrapper process).
  node --import tsx "bench/$name.ts" "${args[@]+"${args[@]}"}" || status=$?
done
exit "$status"
