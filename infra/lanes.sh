#!/usr/bin/env bash
# Several stacks side by side (infra/lib.sh TTLSTREAM_STACK_LANE), as the integration tests use them: one per jest
# worker.
#   infra/lanes.sh up [N]       bring up lanes 0..N-1 together (N: the tests' stack count, test/jest/stacks.cjs)
#   infra/lanes.sh down [--purge]  stop every lane this checkout started (lane 0 and each infra/run/lane-N)
#   infra/lanes.sh status [N]   infra/status.sh for each lane; exit 1 if any service is down
# Each lane's output is prefixed with its number.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ "${TTLSTREAM_STACK_LANE:-0}" == 0 ]] || die "infra/lanes.sh manages every lane: unset TTLSTREAM_STACK_LANE"

test_stacks() { (cd "$ROOT_DIR" && node -e "process.stdout.write(String(require('./test/jest/stacks.cjs').testStacks()))"); }

# Lanes this checkout has data for: 0 and every lane-N folder.
known_lanes() {
  echo 0
  local d
  for d in "$RUN_DIR"/lane-[1-9]; do
    [[ -d "$d" ]] && echo "${d##*lane-}"
  done
}

# each_lane <script> <lanes...> -- <args...>: runs infra/<script> for every lane at once; fails if any failed.
each_lane() {
  local script="$1" lane pids=() failed=0
  shift
  local lanes=()
  while [[ "$1" != -- ]]; do
    lanes+=("$1")
    shift
  done
  shift
  for lane in "${lanes[@]}"; do
    TTLSTREAM_STACK_LANE="$lane" bash "$INFRA_DIR/$script" "$@" 2>&1 | sed -u "s/^/[lane $lane] /" &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do
    wait "$p" || failed=1
  done
  return "$failed"
}

action="${1:-}"
shift || true
case "$action" in
  up | status)
    n="${1:-$(test_stacks)}"
    [[ "$n" =~ ^[1-9][0-9]?$ && "$n" -le 10 ]] || die "lane count '$n': expected 1 to 10"
    script=up.sh
    [[ "$action" == status ]] && script=status.sh
    # shellcheck disable=SC2046 # one word per lane number
    each_lane "$script" $(seq 0 $((n - 1))) --
    ;;
  down)
    # shellcheck disable=SC2046
    each_lane down.sh $(known_lanes) -- "$@"
    ;;
  *) die "usage: infra/lanes.sh up [N] | down [--purge] | status [N]" ;;
esac
