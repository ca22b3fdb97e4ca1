#!/usr/bin/env bash
# Builds the container image from the Dockerfile with podman (scripts/podman.sh) and prints its name and size:
#
#   bash scripts/build-image.sh            # -> localhost/ttlstream:<version>
#
# The base is the stand-in of scripts/ensure-base-image.sh (no image registry can be reached here), or
# TTLSTREAM_IMAGE_BASE (e.g. the official node:24.22.3-slim where it can be pulled). npm inside the build gets this
# machine's registry settings as build secrets, never in a layer: the CA bundle npm trusts (`npm config get cafile`,
# else NODE_EXTRA_CA_CERTS) and npm's user config file (`npm config get userconfig`), each when it exists.
# The deploy suite (test/integration/deploy/containers.test.ts) runs the image; .ci/run builds it in its background
# set-up and writes its size to the log.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$(node -p 'require("./package.json").version')"
IMAGE="${TTLSTREAM_IMAGE:-localhost/ttlstream:$version}"
say() { printf '[build-image] %s\n' "$*" >&2; }

base="${TTLSTREAM_IMAGE_BASE:-$(bash scripts/ensure-base-image.sh)}"
secrets=()
# npm's cafile, else the bundle Node is told to trust (NODE_EXTRA_CA_CERTS: how npm on the project's Node 24 trusts
# the proxy here, the machine's global npmrc being the system Node's).
ca="$(npm config get cafile 2>/dev/null || true)"
[[ -n "$ca" && "$ca" != null && -f "$ca" ]] || ca="${NODE_EXTRA_CA_CERTS:-}"
[[ -n "$ca" && -f "$ca" ]] && secrets+=(--secret "id=ca,src=$ca")
user_config="$(npm config get userconfig 2>/dev/null || true)"
[[ -f "$user_config" ]] && secrets+=(--secret "id=npmrc,src=$user_config")

# The digest of what the build reads: the base image and every file of the build context (the checkout's files but
# those .dockerignore leaves out). An image labelled with it is up to date: nothing is rebuilt, in about a second.
context_digest() {
  local pathspecs=(.) pattern
  while IFS= read -r pattern; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    pathspecs+=(":(exclude,glob)$pattern" ":(exclude,glob)$pattern/**")
  done <.dockerignore
  {
    bash scripts/podman.sh image inspect --format '{{.Id}}' "$base"
    git ls-files -z --cached --others --exclude-standard -- "${pathspecs[@]}" | sort -z |
      while IFS= read -r -d '' f; do [[ -f "$f" ]] && printf '%s  %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$f"; done
  } | sha256sum | cut -c1-64
}

LABEL=io.ttlstream.context-digest
digest=""
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && digest="$(context_digest)"
if [[ -n "$digest" ]] &&
  [[ "$(bash scripts/podman.sh image inspect --format "{{index .Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null)" == "$digest" ]]; then
  say "$IMAGE is up to date (context $digest)"
  echo "$IMAGE"
  exit 0
fi

t0=$(date +%s)
say "building $IMAGE over $base"
# --format docker: the OCI format has no HEALTHCHECK, and the Dockerfile's must reach the image.
# --layers=false: on vfs every cached step is a full copy of the file system (14 steps: 3.5 min and 6 GB even when
# all were cached); one commit per stage takes 45 s, and the digest above stands in for the step cache.
bash scripts/podman.sh build --quiet --layers=false --format docker --network host --pull=never \
  --build-arg "BASE_IMAGE=$base" "${secrets[@]}" --label "$LABEL=${digest:-none}" --tag "$IMAGE" . >/dev/null
size="$(bash scripts/podman.sh image inspect --format '{{.Size}}' "$IMAGE")"
say "built $IMAGE in $(($(date +%s) - t0)) s: $((size / 1048576)) MiB"
echo "$IMAGE"
