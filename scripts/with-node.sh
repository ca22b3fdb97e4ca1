#!/usr/bin/env bash
# Runs a command with a Node.js the project supports first on PATH:
#
#   bash scripts/with-node.sh node dist/cli/main.js demo
#
# The npm scripts that run ttlstream or its tests go through it, so `npm run demo` and `npm test` work whatever Node
# runs npm (Node 20 on these machines): when the `node` on PATH is older than package.json's engines major,
# scripts/ensure-node.sh installs the project's release (once, into infra/run/node) and that one is used.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want="$(sed -n 's/^ *"node": ">=\([0-9][0-9]*\)".*/\1/p' "$here/../package.json")"
[[ -n "$want" ]] || {
  echo "scripts/with-node.sh: package.json has no engines.node of the form \">=N\"" >&2
  exit 2
}
have="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((have < want)); then
  bin="$(bash "$here/ensure-node.sh")"
  export PATH="$bin:$PATH"
fi
exec "$@"
