#!/usr/bin/env bash
# Makes the project's Node.js release available and prints the directory of its `node` binary:
#
#   export PATH="$(bash scripts/ensure-node.sh):$PATH"     # then node, npm ci, build and tests run on it
#
# If `node` on PATH already is that release, prints its directory and installs nothing. Otherwise installs the
# official binary from the npm registry's `node-<os>-<arch>` package (npm pack, which checks the registry's
# integrity hash) into infra/run/node/<version>/ (gitignored), once per version, and checks that it runs.
# Only an existing npm is needed: it runs on whichever node comes first on PATH, 20 included.
#
# Settings: TTLSTREAM_NODE_VERSION (default below), TTLSTREAM_STACK_RUN_DIR (default infra/run).
set -euo pipefail

# Node 24 LTS. Bump together with `engines` in package.json and @types/node's major.
NODE_VERSION="${TTLSTREAM_NODE_VERSION:-24.22.3}"
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${TTLSTREAM_STACK_RUN_DIR:-$ROOT_DIR/infra/run}"
DEST="$RUN_DIR/node/$NODE_VERSION"

say() { printf '[ensure-node] %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

[[ "$NODE_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "TTLSTREAM_NODE_VERSION=$NODE_VERSION is not x.y.z"

if command -v node >/dev/null && [[ "$(node --version 2>/dev/null)" == "v$NODE_VERSION" ]]; then
  dirname "$(command -v node)"
  exit 0
fi
if [[ -x "$DEST/bin/node" && "$("$DEST/bin/node" --version 2>/dev/null)" == "v$NODE_VERSION" ]]; then
  echo "$DEST/bin"
  exit 0
fi

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die "no node-<os>-<arch> package for $(uname -s); install Node $NODE_VERSION yourself" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no node-$os-<arch> package for $(uname -m); install Node $NODE_VERSION yourself" ;;
esac
pkg="node-$os-$arch@$NODE_VERSION"
command -v npm >/dev/null || die "npm is needed to fetch $pkg"

say "installing Node $NODE_VERSION ($pkg) into $DEST"
mkdir -p "$RUN_DIR/node"
# Unpacked beside the destination and moved in one step: an interrupted run leaves no half-installed node behind.
tmp="$(mktemp -d "$RUN_DIR/node/.tmp-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
tgz="$(cd "$tmp" && npm pack --silent --pack-destination "$tmp" "$pkg" | tail -n 1)"
[[ -f "$tmp/$tgz" ]] || die "npm pack $pkg produced no tarball"
mkdir "$tmp/unpacked"
tar -xzf "$tmp/$tgz" -C "$tmp/unpacked" --strip-components=1
got="$("$tmp/unpacked/bin/node" --version 2>/dev/null || true)"
[[ "$got" == "v$NODE_VERSION" ]] || die "the unpacked binary reports '${got:-nothing}', expected v$NODE_VERSION"
rm -rf "$DEST"
mv "$tmp/unpacked" "$DEST"
say "Node $NODE_VERSION ready: $DEST/bin/node"
echo "$DEST/bin"
