#!/usr/bin/env bash
# Installs the control plane's contract tools into a venv of their own (infra/run/api-tools):
#
#   bash scripts/ensure-api-tools.sh
#
# - openapi-spec-validator: checks docs/openapi.json against the OpenAPI 3.1 specification (`npm run lint`);
# - schemathesis: fuzzes a live `ttlstream run --roles api` from that document (test/integration/control/schemathesis).
#
# Idempotent: installs nothing when both are there at the pinned versions. Needs Python 3 with venv (as the local
# stack's S3 server does). The venv is made once per machine in ~/.cache/ttlstream (TTLSTREAM_STACK_CACHE_DIR), named
# by the versions and the Python, and linked from infra/run, as scripts/ensure-deploy-tools.sh does: a fresh clone
# (CI) links it instead of spending a minute of CPU on pip. Concurrent runs (CI's background set-up and the lint
# beside it) wait for one another on a lock, so the venv is built once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV="${TTLSTREAM_STACK_RUN_DIR:-infra/run}/api-tools"
SCHEMATHESIS_VERSION=4.32.5
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0

say() { printf '[ensure-api-tools] %s\n' "$*" >&2; }

installed() {
  [[ -x "$VENV/bin/schemathesis" && -x "$VENV/bin/openapi-spec-validator" ]] &&
    [[ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"), m.version("openapi-spec-validator"))' 2>/dev/null)" == "$SCHEMATHESIS_VERSION $OPENAPI_SPEC_VALIDATOR_VERSION" ]]
}

if installed; then
  say "schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION are installed in $VENV"
  exit 0
fi

CACHE="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
python_tag="py$(python3 -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])' | sha256sum | cut -c1-8)"
ENTRY="$CACHE/api-tools-$SCHEMATHESIS_VERSION-$OPENAPI_SPEC_VALIDATOR_VERSION-$python_tag"
mkdir -p "$CACHE" "$(dirname "$VENV")"
(
  exec 7>"$ENTRY.lock"
  flock -w 900 7 || {
    say "ERROR: another install into $ENTRY has been running for more than 900 s"
    exit 1
  }
  [[ -f "$ENTRY/.complete" ]] && exit 0
  say "installing schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION into $ENTRY"
  rm -rf "$ENTRY"
  python3 -m venv "$ENTRY"
  "$ENTRY/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION"
  touch "$ENTRY/.complete"
)
if [[ ! -L "$VENV" || "$(readlink "$VENV")" != "$ENTRY" ]]; then
  rm -rf "$VENV"
  ln -s "$ENTRY" "$VENV"
fi
installed || {
  say "ERROR: $VENV does not hold schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION"
  exit 1
}
