#!/usr/bin/env bash
# podman with the settings that work on these machines (docs/decisions/0027-image-in-ci.md):
#
#   bash scripts/podman.sh images
#
# vfs storage (no overlay mount in the sandbox), runc (crun refuses the hybrid cgroup layout), cgroupfs (no systemd),
# and infra/podman/containers.conf (no default ulimits). Containers use the host's network (no bridge networking
# here): pass --network host to run and build. TTLSTREAM_PODMAN_FLAGS replaces the global flags on another machine.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/../infra/podman/containers.conf}"
# shellcheck disable=SC2206 # the flags are words by design
flags=(${TTLSTREAM_PODMAN_FLAGS:---storage-driver vfs --runtime runc --cgroup-manager cgroupfs})
exec podman "${flags[@]}" "$@"
